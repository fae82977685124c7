"""What a plan may recompute instead of keeping: the one owner of these facts.

A tensor is *recomputable* when it is an activation whose producer may run again
(:attr:`~autotm_core.ir.Kernel.rerun`: no side effect, and not a random op whose generator
state the frontend does not keep) and updates none of its inputs in place, and whose every
other writer *fills* it: a kernel that may run again, writes that tensor only, in place,
and runs before any kernel but its writers reads it (CPU dropout's noise: ``empty_like``,
then ``bernoulli_``, then ``div_``). Running the producer and then its fills again on the
same inputs gives the same value. A plan may then drop it between two uses and rerun its
producer and fills just before the later one (one :class:`~autotm_core.plans.Rerun` each,
in order: :meth:`RecomputeFacts.rerun_kernels`), provided each input still holds the value
the kernel first read: no kernel wrote it in between (:meth:`RecomputeFacts.unchanged`).

Layers, for checkpointing a layer at a time as ``torch.utils.checkpoint`` users do, come
from :attr:`~autotm_core.ir.Kernel.module`: :func:`layer_of`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
    """Per tensor: an activation written by a rerunnable producer and kernels filling it."""
    write_ptr: IntArray
    """CSR row pointers into :attr:`write_kernels`, one row per tensor."""
    write_kernels: IntArray
    """Kernels writing each tensor, ascending."""
    fill_of: IntArray
    """Per kernel: the recomputable tensor it fills in place (see the module doc), or -1.
    Such a kernel runs again only right after the kernels before it that write the tensor."""
    fill_ptr: IntArray
    """CSR row pointers into :attr:`fill_kernels`, one row per kernel."""
    fill_kernels: IntArray
    """Per kernel, the kernels filling its recomputable outputs, ascending."""

    def rerun_kernels(self, kernel: int) -> tuple[int, ...]:
        """The kernels a rerun of ``kernel`` runs, in order: itself, then the kernels filling
        its recomputable outputs (none for most kernels)."""
        fills = self.fill_kernels[self.fill_ptr[kernel]:self.fill_ptr[kernel + 1]]
        return (kernel, *fills.tolist())

    def with_fills(self, reruns: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """``(kernel, before)`` reruns with each kernel's fills after it, in the order they
        run: by boundary, then in program order (a rerun's recomputed inputs come first)."""
        return sorted(((k, b) for p, b in reruns for k in self.rerun_kernels(p)),
                      key=lambda kb: (kb[1], kb[0]))

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
    recomputable = activation & (producer >= 0)
    recomputable[recomputable] = rerunnable[producer[recomputable]]
    fill_of = np.full(n_kernels, -1, dtype=np.int64)
    for t in np.flatnonzero(recomputable & (counts > 1)).tolist():
        fills = write_kernels[write_ptr[t] + 1:write_ptr[t + 1]]
        if _fills(graph, t, fills):
            fill_of[fills] = t
        else:
            recomputable[t] = False
    filled = np.flatnonzero(fill_of >= 0)
    heads = producer[fill_of[filled]]
    order = np.lexsort((filled, heads))
    fill_ptr = np.zeros(n_kernels + 1, dtype=np.int64)
    np.cumsum(np.bincount(heads, minlength=n_kernels), out=fill_ptr[1:])
    return RecomputeFacts(rerunnable, recomputable, write_ptr, write_kernels, fill_of,
                          fill_ptr, filled[order])


def _fills(graph: Graph, tensor: int, writers: IntArray) -> bool:
    """Whether every kernel of ``writers`` (after the producer) fills ``tensor``: may run
    again, writes it only, in place, and no kernel but a writer reads it before the last."""
    name = graph.tensors[tensor].name
    for w in writers.tolist():
        kernel = graph.kernels[w]
        if not kernel.rerun or set(kernel.outputs) != {name} or name not in kernel.inputs:
            return False
    users = graph.liveness.users(tensor)
    return set(users[users <= writers[-1]].tolist()) <= {int(w) for w in writers} | {
        int(graph.liveness.producer[tensor])}


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
