"""What a training step saves for its backward pass: the facts the recompute and offload
baselines share.

The *backward pass* begins at the first kernel that writes a gradient (a ``GRADIENT``
tensor; the whole program is forward when none does). A *saved activation* is an
``ACTIVATION`` produced by a forward kernel and read again at or after that kernel: what a
framework keeps between the forward and the backward pass. Its *last forward use* is the
last kernel before the backward pass that touches it (its producer when no other does), its
*first backward use* the first kernel of the backward pass that does; the kernels between
the two are its *gap*, where nothing reads it.

Graphs whose gradients are not all ``GRADIENT`` tensors (a captured joint graph marks
parameter gradients only) begin their backward pass where the first such tensor is
written; the kernels before it count as forward.
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import IntArray
from autotm_core.ir import Graph, TensorKind


@attrs.frozen(slots=True, eq=False)
class SavedActivations:
    """The saved activations of a graph, with their last forward and first backward uses."""

    backward_start: int
    """Position of the first kernel of the backward pass (the number of kernels: none)."""
    tensors: IntArray
    """Tensor positions of the saved activations, ascending."""
    producer: IntArray
    """Kernel that produces each."""
    last_forward: IntArray
    """Last kernel before the backward pass touching each (at least its producer)."""
    first_backward: IntArray
    """First kernel of the backward pass touching each."""

    @property
    def gap_kernels(self) -> IntArray:
        """Number of kernels between each one's last forward and first backward use."""
        return self.first_backward - self.last_forward - 1

    def index(self) -> dict[int, int]:
        """Tensor position -> its row in these arrays."""
        return {int(t): i for i, t in enumerate(self.tensors.tolist())}


def backward_start(graph: Graph) -> int:
    """Position of the first kernel writing a ``GRADIENT`` tensor (the number of kernels when
    none does)."""
    live = graph.liveness
    gradient = np.fromiter((t.kind is TensorKind.GRADIENT for t in graph.tensors),
                           dtype=np.bool_, count=len(graph.tensors))
    writes = live.kernel_writes & gradient[live.kernel_tensors]
    entries = np.flatnonzero(writes)
    return int(live.entry_kernels()[entries[0]]) if len(entries) else live.n_kernels


def saved_activations(graph: Graph) -> SavedActivations:
    """The :class:`SavedActivations` of a verified graph."""
    live = graph.liveness
    start = backward_start(graph)
    activation = np.fromiter((t.kind is TensorKind.ACTIVATION for t in graph.tensors),
                             dtype=np.bool_, count=len(graph.tensors))
    candidates = np.flatnonzero(activation & (live.producer >= 0) & (live.producer < start)
                                & (live.last >= start))
    keep, last_forward, first_backward = [], [], []
    for t in candidates.tolist():
        users = live.users(t)
        at = int(np.searchsorted(users, start))
        if at == len(users):
            continue  # alive at the backward pass only because it is an output of the step
        keep.append(t)
        last_forward.append(int(users[at - 1]) if at else int(live.producer[t]))
        first_backward.append(int(users[at]))
    tensors = np.asarray(keep, dtype=np.int64)
    return SavedActivations(
        backward_start=start,
        tensors=tensors,
        producer=live.producer[tensors],
        last_forward=np.asarray(last_forward, dtype=np.int64),
        first_backward=np.asarray(first_backward, dtype=np.int64),
    )
