"""What every baseline needs: the limited system, lifetimes, and where each tensor may live."""

from __future__ import annotations

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.capacity import check_workspace_fits, with_fast_capacity
from autotm_core.errors import PlanError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

BoolArray = npt.NDArray[np.bool_]


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


def _allowed_pools(graph: Graph, system: MemorySystem) -> tuple[tuple[str, ...], ...]:
    names = tuple(pool.name for pool in system.pools)
    result = []
    for tensor in graph.tensors:
        if tensor.pools is None:
            result.append(names)
            continue
        allowed = tuple(name for name in names if name in tensor.pools)
        if not allowed:
            raise PlanError(
                f"tensor {tensor.name!r} may live only in {', '.join(tensor.pools)}, none of "
                f"which memory system {system.name!r} has",
                hint=f"the pools are {', '.join(names)}; fix the tensor's pools in the graph",
            )
        result.append(allowed)
    return tuple(result)


def setting(graph: Graph, system: MemorySystem, fast_capacity_nbytes: int | None) -> Setting:
    """The :class:`Setting` for a baseline; checks that every kernel's workspace fits."""
    limited = with_fast_capacity(system, fast_capacity_nbytes)
    capacity = limited.fast.capacity_nbytes
    check_workspace_fits(graph, capacity, pool=limited.fast.name)
    live = graph.liveness
    fast = limited.fast.name
    pools_of = _allowed_pools(graph, limited)
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
