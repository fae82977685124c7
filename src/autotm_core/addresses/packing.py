"""Byte addresses for every residency of every capacity-limited pool of a plan.

The static dynamic-storage-allocation problem: each residency is a rectangle,
its time span (in half steps, as the verifier counts them: a synchronous copy
occupies both pools at the boundary before its kernel) by its size rounded up
to the alignment. Rectangles present at the same time must not share an
address. Heuristic: lowest-fit placement (each item at the lowest address free
during its whole span) in a few orders, keeping the lowest packing. Lower
bound: the most aligned bytes present at any one time. See docs/addresses.md.

A plan is one step of a training loop: a tensor that exists before the step
and survives it (parameter, optimizer state, constant), held in a pool from
kernel 0 by one residency and at the last kernel by another, gets one offset
for both, so that the next step finds it where this one left it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from autotm_core.addresses.records import OffsetAssignment, Overflow, PoolPacking
from autotm_core.arrays import BoolArray, IntArray
from autotm_core.errors import PlanError, UsageError, summarize_problems
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import PlanArrays, encode_plan, restored_keys
from autotm_core.plans.model import Plan
from autotm_core.plans.verify_memory import half_step_spans
from autotm_core.units import PAGE_NBYTES, format_bytes

logger = logging.getLogger(__name__)

_Order = Callable[[IntArray, IntArray, IntArray], IntArray]

ORDERS: dict[str, _Order] = {
    "size": lambda s, e, z: np.lexsort((s, -(e - s), -z)),
    "start": lambda s, e, z: np.lexsort((-z, s)),
    "length": lambda s, e, z: np.lexsort((s, -z, -(e - s))),
    "area": lambda s, e, z: np.lexsort((s, -z, -z * (e - s + 1))),
}
"""Placement orders: largest first; by start time (an online first-fit sweep, exact on
last-in-first-out lifetimes); longest-lived first; largest size x lifetime first."""

DEFAULT_ORDERS = ("size", "start")
"""Orders tried by default: on training graphs the other two were never better and much slower."""


def assign_offsets(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    *,
    alignment_nbytes: int = PAGE_NBYTES,
    orders: Sequence[str] = DEFAULT_ORDERS,
) -> OffsetAssignment:
    """Give every residency of every bounded pool in ``plan.capacities`` a byte offset.

    Kernel workspaces are packed into the fastest pool too, during their kernel.
    The returned plan carries offsets only when every pool fits; otherwise it
    carries none, and ``overflows`` says where each pool ran over and by how much.
    Raises :class:`PlanError` when the plan names unknown tensors or pools or has
    spans outside the graph.
    """
    _check_options(alignment_nbytes, orders)
    from autotm_core.addresses.lowest_fit import lowest_fit

    arrays = _encode(plan, graph, system)
    rows = np.arange(len(arrays.res_index))
    start, end = half_step_spans(arrays, rows, restored_keys(graph, arrays))
    live = graph.liveness
    persistent = np.zeros(len(graph.tensors), dtype=np.bool_)
    for t in np.unique(arrays.res_tensor[arrays.res_first == 0]).tolist():
        kind = graph.tensors[t].kind
        persistent[t] = kind.exists_before_step and kind.survives_step
    size = aligned(live.nbytes[arrays.res_tensor], alignment_nbytes)
    n_times = 2 * arrays.n_kernels
    offsets = np.full(len(rows), -1, dtype=np.int64)
    packings: list[PoolPacking] = []
    overflows: list[Overflow] = []
    workspace_offsets: dict[int, int] = {}
    for p, pool in enumerate(system.pools):
        capacity = plan.capacities.get(pool.name)
        if capacity is None:
            continue
        mine = np.flatnonzero(arrays.res_pool == p)
        item_start, item_end, item_size = start[mine], end[mine], size[mine]
        partner = wrap_partners(
            arrays.res_tensor[mine],
            arrays.res_first[mine],
            arrays.res_last[mine],
            item_start,
            item_end,
            persistent=persistent,
            n_kernels=arrays.n_kernels,
        )
        kernels = np.zeros(0, dtype=np.int64)
        if p == 0:
            kernels = np.flatnonzero(live.workspace_nbytes > 0)
            item_start = np.concatenate([item_start, 2 * kernels + 1])
            item_end = np.concatenate([item_end, 2 * kernels + 1])
            item_size = np.concatenate(
                [item_size, aligned(live.workspace_nbytes[kernels], alignment_nbytes)]
            )
            partner = np.concatenate([partner, np.full(len(kernels), -1, dtype=np.int64)])
        bound = lower_bound(item_start, item_end, item_size, n_times)
        best: tuple[int, str, IntArray] | None = None
        for name in orders:
            order = ORDERS[name](item_start, item_end, item_size).astype(np.int64)
            placed = lowest_fit(item_start, item_end, item_size, order, n_times, partner)
            height = int((placed + item_size).max()) if len(placed) else 0
            logger.debug("pool %s, order %s: height %d, bound %d", pool.name, name, height, bound)
            if best is None or height < best[0]:
                best = (height, name, placed)
            if height == bound:
                break
        assert best is not None  # orders is not empty (checked above)
        height, name, placed = best
        pairs = int(np.count_nonzero(partner >= 0)) // 2
        packings.append(
            PoolPacking(pool.name, capacity, height, bound, name, len(item_size), pairs)
        )
        if height > capacity:
            above = np.flatnonzero(placed[: len(mine)] + item_size[: len(mine)] > capacity)
            split = sorted({graph.tensors[int(t)].name
                            for t in arrays.res_tensor[mine[above[partner[above] >= 0]]]})
            overflows.append(
                _overflow(pool.name, capacity, item_start, item_end, item_size, placed, split)
            )
            logger.info(
                "pool %s: packing needs %s, capacity %s",
                pool.name,
                format_bytes(height),
                format_bytes(capacity),
            )
        offsets[mine] = placed[: len(mine)]
        workspace_offsets.update(zip(kernels.tolist(), placed[len(mine) :].tolist(), strict=True))

    if overflows:
        cleared = tuple(
            attrs.evolve(r, offset=None) if r.offset is not None else r for r in plan.residencies
        )
        return OffsetAssignment(
            attrs.evolve(plan, residencies=cleared), packings, overflows, alignment_nbytes
        )
    return OffsetAssignment(
        _with_offsets(plan, arrays, offsets, packings, workspace_offsets, alignment_nbytes),
        packings,
        (),
        alignment_nbytes,
        workspace_offsets,
    )


def wrap_partners(
    tensor: IntArray,
    first: IntArray,
    last: IntArray,
    start: IntArray,
    end: IntArray,
    *,
    persistent: BoolArray,
    n_kernels: int,
) -> IntArray:
    """For each residency of one pool, the one that must share its offset, or -1.

    ``tensor``, ``first``, ``last``: each residency's tensor position and kernels;
    ``start``, ``end``: its half-step span; ``persistent``: per tensor position,
    whether it exists before the step and survives it. A persistent tensor's
    residency beginning at kernel 0 and its other residency covering the last
    kernel are partners: the next step finds the tensor where this one leaves it.
    Spans that touch (a copy out of the pool and one back into it at the same
    boundary) cannot share addresses and are left unpaired.
    """
    partner = np.full(len(tensor), -1, dtype=np.int64)
    keep = persistent[tensor] if len(tensor) else np.zeros(0, dtype=np.bool_)
    begins = np.flatnonzero(keep & (first == 0))
    ends = np.flatnonzero(keep & (last == n_kernels - 1) & (first > 0))
    _, b, e = np.intersect1d(tensor[begins], tensor[ends], return_indices=True)
    b, e = begins[b], ends[e]
    apart = end[b] < start[e]
    partner[b[apart]] = e[apart]
    partner[e[apart]] = b[apart]
    return partner


def occupancy(start: IntArray, end: IntArray, size: IntArray, n_times: int) -> IntArray:
    """Bytes present at each of ``n_times`` times: the items' sizes over their spans."""
    delta = np.zeros(n_times + 1, dtype=np.int64)
    np.add.at(delta, start, size)
    np.add.at(delta, end + 1, -size)
    return np.cumsum(delta)[:n_times]


def lower_bound(start: IntArray, end: IntArray, size: IntArray, n_times: int) -> int:
    """Most bytes present at one time: no packing of these items is lower."""
    if not len(size):
        return 0
    return int(occupancy(start, end, size, n_times).max())


def _check_options(alignment_nbytes: int, orders: Sequence[str]) -> None:
    if (
        isinstance(alignment_nbytes, bool)
        or not isinstance(alignment_nbytes, int)
        or alignment_nbytes < 1
    ):
        raise UsageError(
            f"alignment {alignment_nbytes!r} is not a whole number of bytes >= 1",
            hint="use 4096 (a page, as AutoTM) or 1 for no rounding",
        )
    unknown = [o for o in orders if o not in ORDERS]
    if unknown or not orders:
        raise UsageError(
            f"unknown placement orders {unknown!r}" if unknown else "no placement order given",
            hint=f"choose among {', '.join(ORDERS)}",
        )


def aligned(nbytes: IntArray, alignment_nbytes: int) -> IntArray:
    """``nbytes`` rounded up to multiples of ``alignment_nbytes``."""
    return (-(-nbytes // alignment_nbytes) * alignment_nbytes).astype(np.int64)


def _encode(plan: Plan, graph: Graph, system: MemorySystem) -> PlanArrays:
    arrays, problems = encode_plan(plan, graph, system)
    n = arrays.n_kernels
    first, last = arrays.res_first, arrays.res_last
    for i in np.flatnonzero((first < 0) | (last >= n) | (first > last)):
        r = plan.residencies[int(arrays.res_index[i])]
        problems.append(
            f"residencies[{arrays.res_index[i]}]: tensor {r.tensor!r} in pool {r.pool!r} "
            f"spans kernels {r.first}..{r.last}, outside 0..{n - 1} or backwards"
        )
    dropped = len(arrays.res_index) != len(plan.residencies) or len(arrays.move_index) != len(
        plan.moves
    )
    if dropped or np.any((first < 0) | (last >= n) | (first > last)):
        raise PlanError(
            summarize_problems(
                f"cannot assign addresses in plan for graph {graph.name!r}", problems
            ),
            problems=problems,
            hint="run the plan verifier on it; addresses need known tensors, pools and spans",
        )
    return arrays


def _overflow(
    pool: str, capacity: int, start: IntArray, end: IntArray, size: IntArray, placed: IntArray,
    split_tensors: Sequence[str] = (),
) -> Overflow:
    """Per kernel, how far past ``capacity`` the highest item present there ends."""
    top = placed + size
    over = np.flatnonzero(top > capacity)
    excess: dict[int, int] = {}
    # Paint half steps from the highest item down; each half step is painted once.
    n_times = int(end[over].max()) + 2
    next_free = np.arange(n_times)

    def find(t: int) -> int:
        root = t
        while next_free[root] != root:
            root = next_free[root]
        while next_free[t] != root:
            next_free[t], t = root, next_free[t]
        return root

    for i in over[np.argsort(-top[over], kind="stable")]:
        t = find(int(start[i]))
        while t <= end[i]:
            k = t // 2
            excess[k] = max(excess.get(k, 0), int(top[i]) - capacity)
            next_free[t] = t + 1
            t = find(t + 1)
    kernels = sorted(excess)
    return Overflow(pool, kernels, [excess[k] for k in kernels], tuple(split_tensors))


def _with_offsets(
    plan: Plan,
    arrays: PlanArrays,
    offsets: IntArray,
    packings: list[PoolPacking],
    workspace_offsets: dict[int, int],
    alignment_nbytes: int,
) -> Plan:
    residencies = list(plan.residencies)
    for row in np.flatnonzero(offsets >= 0):
        i = int(arrays.res_index[row])
        residencies[i] = attrs.evolve(residencies[i], offset=int(offsets[row]))
    facts = {
        "alignment_nbytes": alignment_nbytes,
        "height_nbytes": {p.pool: p.height_nbytes for p in packings},
        "lower_bound_nbytes": {p.pool: p.lower_bound_nbytes for p in packings},
    }
    return attrs.evolve(
        plan, residencies=tuple(residencies), attributes={**plan.attributes, "addresses": facts},
        workspace_offsets=workspace_offsets,
    )
