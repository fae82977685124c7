"""First-touch NUMA, as the AutoTM paper's baseline: fill fast memory in allocation order, no moves.

Tensors are allocated in execution order, at their birth (tensors that exist
before the step at kernel 0, in the graph's tensor order, then each kernel's
outputs in its order), into a best-fit, 4 KiB-aligned allocator over each
bounded pool's addresses, fastest pool first, and freed after their last
kernel. A tensor that finds no free block in the fast pool lives in the next
pool for its whole life. The largest kernel workspace is kept free at the top
of the fast pool, since a kernel's workspace lives there while it runs.

With a partial cost table, a tensor is allocated only in the pools where each
kernel touching it still has an allowed configuration beside the pools of the
tensors allocated before it (so the last tensor of a kernel placed completes an
allowed configuration); a kernel that has none left is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autotm_core.baselines.allocator import BestFitAllocator
from autotm_core.baselines.common import Setting, setting, static_plan
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan
from autotm_core.units import PAGE_NBYTES, format_bytes, round_up

PLANNER = "baseline/first-touch"


def birth_order(graph: Graph) -> list[int]:
    """Tensor positions in the order a program allocates them (see the module docstring)."""
    live = graph.liveness
    producer, last = live.producer.tolist(), live.last.tolist()
    order = [i for i in range(len(graph.tensors)) if producer[i] < 0 and last[i] >= 0]
    entries, ptr = live.kernel_tensors.tolist(), live.kernel_ptr.tolist()
    for k in range(live.n_kernels):
        order.extend(t for t in entries[ptr[k] : ptr[k + 1]] if producer[t] == k)
    return order


def first_touch(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    alignment: int = PAGE_NBYTES,
    costs: KernelCosts | None = None,
) -> Plan:
    """The first-touch NUMA plan; residencies in bounded pools carry their offsets.

    With a partial cost table (``costs``), a tensor skips the pools in which some
    kernel touching it would find no allowed configuration (see the module docstring).
    """
    s = setting(graph, system, fast_capacity_nbytes, costs)
    offsets, pools = place_first_touch(s, alignment=alignment)
    nbytes = graph.liveness.nbytes.tolist()
    where = np.full(len(graph.tensors), -1, dtype=np.int64)
    for t, pool in pools.items():
        where[t] = s.system.pool_index(pool)
    return static_plan(
        s, where, planner=PLANNER, offsets=offsets,
        attributes={
            "alignment_nbytes": alignment,
            "fast_tensors": sum(1 for p in pools.values() if p == s.fast),
            "spilled_tensors": sum(1 for p in pools.values() if p != s.fast),
            "fast_tensor_nbytes": sum(nbytes[t] for t, p in pools.items() if p == s.fast),
        },
    )


def place_first_touch(
    s: Setting, *, alignment: int
) -> tuple[dict[int, int | None], dict[int, str]]:
    """Offset (``None`` in unbounded pools) and pool of every tensor that exists."""
    live = s.graph.liveness
    reserve = round_up(int(live.workspace_nbytes.max(initial=0)), alignment)
    allocators: dict[str, BestFitAllocator] = {}
    for i, pool in enumerate(s.system.pools):
        if pool.capacity_nbytes is not None:
            room = pool.capacity_nbytes - (reserve if i == 0 else 0)
            allocators[pool.name] = BestFitAllocator(max(0, room), alignment=alignment)
    nbytes = live.nbytes.tolist()
    offsets: dict[int, int | None] = {}
    pools: dict[int, str] = {}
    rows = None if s.allowed is None else _Rows(s)

    def allocate(t: int) -> None:
        candidates = list(s.pools_of[t]) if rows is None else rows.pools(t)
        pools[t], offsets[t] = _allocate(s, allocators, t, nbytes[t], candidates)
        if rows is not None:
            rows.choose(t, s.system.pool_index(pools[t]))

    def free(t: int) -> None:
        offset = offsets[t]
        if offset is not None:
            allocators[pools[t]].free(offset, nbytes[t])

    walk_births(s.graph, allocate=allocate, free=free)
    return offsets, pools


class _Rows:
    """For each kernel whose cost table is partial, the allowed configurations that keep to
    the pools of the tensors placed so far (and to the pools each other tensor may live in)."""

    def __init__(self, s: Setting) -> None:
        assert s.allowed is not None  # built only for a partial table
        self.s, self.allowed = s, s.allowed
        live = s.graph.liveness
        self.tensors: dict[int, list[int]] = {}
        self.alive: dict[int, list[tuple[int, ...]]] = {}
        self.slots: dict[int, list[tuple[int, int]]] = {}  # tensor -> (kernel, its position)
        self.chosen: dict[int, int] = {}
        for k in sorted(self.allowed.tables):
            tensors = live.kernel_tensors[live.kernel_ptr[k]:live.kernel_ptr[k + 1]].tolist()
            rows = self.allowed.rows(k)
            self.tensors[k] = tensors
            self.alive[k] = [rows[r] for r in
                             self.allowed.matching(k, [s.positions(u) for u in tensors])]
            for i, u in enumerate(tensors):
                self.slots.setdefault(u, []).append((k, i))

    def pools(self, t: int) -> list[str]:
        """The pools ``t`` may live in that leave each kernel touching it an allowed row."""
        refusing = [next((k for k, i in self.slots.get(t, [])
                          if not any(row[i] == p for row in self.alive[k])), None)
                    for p in self.s.positions(t)]
        keep = [self.s.system.pools[p].name
                for p, k in zip(self.s.positions(t), refusing, strict=True) if k is None]
        if keep:
            return keep
        k = refusing[0]  # the kernel refusing the fastest pool
        assert k is not None
        names, pools = self.s.graph.tensors, self.s.system.pools
        placed = ", ".join(f"{names[u].name}: {pools[self.chosen[u]].name}"
                           for u in self.tensors[k] if u in self.chosen)
        raise self.allowed.refusal(
            PLANNER, k, f"finds no allowed configuration for tensor {names[t].name!r} in any "
            f"pool it may live in ({', '.join(self.s.pools_of[t])}) beside the pools "
            f"first-touch gave its other tensors ({placed or 'nothing else placed yet'})")

    def choose(self, t: int, p: int) -> None:
        """``t`` lives in pool position ``p``: drop the rows that put it elsewhere."""
        self.chosen[t] = p
        for k, i in self.slots.get(t, []):
            self.alive[k] = [row for row in self.alive[k] if row[i] == p]


def address_layout(graph: Graph, *, alignment: int = PAGE_NBYTES) -> dict[int, int]:
    """Offsets of every tensor that exists in one unbounded address space, allocated first-touch.

    This is where a program's allocator would put its tensors in one big pool;
    the 2LM model maps these addresses onto the cache.
    """
    allocator = BestFitAllocator(None, alignment=alignment)
    nbytes = graph.liveness.nbytes.tolist()
    offsets: dict[int, int] = {}

    def allocate(t: int) -> None:
        offsets[t] = allocator.allocate(nbytes[t])  # type: ignore[assignment]  # unbounded: never None

    walk_births(graph, allocate=allocate, free=lambda t: allocator.free(offsets[t], nbytes[t]))
    return offsets


def walk_births(
    graph: Graph, *, allocate: Callable[[int], None], free: Callable[[int], None]
) -> None:
    """``allocate`` each tensor in :func:`birth_order`, after ``free``-ing those dead by then."""
    live = graph.liveness
    first, last = live.first.tolist(), live.last.tolist()
    ending: dict[int, list[int]] = {}
    now = 0
    for t in birth_order(graph):
        while now < first[t]:
            for dead in ending.pop(now, ()):
                free(dead)
            now += 1
        allocate(t)
        ending.setdefault(last[t], []).append(t)


def _allocate(
    s: Setting, allocators: dict[str, BestFitAllocator], t: int, nbytes: int,
    candidates: list[str],
) -> tuple[str, int | None]:
    for pool in candidates:
        allocator = allocators.get(pool)
        if allocator is None:
            return pool, None
        offset = allocator.allocate(nbytes)
        if offset is not None:
            return pool, offset
    tensor = s.graph.tensors[t]
    k = int(s.graph.liveness.first[t])
    short = "; ".join(
        f"pool {pool!r} has {format_bytes(allocators[pool].free_nbytes)} free, at most "
        f"{format_bytes(allocators[pool].largest_free_nbytes)} in one block: "
        f"{round_up(nbytes, allocators[pool].alignment) - allocators[pool].largest_free_nbytes}"
        " bytes short"
        for pool in candidates)
    raise CapacityError(
        f"first-touch: tensor {tensor.name!r} ({format_bytes(nbytes)}) finds no free block at "
        f"kernel {s.graph.kernels[k].name!r} (#{k}) in any pool it may live in: {short}",
        hint="give those pools more capacity (a slow pool may be unbounded), or use a planner "
        "that moves tensors",
    )
