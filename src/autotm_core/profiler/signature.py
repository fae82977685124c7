"""A kernel's signature: what decides its run time, without its name, hashed stably.

Two kernels with the same signature do the same work on tensors of the same
sizes, so one measurement serves both (``sgd_b0`` and ``sgd_b1`` of equal
bias sizes, the repeated blocks of a ResNet). The signature holds the op kind,
each tensor the kernel touches (in ``Kernel.tensors`` order: inputs first, each
once) with its size, shape, dtype and whether it is read, written or both, the
FLOPs the replay kernel computes for, and the workspace bytes. Tensor and
kernel names are left out on purpose.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.ir import Graph


def _access(read: bool, written: bool) -> str:
    return ("r" if read else "") + ("w" if written else "")


@attrs.frozen(slots=True)
class TensorSignature:
    """One tensor as a kernel sees it."""

    nbytes: int
    """Size of its storage in bytes."""
    shape: tuple[int, ...] | None
    """Logical shape, when known."""
    dtype: str | None
    """Element type, when known."""
    access: str
    """``"r"`` (read), ``"w"`` (written) or ``"rw"`` (updated in place)."""


@attrs.frozen(slots=True)
class KernelSignature:
    """Everything a kernel's run time depends on, for the profiler."""

    op: str
    """Operation kind, as the IR gives it."""
    tensors: tuple[TensorSignature, ...]
    """The tensors it touches, in ``Kernel.tensors`` order."""
    flops: float
    """Floating-point operations (given by the IR or estimated)."""
    workspace_nbytes: int
    """Scratch bytes it needs while it runs."""

    def to_json(self) -> dict[str, Any]:
        """A plain JSON object, with keys in a fixed order (what the digest hashes)."""
        return {
            "op": self.op,
            "tensors": [
                {"nbytes": t.nbytes, "shape": None if t.shape is None else list(t.shape),
                 "dtype": t.dtype, "access": t.access}
                for t in self.tensors
            ],
            "flops": float(self.flops),
            "workspace_nbytes": self.workspace_nbytes,
        }

    @property
    def digest(self) -> str:
        """A stable hash (32 hex digits): the same in every process, Python version and machine."""
        return stable_digest(self.to_json())


def stable_digest(value: Any) -> str:
    """SHA-256 (first 32 hex digits) of canonical JSON: sorted keys, no spaces, shortest floats."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def kernel_signatures(graph: Graph, *, flops: Sequence[float] | npt.NDArray[np.float64]
                      ) -> list[KernelSignature]:
    """The signature of every kernel of ``graph``, ``flops`` giving each kernel's FLOPs."""
    live = graph.liveness
    tensors = graph.tensors
    out = []
    for k, kernel in enumerate(graph.kernels):
        entries = live.kernel_tensor_slice(k)
        touched = []
        for t, read, written in zip(live.kernel_tensors[entries].tolist(),
                                    live.kernel_reads[entries].tolist(),
                                    live.kernel_writes[entries].tolist(), strict=True):
            tensor = tensors[t]
            touched.append(TensorSignature(tensor.nbytes, tensor.shape, tensor.dtype,
                                           _access(read, written)))
        out.append(KernelSignature(kernel.op, tuple(touched), float(flops[k]),
                                   kernel.workspace_nbytes))
    return out
