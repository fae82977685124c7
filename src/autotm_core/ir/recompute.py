"""What a plan may recompute instead of keeping: the one owner of these facts.

A tensor is *recomputable* when it is an activation written by exactly one kernel, its
producer, which may run again (:attr:`~autotm_core.ir.Kernel.rerun`: not random, no side
effect) and updates none of its inputs in place: running that kernel again on the same
inputs gives the same value. A plan may then drop it between two uses and rerun its
producer just before the later one (:class:`~autotm_core.plans.Rerun`), provided each input
still holds the value the producer first read: no kernel wrote it in between
(:meth:`RecomputeFacts.unchanged`).

Layers, for checkpointing a layer at a time as ``torch.utils.checkpoint`` users do, come
from :attr:`~autotm_core.ir.Kernel.module`: :func:`layer_of`.
"""

from __future__ import annotations

import re

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.ir.graph import Graph
from autotm_core.ir.tensor import TensorKind


@attrs.frozen(slots=True, eq=False)
class RecomputeFacts:
    """Which kernels may run again, which tensors may be recomputed, and every tensor's
    writes (to tell whether an input still holds the value a kernel read)."""

    rerunnable: BoolArray
    """Per kernel: it may run again (``rerun``, writes outputs, updates no input in place)."""
    recomputable: BoolArray
    """Per tensor: an activation whose only writer is a rerunnable producer."""
    write_ptr: IntArray
    """CSR row pointers into :attr:`write_kernels`, one row per tensor."""
    write_kernels: IntArray
    """Kernels writing each tensor, ascending."""

    def unchanged(self, tensor: int, after: int, before: int) -> bool:
        """Whether no kernel strictly between ``after`` and ``before`` writes ``tensor``."""
        writes = self.write_kernels[self.write_ptr[tensor]:self.write_ptr[tensor + 1]]
        i = int(np.searchsorted(writes, after, side="right"))
        return i == len(writes) or int(writes[i]) >= before


def recompute_facts(graph: Graph) -> RecomputeFacts:
    """The :class:`RecomputeFacts` of a verified graph (``graph.recompute`` caches them)."""
    live = graph.liveness
    n_tensors, n_kernels = len(graph.tensors), len(graph.kernels)
    kernel_of = live.entry_kernels()
    writes = live.kernel_writes
    in_place = writes & live.kernel_reads
    rerunnable = np.fromiter((k.rerun and bool(k.outputs) for k in graph.kernels),
                             dtype=np.bool_, count=n_kernels)
    rerunnable[kernel_of[in_place]] = False
    written = live.kernel_tensors[writes]
    order = np.lexsort((kernel_of[writes], written))
    write_kernels = kernel_of[writes][order]
    counts = np.bincount(written, minlength=n_tensors)
    write_ptr = np.zeros(n_tensors + 1, dtype=np.int64)
    np.cumsum(counts, out=write_ptr[1:])
    producer = live.producer
    activation = np.fromiter((t.kind is TensorKind.ACTIVATION for t in graph.tensors),
                             dtype=np.bool_, count=n_tensors)
    recomputable = activation & (counts == 1) & (producer >= 0)
    recomputable[recomputable] = rerunnable[producer[recomputable]]
    return RecomputeFacts(rerunnable, recomputable, write_ptr, write_kernels)


_INDEX = re.compile(r"\d+")


def layer_of(module: str) -> str:
    """The layer a kernel called from ``module`` belongs to: the path up to its first
    numbered component (``"transformer.h.3"`` of ``"transformer.h.3.mlp.c_fc"``; ``"layer1.0"``
    of ``"layer1.0.conv1"``), the whole path when none is numbered, ``""`` when unknown."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if _INDEX.fullmatch(part):
            return ".".join(parts[:i + 1])
    return module
