"""A placement with dropped activations restored by reruns, what it holds in each pool at
every half step, and its plan: what the recompute baselines (checkpoint-layers,
recompute-only) share.

Every kept tensor lives in one pool for its whole life. A *dropped* activation lives in one
pool from its birth to its last kernel before a gap, is resident nowhere during the gap,
and lives in the fastest pool from the boundary where a rerun of its producer restores it
to its last use (:mod:`autotm_core.plans.model`, "Reruns"). There are no moves. A
placement is an array of pools, one per tensor: where a kept tensor lives, where a
dropped one lives before its gap.

Use is counted as the verifier counts it (:mod:`autotm_core.plans.verify_memory`), in half
steps: ``2k + 1`` is kernel ``k`` running, ``2k`` the boundary before it. A residency
occupies ``[2 first + 1, 2 last + 1]``; one a rerun restores begins at its boundary ``2b``;
each kernel's workspace is in the fastest pool while it runs. At a boundary, each rerun
there also holds its kernel's workspace and every output it does not restore, all of them
at once: more than the verifier counts (it frees a chain's intermediate value once the last
rerun reading it has run, and holds one workspace at a time,
:func:`~autotm_core.plans.verify_memory.boundary_rerun_use`), so that a rerun adds its
bytes alone, which the greedy choices of recompute-only need; a plan that fits by this
count fits by the verifier's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.baselines.common import Setting
from autotm_core.baselines.first_touch import birth_order
from autotm_core.costs import KernelCosts, roofline_costs
from autotm_core.costs.model import rerun_seconds
from autotm_core.errors import CapacityError
from autotm_core.plans import Plan, Rerun, Residency, make_plan
from autotm_core.units import format_bytes


@attrs.frozen(slots=True)
class Drop:
    """Activation ``tensor`` leaves the fastest pool after kernel ``last_kept`` and is
    restored there at the boundary before kernel ``restore``."""

    tensor: int
    """Tensor position."""
    last_kept: int
    """Last kernel of its first residency (its last use before the gap)."""
    restore: int
    """The kernel before which a rerun of its producer restores it."""


@attrs.define
class Recompute:
    """What a recompute baseline decided: the dropped activations and the reruns."""

    drops: dict[int, Drop] = attrs.field(factory=dict)
    """Tensor position -> how it is dropped."""
    reruns: set[tuple[int, int]] = attrs.field(factory=set)
    """``(kernel, before)``: the kernel runs again at the boundary before ``before``."""

    def extra_nbytes(self, s: Setting, kernel: int, before: int) -> int:
        """Bytes the rerun of ``kernel`` at ``before`` holds beside the residencies: its
        workspace (and its fills') and every output it does not restore there."""
        live, index = s.graph.liveness, s.graph.tensor_index
        extra = int(sum(live.workspace_nbytes[k] for k in s.graph.recompute.rerun_kernels(kernel)))
        for name in s.graph.kernels[kernel].outputs:
            o = index[name]
            drop = self.drops.get(o)
            if drop is None or drop.restore != before:
                extra += int(live.nbytes[o])
        return extra

    def in_fastest(self, s: Setting, tensor: int, before: int) -> bool:
        """Whether ``tensor`` is in the fastest pool at the boundary before ``before`` for a
        rerun there, every tensor being placed in the fastest pool: resident over the
        boundary, or restored at it (by its producer's rerun, which runs first there)."""
        live = s.graph.liveness
        first, last = int(live.first[tensor]), int(live.last[tensor])
        drop = self.drops.get(tensor)
        if drop is None:
            return first <= before - 1 and last >= before
        return ((first <= before - 1 and drop.last_kept >= before)
                or (drop.restore <= before <= last))


def pool_use(s: Setting, pools: IntArray, decided: Recompute, pool: int) -> IntArray:
    """Bytes in pool position ``pool`` at each of the ``2n`` half steps of the placement
    ``pools`` (``-1``: not placed yet) with the drops ``decided`` (see the module doc)."""
    live = s.graph.liveness
    n = live.n_kernels
    delta = np.zeros(2 * n + 2, dtype=np.int64)
    end = live.last.copy()
    drops = list(decided.drops.values())
    t = np.fromiter((d.tensor for d in drops), dtype=np.int64, count=len(drops))
    end[t] = np.fromiter((d.last_kept for d in drops), dtype=np.int64, count=len(drops))
    here = s.exists & (pools == pool)
    np.add.at(delta, 2 * live.first[here] + 1, live.nbytes[here])
    np.add.at(delta, 2 * end[here] + 2, -live.nbytes[here])
    if pool == 0 and drops:
        back = np.fromiter((d.restore for d in drops), dtype=np.int64, count=len(drops))
        np.add.at(delta, 2 * back, live.nbytes[t])
        np.add.at(delta, 2 * live.last[t] + 2, -live.nbytes[t])
    use = np.cumsum(delta)[:2 * n]
    if pool == 0:
        use[1::2] += live.workspace_nbytes
        for k, b in decided.reruns:
            use[2 * b] += decided.extra_nbytes(s, k, b)
    return use


def when(s: Setting, step: int) -> str:
    """Half step ``step`` for people: a kernel, or the boundary before one."""
    k = step // 2
    name = f"kernel {s.graph.kernels[k].name!r} (#{k})"
    return name if step % 2 else f"the boundary before {name}"


def overflow(s: Setting, pools: IntArray, decided: Recompute) -> tuple[int, int, int] | None:
    """The first bounded pool over its limit, with the half step of its peak and the peak in
    bytes; ``None`` when every bounded pool holds what it is given."""
    for p, pool in enumerate(s.system.pools):
        if pool.capacity_nbytes is None:
            continue
        use = pool_use(s, pools, decided, p)
        step = int(use.argmax()) if len(use) else 0
        if len(use) and int(use[step]) > pool.capacity_nbytes:
            return p, step, int(use[step])
    return None


def capacity_error(s: Setting, found: tuple[int, int, int], *, what: str,
                   hint: str) -> CapacityError:
    """The :class:`CapacityError` of an :func:`overflow`: which pool, where, by how much."""
    p, step, peak = found
    pool = s.system.pools[p]
    capacity = pool.capacity_nbytes or 0
    over = peak - capacity
    return CapacityError(
        f"{what} does not fit: pool {pool.name!r} needs {format_bytes(peak)} at "
        f"{when(s, step)} but holds {format_bytes(capacity)}: {format_bytes(over)} "
        f"({over} bytes) too much",
        hint=f"give pool {pool.name!r} at least {peak} bytes, or {hint}",
    )


def spill(s: Setting, pinned: BoolArray, decided: Recompute, *, what: str) -> IntArray:
    """A placement that fits every bounded pool, first-touch-like: the ``pinned`` tensors and
    the restored values in the fastest pool, every other tensor (a dropped one before its
    gap), in the order a program allocates them
    (:func:`~autotm_core.baselines.first_touch.birth_order`), in the fastest pool it may live
    in with room for that life (room counted in aggregate, no addresses).
    :class:`CapacityError` when the pinned ones alone, or a tensor, fit nowhere."""
    live = s.graph.liveness
    pools = np.full(len(s.graph.tensors), -1, dtype=np.int64)
    pools[pinned & s.exists] = 0
    found = overflow(s, pools, decided)
    if found is not None:
        raise capacity_error(s, found, what=f"{what} (the tensors its reruns need)",
                             hint="use a planner that moves tensors")
    capacity = [pool.capacity_nbytes for pool in s.system.pools]
    use = {p: pool_use(s, pools, decided, p) for p, c in enumerate(capacity) if c is not None}
    first, last, nbytes = live.first.tolist(), live.last.tolist(), live.nbytes.tolist()
    for t, drop in decided.drops.items():
        last[t] = drop.last_kept
    for t in birth_order(s.graph):
        if pools[t] >= 0:
            continue
        lo, hi = 2 * first[t] + 1, 2 * last[t] + 2
        for p in s.positions(t):
            limit = capacity[p]
            if limit is None:
                pools[t] = p
                break
            if int(use[p][lo:hi].max()) + nbytes[t] <= limit:
                pools[t] = p
                use[p][lo:hi] += nbytes[t]
                break
        else:
            raise CapacityError(
                f"{what}: tensor {s.graph.tensors[t].name!r} ({format_bytes(nbytes[t])}) has "
                f"room for its life (from {when(s, lo)}) in none of the pools it may live in "
                f"({', '.join(s.pools_of[t])})",
                hint="give those pools more capacity, or use a planner that moves tensors")
    return pools


def rerun_plan(s: Setting, pools: IntArray, decided: Recompute, *, planner: str,
               attributes: Mapping[str, Any] | None = None) -> Plan:
    """The plan of the placement (see the module doc); :class:`PlanError` naming the first
    kernel whose configuration the cost table does not allow."""
    live = s.graph.liveness
    names = [pool.name for pool in s.system.pools]
    fast = names[0]
    first, last = live.first.tolist(), live.last.tolist()
    residencies: list[Residency] = []
    for t, tensor in enumerate(s.graph.tensors):
        if first[t] > last[t]:
            continue
        drop = decided.drops.get(t)
        pool = names[int(pools[t])]
        if drop is None:
            residencies.append(Residency(tensor.name, pool, first[t], last[t]))
        else:
            residencies += [Residency(tensor.name, pool, first[t], drop.last_kept),
                            Residency(tensor.name, fast, drop.restore, last[t])]
    reruns = [Rerun(k, b) for k, b in s.graph.recompute.with_fills(decided.reruns)]
    plan = make_plan(s.graph, s.system, residencies=residencies, planner=planner,
                     attributes=attributes, capacities=s.capacities(), reruns=reruns)
    if s.allowed is not None:
        s.allowed.check_configs(planner, plan.configs)
    return plan


def may_rerun(s: Setting, kernel: int) -> bool:
    """Whether a baseline may run ``kernel`` again: the graph allows it
    (:attr:`~autotm_core.ir.RecomputeFacts.rerunnable`), every tensor it touches may live
    in the fastest pool (a rerun reads and writes there), and a partial cost table prices it
    there; the kernels filling its outputs run with it and read nothing else (a baseline
    brings back only the kernel's own inputs)."""
    facts = s.graph.recompute
    if not facts.rerunnable[kernel]:
        return False
    index = s.graph.tensor_index
    for k in facts.rerun_kernels(kernel):
        names = s.graph.kernels[k].tensors
        touched = [index[name] for name in names]
        if k != kernel and set(names) != set(s.graph.kernels[k].outputs):
            return False
        if not all(s.may_be_fast[t] for t in touched):
            return False
        if s.allowed is not None and not s.allowed.allows(k, [0] * len(touched)):
            return False
    return True


def costs_of(s: Setting, costs: KernelCosts | None) -> KernelCosts:
    """``costs``, or the roofline's when none are given."""
    return costs if costs is not None else roofline_costs(s.graph, s.system)


def kernel_rerun_seconds(s: Setting, costs: KernelCosts, kernel: int) -> float:
    """What running ``kernel`` again costs (every tensor in the fastest pool), with the
    kernels filling its outputs."""
    return sum(rerun_seconds(costs, k, len(s.graph.kernels[k].tensors))
               for k in s.graph.recompute.rerun_kernels(kernel))


def rerun_summary(s: Setting, decided: Recompute, costs: KernelCosts) -> dict[str, Any]:
    """Facts worth keeping in a plan's attributes: reruns, their seconds, dropped tensors
    and their bytes."""
    nbytes = s.graph.liveness.nbytes
    return {
        "reruns": len(decided.reruns),
        "rerun_seconds": float(sum(kernel_rerun_seconds(s, costs, k)
                                   for k, _ in decided.reruns)),
        "dropped_tensors": len(decided.drops),
        "dropped_nbytes": int(sum(int(nbytes[t]) for t in decided.drops)),
    }
