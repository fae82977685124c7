"""First-touch NUMA, as the AutoTM paper's baseline: fill fast memory in allocation order, no moves.

Tensors are allocated in execution order, at their birth (tensors that exist
before the step at kernel 0, in the graph's tensor order, then each kernel's
outputs in its order), into a best-fit, 4 KiB-aligned allocator over each
bounded pool's addresses, fastest pool first, and freed after their last
kernel. A tensor that finds no free block in the fast pool lives in the next
pool for its whole life. The largest kernel workspace is kept free at the top
of the fast pool, since a kernel's workspace lives there while it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from autotm_core.baselines.allocator import BestFitAllocator
from autotm_core.baselines.common import Setting, setting
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, Residency, make_plan
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
) -> Plan:
    """The first-touch NUMA plan; residencies in bounded pools carry their offsets."""
    s = setting(graph, system, fast_capacity_nbytes)
    offsets, pools = place_first_touch(s, alignment=alignment)
    live = graph.liveness
    first, last, nbytes = live.first.tolist(), live.last.tolist(), live.nbytes.tolist()
    residencies = [
        Residency(graph.tensors[t].name, pools[t], first[t], last[t], offsets[t]) for t in pools
    ]
    fast_nbytes = sum(nbytes[t] for t, p in pools.items() if p == s.fast)
    return make_plan(
        graph, s.system, residencies=residencies, planner=PLANNER, capacities=s.capacities(),
        attributes={
            "alignment_nbytes": alignment,
            "fast_tensors": sum(1 for p in pools.values() if p == s.fast),
            "spilled_tensors": sum(1 for p in pools.values() if p != s.fast),
            "fast_tensor_nbytes": fast_nbytes,
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

    def allocate(t: int) -> None:
        pools[t], offsets[t] = _allocate(s, allocators, t, nbytes[t])

    def free(t: int) -> None:
        offset = offsets[t]
        if offset is not None:
            allocators[pools[t]].free(offset, nbytes[t])

    walk_births(s.graph, allocate=allocate, free=free)
    return offsets, pools


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
    s: Setting, allocators: dict[str, BestFitAllocator], t: int, nbytes: int
) -> tuple[str, int | None]:
    for pool in s.pools_of[t]:
        allocator = allocators.get(pool)
        if allocator is None:
            return pool, None
        offset = allocator.allocate(nbytes)
        if offset is not None:
            return pool, offset
    tensor = s.graph.tensors[t]
    raise CapacityError(
        f"first-touch: tensor {tensor.name!r} ({format_bytes(nbytes)}) finds no free block in any "
        f"pool it may live in ({', '.join(s.pools_of[t])}) at kernel "
        f"#{int(s.graph.liveness.first[t])}",
        hint="give the slow pool more capacity (or none, for unbounded)",
    )
