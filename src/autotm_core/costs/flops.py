"""Floating-point operations of every kernel: given by the IR, else estimated per op kind.

A kernel without :attr:`Kernel.flops` gets the estimate of its op kind's entry
in the op table (:mod:`autotm_core.costs.ops`). A kernel whose op kind the
table does not know, or whose tensors lack the shapes its estimator needs, gets
the fallback: one flop per element written (elements from the shape, else from
``nbytes`` and the dtype, else one per 4 bytes). Each op kind that falls back is
logged once per call of :func:`estimate_flops`, and the result says which
kernels fell back.
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.arrays import FloatArray, IntArray
from autotm_core.costs.estimators import Estimator, written
from autotm_core.costs.ops import op_info
from autotm_core.ir import Graph, Tensor

logger = logging.getLogger(__name__)

_WARNED: weakref.WeakKeyDictionary[Graph, set[str]] = weakref.WeakKeyDictionary()
"""The op kinds already warned about, per graph: the costs of one graph are estimated more
than once (the problem's roofline, 2LM's, a profile), and each warning is said once."""



@attrs.frozen(slots=True, eq=False)
class FlopsEstimate:
    """The FLOPs of every kernel and where each number came from."""

    flops: FloatArray
    """``(n_kernels,)`` floating-point operations of each kernel."""
    given: npt.NDArray[np.bool_]
    """``(n_kernels,)`` True where the IR gave :attr:`Kernel.flops`."""
    fallback_kernels: IntArray
    """Positions of the kernels that got the fallback (unknown op kind or missing shapes)."""
    fallback_ops: dict[str, int]
    """Number of kernels that fell back, by op kind as the IR writes it."""

    @property
    def n_fallback(self) -> int:
        """How many kernels got the fallback."""
        return len(self.fallback_kernels)


def fallback_flops(outputs: Sequence[Tensor]) -> float:
    """One flop per element written (per 4 bytes written when neither shape nor dtype is known)."""
    return written(outputs)


def estimate_flops(graph: Graph) -> FlopsEstimate:
    """FLOPs of every kernel of ``graph``; logs one warning per op kind that falls back (once
    per graph in a process, however often it is estimated)."""
    tensors, index = graph.tensors, graph.tensor_index
    values: list[float] = []
    fallback: list[int] = []
    estimators: dict[str, Estimator | None] = {}
    first_fallback: dict[str, int] = {}
    for k, kernel in enumerate(graph.kernels):
        if kernel.flops is not None:
            values.append(kernel.flops)
            continue
        op = kernel.op
        if op in estimators:
            estimator = estimators[op]
        else:
            info = op_info(op)
            estimator = estimators[op] = None if info is None else info.flops
        outputs = [tensors[index[name]] for name in kernel.outputs]
        value = None
        if estimator is not None:
            value = estimator([tensors[index[name]] for name in kernel.inputs], outputs)
        if value is None:
            value = fallback_flops(outputs)
            fallback.append(k)
            first_fallback.setdefault(op, k)
        values.append(value)
    counts = Counter(graph.kernels[k].op for k in fallback)
    warned = _WARNED.setdefault(graph, set()) if first_fallback else set()
    for op, first in first_fallback.items():
        if op in warned:
            continue
        warned.add(op)
        why = "unknown op kind" if estimators[op] is None else "its tensors lack the shapes needed"
        logger.warning(
            "flops of op kind %r (%d kernel(s), first %r): %s; counting one flop per element "
            "written. Give the kernels' flops in the graph, or their tensors' shapes.",
            op, counts[op], graph.kernels[first].name, why,
        )
    return FlopsEstimate(
        flops=np.asarray(values, dtype=np.float64).reshape(len(graph.kernels)),
        given=np.fromiter((k.flops is not None for k in graph.kernels), dtype=np.bool_,
                          count=len(graph.kernels)),
        fallback_kernels=np.asarray(fallback, dtype=np.int64),
        fallback_ops=dict(counts),
    )
