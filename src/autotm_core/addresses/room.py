"""Room in a full pool: idle tensors copied out around its fullest kernels, so that a plan packs.

A solver fills a bounded pool to its capacity, byte for byte; the packing
(:mod:`autotm_core.addresses.packing`) then wastes a little over the most bytes present
at once, and a plan found after minutes of solving can overflow by a fraction of a
percent (Hugging Face GPT-2 on ``gpu-h200`` at 0.92 GiB: 906 KiB over 942 MiB).
:func:`make_room` lowers the pool's fullest moments by a given number of bytes without
a solver: a tensor resident in the pool there that no kernel, copy or rerun touches
between two of its uses is copied out to another pool after the first use and
back before the second (two synchronous copies), the cheapest bytes first.

The plan stays valid by construction: the tensor is not written between the two uses,
so both copies carry its current value, and the pool only loses bytes (a copy occupies
both pools at its boundary, where the tensor was resident anyway). The caller verifies,
simulates and packs it like any other plan.
"""

from __future__ import annotations

import logging

import attrs
import numpy as np

from autotm_core.addresses.packing import aligned, occupancy
from autotm_core.arrays import IntArray
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import PlanArrays, encode_plan, restored_keys
from autotm_core.plans.model import Move, MoveKind, Plan, Residency
from autotm_core.plans.verify_memory import half_step_spans
from autotm_core.units import PAGE_NBYTES

logger = logging.getLogger(__name__)


@attrs.frozen
class _Gap:
    """Tensor ``tensor`` idle in the pool over kernels ``first..last`` of its residency ``row``."""

    row: int
    tensor: int
    first: int
    last: int
    nbytes: int
    seconds: float
    target: int


def make_room(plan: Plan, graph: Graph, system: MemorySystem, pool: str, excess_nbytes: int, *,
              alignment_nbytes: int = PAGE_NBYTES) -> Plan | None:
    """``plan`` with idle tensors copied out of ``pool`` so that, wherever it holds more than
    its capacity less ``excess_nbytes`` (in aligned bytes, as the packing counts), it holds
    that much less; ``None`` when no such copies reach that (or the pool has no capacity).
    A copy goes where it fits, to the pool that copies it out and back soonest. Tensors a
    rerun reads or writes are left alone."""
    capacity = plan.capacities.get(pool)
    if capacity is None or excess_nbytes <= 0:
        return None
    arrays, problems = encode_plan(plan, graph, system)
    if problems:
        return None
    p = system.pool_index(pool)
    live = graph.liveness
    size = aligned(live.nbytes, alignment_nbytes)
    start, end = half_step_spans(arrays, np.arange(len(arrays.res_index)),
                                 restored_keys(graph, arrays))
    n_times = 2 * arrays.n_kernels + 2
    at = 2 * np.arange(arrays.n_kernels) + 1  # each kernel's half step
    workspace = aligned(live.workspace_nbytes, alignment_nbytes)
    used = {}  # per bounded pool, aligned bytes at each half step, as the packing counts them
    for q, other in enumerate(system.pools):
        if other.name not in plan.capacities:
            continue
        mine = np.flatnonzero(arrays.res_pool == q)
        first, last, nbytes = start[mine], end[mine], size[arrays.res_tensor[mine]]
        if q == 0:  # kernel workspaces live in the fastest pool while they run
            first, last = np.concatenate([first, at]), np.concatenate([last, at])
            nbytes = np.concatenate([nbytes, workspace])
        used[q] = occupancy(first, last, nbytes, n_times)
    need = np.maximum(used[p] - (int(capacity) - int(excess_nbytes)), 0)
    if not need.any():
        return plan
    room: dict[int, IntArray] = {}  # per bounded pool, bytes free at each half step
    for q, u in used.items():
        limit = plan.capacities[system.pools[q].name]
        if limit is not None:
            room[q] = int(limit) - u
    gaps = _idle_gaps(plan, graph, system, arrays, np.flatnonzero(arrays.res_pool == p), size, p)
    hot = np.concatenate([[0], np.cumsum(need > 0)])  # only gaps over a full moment can help
    gaps = [g for g in gaps if hot[2 * g.last + 2] > hot[2 * g.first + 1]]
    chosen: list[_Gap] = []
    while need.any() and gaps:
        # copies out that still fit their target pool
        gaps = [g for g in gaps if g.target not in room
                or room[g.target][2 * g.first: 2 * g.last + 3].min() >= g.nbytes]
        if not gaps:
            break
        # what each gap would take off the pool where it must lose bytes, per second of copying
        gain = np.array([np.minimum(need[2 * g.first + 1: 2 * g.last + 2], g.nbytes).sum()
                         for g in gaps], dtype=np.float64)
        score = gain / np.array([max(g.seconds, 1e-12) for g in gaps])
        best = int(np.argmax(score))
        if gain[best] <= 0:
            break
        g = gaps.pop(best)
        chosen.append(g)
        need[2 * g.first + 1: 2 * g.last + 2] = np.maximum(
            need[2 * g.first + 1: 2 * g.last + 2] - g.nbytes, 0)
        gaps = [o for o in gaps if o.row != g.row]  # one gap per residency (rows renumber)
        if g.target in room:
            room[g.target][2 * g.first: 2 * g.last + 3] -= g.nbytes
    if need.any():
        return None
    logger.info("pool %s: %d idle tensor(s) copied out to make %d bytes of room", pool,
                len(chosen), int(excess_nbytes))
    return _apply(plan, graph, system, arrays, chosen, pool)


def _idle_gaps(plan: Plan, graph: Graph, system: MemorySystem, arrays: PlanArrays, mine: IntArray,
               size: IntArray, p: int) -> list[_Gap]:
    """Every stretch of two kernels or more inside a residency of the pool where nothing
    touches its tensor, with the pool that copies it out and back soonest."""
    from autotm_core.memory.tensor_pools import allowed_pools

    live, a = graph.liveness, arrays
    allowed = allowed_pools(graph, system)
    rerun_tensors = {graph.tensor_index[name] for r in plan.reruns
                     for name in graph.kernels[r.kernel].tensors}
    # per tensor: kernels at which a copy reads or lands it (or is in flight)
    touched: dict[int, list[int]] = {}
    for t, k, u, asyn in zip(a.move_tensor.tolist(), a.move_kernel.tolist(),
                             a.move_until.tolist(), a.move_async.tolist(), strict=True):
        touched.setdefault(t, []).extend(range(k, u) if asyn else (k - 1, k))
    gaps: list[_Gap] = []
    for row in mine.tolist():
        t = int(a.res_tensor[row])
        if t in rerun_tensors or not size[t]:
            continue
        first, last = int(a.res_first[row]), int(a.res_last[row])
        nbytes = int(live.nbytes[t])
        targets = [(system.copy_seconds(nbytes, p, q, asynchronous=False)
                    + system.copy_seconds(nbytes, q, p, asynchronous=False), q)
                   for q, pool in enumerate(system.pools) if q != p and pool.name in allowed[t]]
        if not targets:
            continue
        others = [(int(a.res_first[r]), int(a.res_last[r]), int(a.res_pool[r]))
                  for r in np.flatnonzero(a.res_tensor == t).tolist() if r != row]
        anchors = np.unique(np.concatenate([
            live.users(t), np.asarray(touched.get(t, ()), dtype=np.int64), [first, last]]))
        anchors = anchors[(anchors >= first) & (anchors <= last)]
        for x, y in zip(anchors[:-1].tolist(), anchors[1:].tolist(), strict=True):
            if y - x < 2:
                continue
            free = [(cost, q) for cost, q in targets
                    if not any(f <= y and x <= e and q == r for f, e, r in others)]
            if free:
                cost, q = min(free)
                gaps.append(_Gap(row, t, x + 1, y - 1, int(size[t]), cost, q))
    return gaps


def _apply(plan: Plan, graph: Graph, system: MemorySystem, arrays: PlanArrays, chosen: list[_Gap],
           pool: str) -> Plan:
    """``plan`` with each chosen gap's tensor copied out after its first use and back before
    its second."""
    residencies = list(plan.residencies)
    moves = list(plan.moves)
    extra: list[Residency] = []
    for g in chosen:
        i = int(arrays.res_index[g.row])
        r = residencies[i]
        name, target = graph.tensors[g.tensor].name, system.pools[g.target].name
        residencies[i] = attrs.evolve(r, last=g.first - 1)
        extra += [Residency(name, target, g.first, g.last),
                  attrs.evolve(r, first=g.last + 1)]
        moves += [Move(name, pool, target, g.first, MoveKind.SYNC),
                  Move(name, target, pool, g.last + 1, MoveKind.SYNC)]
    return attrs.evolve(plan, residencies=(*residencies, *extra), moves=tuple(moves),
                        attributes={**plan.attributes, "room_copies":
                                    int(plan.attributes.get("room_copies", 0)) + 2 * len(chosen)})


__all__ = ["make_room"]
