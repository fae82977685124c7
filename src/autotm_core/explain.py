"""Why a plan does what it does: one tensor's life across the pools, or one kernel's cost.

For a tensor: every residency (pool and kernel span), every move with its
copy time, and each *absence* from the fastest pool while the tensor is live,
with the tensors that entered the fastest pool during that absence: what
evicting it made room for. For a kernel: the pools its tensors were in, its
time in that configuration against its best placement under the same costs,
and the moves charged to it.
"""

from __future__ import annotations

import logging

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import PlanError, UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Move, MoveKind, Plan, Residency

logger = logging.getLogger(__name__)

ROOM_FOR_LIMIT = 10
"""Most tensors listed as what one absence made room for (the largest first)."""


@attrs.frozen(kw_only=True)
class ExplainedMove:
    """One move of the tensor, with its cost."""

    move: Move
    """The move as the plan records it."""
    kernel_name: str
    """Name of the kernel it precedes (sync) or overlaps (async)."""
    nbytes: int
    """Bytes copied."""
    seconds: float
    """Copy time at the link's bandwidth for its kind."""


@attrs.frozen(kw_only=True)
class Absence:
    """A span of kernels where the tensor is live but not in the fastest pool."""

    first: int
    """First kernel of the span."""
    last: int
    """Last kernel of the span (inclusive)."""
    pools: tuple[str, ...]
    """Pools the tensor is in meanwhile."""
    room_for: tuple[tuple[str, int], ...]
    """(tensor, bytes) of the tensors that entered the fastest pool during the span, largest
    first, at most :data:`ROOM_FOR_LIMIT`."""
    room_for_nbytes: int
    """Total bytes of every tensor that entered the fastest pool during the span."""


@attrs.frozen(kw_only=True)
class TensorExplanation:
    """Where one tensor lived over time and why it moved."""

    tensor: str
    """Tensor name."""
    kind: str
    """Tensor kind (activation, parameter, ...)."""
    nbytes: int
    """Size in bytes."""
    first_live: int
    """First kernel where it is live."""
    last_live: int
    """Last kernel where it is live."""
    users: tuple[int, ...]
    """Kernels that read or write it."""
    residencies: tuple[Residency, ...]
    """Its residencies, in order of first kernel."""
    moves: tuple[ExplainedMove, ...]
    """Its moves, in order of kernel."""
    absences: tuple[Absence, ...]
    """Spans where it is live outside the fastest pool."""


@attrs.frozen(kw_only=True)
class KernelExplanation:
    """One kernel's placement, its cost, and its best placement under the same costs."""

    kernel: str
    """Kernel name."""
    index: int
    """Kernel position."""
    tensors: tuple[tuple[str, int, str], ...]
    """(tensor, bytes, pool) for each tensor the kernel touches, in the plan's configuration."""
    seconds: float
    """Run time in the plan's configuration."""
    best_seconds: float
    """Shortest run time over the placements the costs allow (capacity aside)."""
    best_pools: tuple[str, ...]
    """The pool of each tensor in that best placement."""
    sync_move_seconds: float
    """Synchronous moves just before the kernel."""
    async_move_seconds: float
    """Asynchronous moves overlapping the kernel."""
    moves: tuple[ExplainedMove, ...]
    """The moves charged to the kernel."""

    @property
    def slowdown(self) -> float:
        """Plan's time over best time (1.0 when both are zero)."""
        return self.seconds / self.best_seconds if self.best_seconds > 0 else 1.0


def explain_tensor(
    plan: Plan, graph: Graph, system: MemorySystem, *, tensor: str
) -> TensorExplanation:
    """The life of ``tensor`` in ``plan`` (a verified plan of ``graph`` on ``system``)."""
    t = _tensor_index(graph, tensor)
    live = graph.liveness
    fast = system.fast.name
    mine = sorted((r for r in plan.residencies if r.tensor == tensor),
                  key=lambda r: (r.first, r.pool))
    moves = tuple(_explained(m, graph, system)
                  for m in sorted((m for m in plan.moves if m.tensor == tensor),
                                  key=lambda m: m.kernel))
    first, last = int(live.first[t]), int(live.last[t])
    in_fast = np.zeros(last - first + 1, dtype=bool)
    for r in mine:
        if r.pool == fast:
            in_fast[max(r.first, first) - first: min(r.last, last) - first + 1] = True
    entering = _entering_fast(plan, fast, exclude=tensor, nbytes=_sizes(graph))
    absences = []
    for a, b in _false_runs(in_fast):
        span_first, span_last = first + a, first + b
        pools = sorted({r.pool for r in mine if r.first <= span_last and r.last >= span_first})
        came = sorted(((n, size) for k, n, size in entering if span_first <= k <= span_last),
                      key=lambda item: (-item[1], item[0]))
        absences.append(Absence(first=span_first, last=span_last, pools=tuple(pools),
                                room_for=tuple(came[:ROOM_FOR_LIMIT]),
                                room_for_nbytes=sum(size for _, size in came)))
    return TensorExplanation(
        tensor=tensor, kind=graph.tensors[t].kind.value, nbytes=int(live.nbytes[t]),
        first_live=first, last_live=last, users=tuple(int(k) for k in live.users(t)),
        residencies=tuple(mine), moves=moves, absences=tuple(absences),
    )


def explain_kernel(
    plan: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts, *, kernel: str
) -> KernelExplanation:
    """``kernel``'s configuration in ``plan``, its time, and its best placement under ``costs``."""
    try:
        k = graph.kernel_index[kernel]
    except KeyError:
        raise UsageError(f"graph {graph.name!r} has no kernel called {kernel!r}",
                         hint="run 'python -m autotm_core info GRAPH' to list kernels") from None
    if k >= len(plan.configs):
        raise PlanError(f"the plan has no configuration for kernel {kernel!r} (#{k})",
                        hint="check that the plan was made for this graph")
    names = graph.kernels[k].tensors
    pools = plan.configs[k]
    positions = [system.pool_index(p) for p in pools]
    seconds = float(costs.seconds(k, positions))
    best_seconds, best = _best_placement(costs, k, positions)
    mine = sorted((m for m in plan.moves if m.kernel == k), key=lambda m: (m.kind.value, m.tensor))
    explained = tuple(_explained(m, graph, system) for m in mine)
    sizes = _sizes(graph)
    return KernelExplanation(
        kernel=kernel, index=k,
        tensors=tuple((n, sizes[n], p) for n, p in zip(names, pools, strict=True)),
        seconds=seconds, best_seconds=best_seconds,
        best_pools=tuple(system.pools[p].name for p in best),
        sync_move_seconds=sum(m.seconds for m in explained if m.move.kind is MoveKind.SYNC),
        async_move_seconds=sum(m.seconds for m in explained if m.move.kind is MoveKind.ASYNC),
        moves=explained,
    )


def _best_placement(costs: KernelCosts, k: int, current: list[int]) -> tuple[float, list[int]]:
    """The fastest allowed configuration of kernel ``k`` (the current one when none is faster)."""
    try:
        table = costs.table(k)
    except PlanError as exc:  # too many tensors to enumerate: compare with all-fastest only
        logger.info("kernel #%d: %s; comparing with all tensors in the fastest pool", k, exc)
        fastest = [0] * len(current)
        try:
            return float(costs.seconds(k, fastest)), fastest
        except PlanError:
            return float(costs.seconds(k, current)), current
    if not len(table.seconds):
        return float(costs.seconds(k, current)), current
    i = int(np.argmin(table.seconds))
    return float(table.seconds[i]), [int(p) for p in table.configs[i]]


def _explained(move: Move, graph: Graph, system: MemorySystem) -> ExplainedMove:
    nbytes = int(graph.liveness.nbytes[graph.tensor_index[move.tensor]])
    seconds = system.copy_seconds(nbytes, system.pool_index(move.source),
                                  system.pool_index(move.target),
                                  asynchronous=move.kind is MoveKind.ASYNC)
    return ExplainedMove(move=move, kernel_name=graph.kernels[move.kernel].name, nbytes=nbytes,
                         seconds=float(seconds))


def _tensor_index(graph: Graph, tensor: str) -> int:
    try:
        return graph.tensor_index[tensor]
    except KeyError:
        raise UsageError(f"graph {graph.name!r} has no tensor called {tensor!r}",
                         hint="run 'python -m autotm_core info GRAPH' to see its tensors") from None


def _sizes(graph: Graph) -> dict[str, int]:
    nbytes = graph.liveness.nbytes
    return {t.name: int(nbytes[i]) for i, t in enumerate(graph.tensors)}


def _entering_fast(
    plan: Plan, fast: str, *, exclude: str, nbytes: dict[str, int]
) -> list[tuple[int, str, int]]:
    """(kernel, tensor, bytes) for each residency of another tensor beginning in ``fast``."""
    return [(r.first, r.tensor, nbytes.get(r.tensor, 0)) for r in plan.residencies
            if r.pool == fast and r.tensor != exclude]


def _false_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Inclusive (start, end) of each run of False in ``mask``."""
    runs, start = [], None
    for i, value in enumerate(mask):
        if not value and start is None:
            start = i
        elif value and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(mask) - 1))
    return runs


__all__ = [
    "Absence",
    "ExplainedMove",
    "KernelExplanation",
    "TensorExplanation",
    "explain_kernel",
    "explain_tensor",
]
