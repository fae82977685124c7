"""What every baseline needs: the limited system, lifetimes, where each tensor may live,
what the cost table allows, and the capacity check and plan of a placement without moves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.baselines.tables import AllowedConfigs, allowed_configs
from autotm_core.capacity import check_pools_hold, check_workspace_fits, with_fast_capacity
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import CapacityError, GraphError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem, allowed_pools
from autotm_core.plans import Plan, Residency, make_plan
from autotm_core.units import format_bytes


@attrs.frozen(slots=True, eq=False)
class Setting:
    """A graph and the memory system a baseline plans it for, with the fast pool limited."""

    graph: Graph
    """The program."""
    system: MemorySystem
    """The memory system with the fast pool's capacity set to the limit."""
    capacity_nbytes: int | None
    """The fast pool's limit (``None``: unbounded)."""
    exists: BoolArray
    """For each tensor: whether it is live at some kernel (its life is not empty)."""
    may_be_fast: BoolArray
    """For each tensor: whether it may live in the fastest pool."""
    pools_of: tuple[tuple[str, ...], ...]
    """For each tensor: the pools it may live in, fastest first."""
    positions_of: tuple[tuple[int, ...], ...]
    """For each tensor: the positions of those pools in :attr:`system`."""
    allowed: AllowedConfigs | None = None
    """What the cost table allows the kernels whose table is partial (``None``: anything)."""

    @property
    def fast(self) -> str:
        """Name of the fastest pool."""
        return self.system.fast.name

    def capacities(self) -> dict[str, int | None]:
        """The limit of every pool, as :attr:`Plan.capacities` records it."""
        return {pool.name: pool.capacity_nbytes for pool in self.system.pools}

    def positions(self, tensor: int) -> tuple[int, ...]:
        """Positions of the pools tensor position ``tensor`` may live in, fastest first."""
        return self.positions_of[tensor]

    def fastest(self) -> IntArray:
        """For each tensor: the position of the fastest pool it may live in."""
        return np.fromiter((p[0] for p in self.positions_of), dtype=np.int64,
                           count=len(self.positions_of))

    def slowest(self) -> IntArray:
        """For each tensor: the position of the slowest pool it may live in."""
        return np.fromiter((p[-1] for p in self.positions_of), dtype=np.int64,
                           count=len(self.positions_of))


def setting(graph: Graph, system: MemorySystem, fast_capacity_nbytes: int | None,
            costs: KernelCosts | None = None, *, recompute: bool = False) -> Setting:
    """The :class:`Setting` for a baseline; checks that the graph has kernels, that every
    kernel's workspace fits and that the pools together hold what is live (less what a
    baseline that recomputes, ``recompute``, may drop)."""
    if not graph.kernels:
        raise GraphError(f"graph {graph.name!r} has no kernels: there is no step to plan",
                         hint="give the graph at least one kernel")
    limited = with_fast_capacity(system, fast_capacity_nbytes)
    capacity = limited.fast.capacity_nbytes
    check_workspace_fits(graph, capacity, pool=limited.fast.name)
    check_pools_hold(graph, limited, recompute=recompute)
    live = graph.liveness
    fast = limited.fast.name
    pools_of = allowed_pools(graph, limited)
    may_be_fast = np.fromiter(
        (pools[0] == fast for pools in pools_of), dtype=np.bool_, count=len(pools_of)
    )
    return Setting(
        graph=graph,
        system=limited,
        capacity_nbytes=capacity,
        exists=live.last >= live.first,
        may_be_fast=may_be_fast,
        pools_of=pools_of,
        positions_of=tuple(tuple(limited.pool_index(name) for name in pools)
                           for pools in pools_of),
        allowed=allowed_configs(graph, limited, costs),
    )


def pool_live_nbytes(s: Setting, pools: IntArray, pool: int) -> IntArray:
    """Bytes in pool position ``pool`` at each kernel when tensor ``t`` lives in ``pools[t]``
    for life (the running kernel's workspace included in the fastest pool)."""
    live = s.graph.liveness
    n = live.n_kernels
    here = s.exists & (pools == pool)
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, live.first[here], live.nbytes[here])
    np.add.at(delta, live.last[here] + 1, -live.nbytes[here])
    used = np.cumsum(delta[:n])
    return used + live.workspace_nbytes if pool == 0 else used


def first_overflow(s: Setting, pools: IntArray) -> tuple[int, int, int] | None:
    """The first bounded pool (position) overflowing when tensor ``t`` lives in pool position
    ``pools[t]`` for life, with the kernel of its peak and the peak in bytes; ``None`` if none."""
    for p, pool in enumerate(s.system.pools):
        if pool.capacity_nbytes is None:
            continue
        used = pool_live_nbytes(s, pools, p)
        k = int(used.argmax())
        if int(used[k]) > pool.capacity_nbytes:
            return p, k, int(used[k])
    return None


def check_static_fits(s: Setting, pools: IntArray, *, what: str, hint: str) -> None:
    """:class:`CapacityError` naming the first bounded pool that overflows when tensor ``t``
    lives in pool position ``pools[t]`` for life: at which kernel, and by how much."""
    overflow = first_overflow(s, pools)
    if overflow is None:
        return
    p, k, peak = overflow
    pool = s.system.pools[p]
    capacity = pool.capacity_nbytes or 0
    over = peak - capacity
    raise CapacityError(
        f"{what} does not fit: pool {pool.name!r} needs {format_bytes(peak)} at kernel "
        f"{s.graph.kernels[k].name!r} (#{k}) but holds {format_bytes(capacity)}: "
        f"{format_bytes(over)} ({over} bytes) too much",
        hint=f"give pool {pool.name!r} at least {peak} bytes, or {hint}",
    )


def static_plan(
    s: Setting,
    pools: IntArray,
    *,
    planner: str,
    offsets: Mapping[int, int | None] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Plan:
    """The plan keeping every tensor ``t`` that exists in pool position ``pools[t]`` for life
    (at ``offsets[t]`` when given), with no moves; :class:`PlanError` naming the first kernel
    whose configuration the cost table does not allow."""
    live = s.graph.liveness
    names = [pool.name for pool in s.system.pools]
    first, last = live.first.tolist(), live.last.tolist()
    where = pools.tolist()
    offsets = offsets or {}
    residencies = [
        Residency(t.name, names[where[i]], first[i], last[i], offsets.get(i))
        for i, t in enumerate(s.graph.tensors)
        if first[i] <= last[i]
    ]
    plan = make_plan(s.graph, s.system, residencies=residencies, planner=planner,
                     attributes=attributes, capacities=s.capacities())
    if s.allowed is not None:
        s.allowed.check_configs(planner, plan.configs)
    return plan

