"""What every baseline needs: the limited system, lifetimes, and where each tensor may live."""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.capacity import check_workspace_fits, with_fast_capacity
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem, allowed_pools
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

    @property
    def fast_only(self) -> BoolArray:
        """For each tensor: whether the fastest pool is the only one it may live in."""
        return np.fromiter((len(p) == 1 and p[0] == self.fast for p in self.pools_of),
                           dtype=np.bool_, count=len(self.pools_of))

    @property
    def fast(self) -> str:
        """Name of the fastest pool."""
        return self.system.fast.name

    def capacities(self) -> dict[str, int | None]:
        """The limit of every pool, as :attr:`Plan.capacities` records it."""
        return {pool.name: pool.capacity_nbytes for pool in self.system.pools}

    def slowest_pool(self, tensor: int) -> str:
        """The slowest pool tensor position ``tensor`` may live in."""
        return self.pools_of[tensor][-1]

    def fastest_pool(self, tensor: int) -> str:
        """The fastest pool tensor position ``tensor`` may live in."""
        return self.pools_of[tensor][0]


def setting(graph: Graph, system: MemorySystem, fast_capacity_nbytes: int | None) -> Setting:
    """The :class:`Setting` for a baseline; checks that every kernel's workspace fits."""
    limited = with_fast_capacity(system, fast_capacity_nbytes)
    capacity = limited.fast.capacity_nbytes
    check_workspace_fits(graph, capacity, pool=limited.fast.name)
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
    )


def fast_live_nbytes(s: Setting, in_fast: BoolArray) -> IntArray:
    """Bytes in the fast pool at each kernel when tensors ``in_fast`` live there for life."""
    live = s.graph.liveness
    n = live.n_kernels
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, live.first[in_fast], live.nbytes[in_fast])
    np.add.at(delta, live.last[in_fast] + 1, -live.nbytes[in_fast])
    return np.cumsum(delta[:n]) + live.workspace_nbytes


def check_fast_fits(s: Setting, in_fast: BoolArray, *, what: str, hint: str) -> None:
    """:class:`CapacityError` saying where and by how much the fast pool overflows, if it does."""
    if s.capacity_nbytes is None or not s.graph.kernels:
        return
    used = fast_live_nbytes(s, in_fast)
    k = int(used.argmax())
    peak = int(used[k])
    if peak > s.capacity_nbytes:
        over = peak - s.capacity_nbytes
        raise CapacityError(
            f"{what} does not fit: pool {s.fast!r} needs {format_bytes(peak)} at kernel "
            f"{s.graph.kernels[k].name!r} (#{k}) but holds {format_bytes(s.capacity_nbytes)}: "
            f"{format_bytes(over)} ({over} bytes) too much",
            hint=f"give pool {s.fast!r} at least {peak} bytes, or {hint}",
        )
