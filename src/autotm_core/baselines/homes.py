"""Homes: the one pool each tensor may always fall back to, with its capacity reserved.

The greedy planner (:mod:`.greedy`) holds tensors in the fast pool while they
are used and evicts them when room is needed. Every tensor has a *home*, a pool
whose capacity is reserved for it over its whole life: evicting it into its home
always finds room, so no bounded pool (slow, middle or fast) ever overflows,
whatever greedy moves. A tensor homed in the fast pool never leaves it.

Homes are a placement without moves. When every tensor fits in the fastest
pool it may live in for its whole life, that is its home: greedy's plan is then
all-fast, nothing being worth moving (unless a partial cost table may refuse that
configuration: a tensor homed in the fast pool can be used nowhere else).
Otherwise homes are computed in allocation order
(:func:`~autotm_core.baselines.first_touch.walk_births`) over the pools'
aggregate capacities: each tensor goes to the slowest pool it may live in that
has room for its whole life, then the next faster (slow first, so that the fast
pool stays free for what greedy fetches). Room in a slower pool is the room at
the tensor's birth (everything placed before it was born no later, so its
occupancy only falls during the tensor's life); room in the fast pool counts each
kernel's workspace, kernel by kernel. When that fails, the first-touch placement
is used, so greedy plans wherever first-touch does.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

import numpy as np

from autotm_core.baselines.common import Setting, first_overflow
from autotm_core.baselines.first_touch import place_first_touch, walk_births
from autotm_core.errors import CapacityError
from autotm_core.units import PAGE_NBYTES, format_bytes


def assign_homes(s: Setting, *, fast: AbstractSet[int] = frozenset()) -> tuple[list[int], str]:
    """Pool position of every tensor's home (-1 for tensors that never exist), and which
    placement gave them (``"all-fast"``, ``"slow-first"`` or ``"first-touch"``);
    :class:`CapacityError` naming a pool, a kernel and the shortfall when none fits.

    Tensors ``fast`` are homed in the fast pool by the slow-first placement.
    """
    fastest = s.fastest()
    if s.allowed is None and first_overflow(s, fastest) is None:
        return np.where(s.exists, fastest, -1).tolist(), "all-fast"
    try:
        return _slow_first(s, fast), "slow-first"
    except CapacityError as failed:
        try:
            _, pools = place_first_touch(s, alignment=PAGE_NBYTES)
        except CapacityError:
            raise failed from None
    homes = [-1] * len(s.graph.tensors)
    for t, pool in pools.items():
        homes[t] = s.system.pool_index(pool)
    return homes, "first-touch"


def _slow_first(s: Setting, fast: AbstractSet[int]) -> list[int]:
    live = s.graph.liveness
    nbytes, first, last = live.nbytes.tolist(), live.first.tolist(), live.last.tolist()
    capacity = [pool.capacity_nbytes for pool in s.system.pools]
    used = [0] * len(capacity)  # bytes homed in each pool at the current birth
    fast_used = live.workspace_nbytes.astype(np.int64)  # per kernel, workspace included
    homes = [-1] * len(nbytes)

    def room(t: int, p: int) -> tuple[int, int]:
        """Bytes pool ``p`` lacks for ``t`` over its life, and the kernel where."""
        cap = capacity[p]
        if cap is None:
            return 0, first[t]
        if p:
            return used[p] + nbytes[t] - cap, first[t]
        span = fast_used[first[t]:last[t] + 1]
        k = int(span.argmax())
        return int(span[k]) + nbytes[t] - cap, first[t] + k

    def allocate(t: int) -> None:
        shortfalls = []
        for p in [0] if t in fast else reversed(s.positions(t)):
            short, k = room(t, p)
            if short <= 0:
                homes[t] = p
                used[p] += nbytes[t]
                if p == 0:
                    fast_used[first[t]:last[t] + 1] += nbytes[t]
                return
            shortfalls.append((short, k, p))
        short, k, p = min(shortfalls)
        tensor = s.graph.tensors[t]
        raise CapacityError(
            f"greedy: tensor {tensor.name!r} ({format_bytes(nbytes[t])}, live at kernels "
            f"{first[t]}..{last[t]}) has no pool to fall back to: pool "
            f"{s.system.pools[p].name!r} lacks {format_bytes(short)} ({short} bytes) at kernel "
            f"{s.graph.kernels[k].name!r} (#{k}) beside the tensors already placed there",
            hint="give the slower pools more capacity (a slow pool may be unbounded), or "
            "allow that tensor in more pools",
        )

    def free(t: int) -> None:
        used[homes[t]] -= nbytes[t]

    walk_births(s.graph, allocate=allocate, free=free)
    return homes
