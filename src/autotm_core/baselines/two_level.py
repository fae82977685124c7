"""2LM (Intel's Memory Mode): the fast pool as a hardware cache in front of the slow pool.

Every tensor lives in the slow pool (the plan is all-slow, with the addresses a
first-touch allocator gives the tensors in one address space); the predicted
time comes from a cache simulation over the program's accesses. For each kernel
in order, the lines of each tensor it touches (inputs first) go through a cache
of the fast pool's capacity: ``line_nbytes`` lines (4 KiB pages by default, for
speed; 64 for hardware lines), ``ways`` per set with LRU (1: direct-mapped, as
the hardware). Costs, per kernel, in the roofline's form::

    memory   = hit bytes read / fast read bw + hit bytes written / fast write bw
             + read-miss bytes / slow read bw (+ their writes at fast write bw)
             + write-miss bytes / fast write bw  (a write-only miss fills nothing)
             + written-back dirty lines / slow write bw
             + workspace at fast bandwidth
    latency  = per tensor: the slow pool's if any of its lines missed, else the fast pool's
    seconds  = max(compute, memory) + latency

Compute is the roofline's (:func:`autotm_core.costs.roofline_costs`). By
default the cache is warmed by one pass of the step first, so the counts are
those of a training loop's steady state. Kernel workspace is not simulated: it
is charged at fast bandwidth, as in the roofline.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import numpy as np

from autotm_core.arrays import FloatArray, IntArray
from autotm_core.baselines.common import Setting, check_static_fits, setting, static_plan
from autotm_core.baselines.first_touch import address_layout
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import CapacityError, UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan
from autotm_core.units import PAGE_NBYTES, format_bytes

logger = logging.getLogger(__name__)

PLANNER = "baseline/2lm"


@attrs.frozen(slots=True, eq=False)
class CacheResult:
    """What the 2LM cache model predicts for one step."""

    kernel_seconds: FloatArray
    """``(n_kernels,)`` predicted time of each kernel."""
    line_nbytes: int
    """Cache line size."""
    ways: int
    """Lines per set (1: direct-mapped)."""
    cache_nbytes: int | None
    """Capacity of the cache (the fast pool's limit; ``None``: unbounded)."""
    accesses: int
    """Line accesses simulated (the measured pass)."""
    hits: int
    """Accesses that found their line in the cache."""
    read_misses: int
    """Misses filled from the slow pool."""
    write_misses: int
    """Write-only misses (allocated without a fill)."""
    writebacks: int
    """Dirty lines written back to the slow pool."""

    @property
    def predicted_seconds(self) -> float:
        """Predicted step time."""
        return float(self.kernel_seconds.sum())

    @property
    def hit_rate(self) -> float:
        """Fraction of line accesses that hit (1.0 when there are none)."""
        return self.hits / self.accesses if self.accesses else 1.0

    @property
    def slow_read_nbytes(self) -> int:
        """Bytes the cache read from the slow pool (whole lines)."""
        return self.read_misses * self.line_nbytes

    @property
    def slow_write_nbytes(self) -> int:
        """Bytes the cache wrote back to the slow pool (whole lines)."""
        return self.writebacks * self.line_nbytes

    def attributes(self) -> dict[str, object]:
        """The facts a plan records (JSON values)."""
        return {
            "predicted_seconds": self.predicted_seconds,
            "hit_rate": self.hit_rate,
            "line_nbytes": self.line_nbytes,
            "ways": self.ways,
            "cache_nbytes": self.cache_nbytes,
            "accesses": self.accesses,
            "hits": self.hits,
            "read_misses": self.read_misses,
            "write_misses": self.write_misses,
            "writebacks": self.writebacks,
            "slow_read_nbytes": self.slow_read_nbytes,
            "slow_write_nbytes": self.slow_write_nbytes,
        }


def access_stream(
    graph: Graph, offsets: dict[int, int], line_nbytes: int
) -> tuple[IntArray, IntArray]:
    """First line and number of lines of every entry (``liveness.kernel_tensors`` order)."""
    live = graph.liveness
    address = np.zeros(len(graph.tensors), dtype=np.int64)
    for t, offset in offsets.items():
        address[t] = offset
    tensors = live.kernel_tensors
    start = address[tensors]
    nbytes = live.nbytes[tensors]
    first_line = start // line_nbytes
    n_lines = np.where(nbytes > 0, (start + nbytes - 1) // line_nbytes - first_line + 1, 0)
    return first_line, n_lines.astype(np.int64)


def cache_model(
    graph: Graph,
    system: MemorySystem,
    *,
    cache_nbytes: int | None,
    line_nbytes: int = PAGE_NBYTES,
    ways: int = 1,
    warm: bool = True,
    reference: bool = False,
    offsets: dict[int, int] | None = None,
) -> CacheResult:
    """Simulate the step through a cache of ``cache_nbytes`` in front of the slow pool.

    ``offsets`` are the tensors' addresses (default: :func:`address_layout`);
    ``reference=True`` runs the plain-Python loop instead of the compiled one (tests).
    """
    from autotm_core.costs.roofline import COMPUTE_TERM, MEMORY_TERM, roofline_costs

    if isinstance(line_nbytes, bool) or line_nbytes < 1 or isinstance(ways, bool) or ways < 1:
        raise UsageError(
            f"cache line of {line_nbytes} bytes with {ways} way(s): both must be at least 1",
            hint="e.g. --line-size 4KiB (pages) or 64 (hardware lines), --ways 1 (direct-mapped)",
        )
    live = graph.liveness
    if offsets is None:
        offsets = address_layout(graph)
    first_line, n_lines = access_stream(graph, offsets, line_nbytes)
    top_line = int((first_line + n_lines).max(initial=1))
    n_sets = top_line if cache_nbytes is None else cache_nbytes // (line_nbytes * ways)
    if n_sets < 1:
        short = line_nbytes * ways - (cache_nbytes or 0)
        raise CapacityError(
            f"2lm: a cache of {format_bytes(cache_nbytes or 0)} (pool {system.fast.name!r}) holds "
            f"no set of {ways} line(s) of {format_bytes(line_nbytes)}: {short} bytes short",
            hint="give the fast pool more capacity, or use smaller lines or fewer ways",
        )
    # Sets beyond the highest line used change nothing: each line already has a set of its own.
    n_sets = min(n_sets, top_line)
    counts = _simulate(first_line, n_lines, live.kernel_reads, live.kernel_writes, n_sets, ways,
                       warm=warm, reference=reference)
    hits, read_misses, write_misses, writebacks = counts
    costs = roofline_costs(graph, system)
    fast, slow = system.fast, system.slow
    nbytes = live.nbytes[live.kernel_tensors].astype(np.float64)
    per_line = np.divide(nbytes, n_lines, out=np.zeros_like(nbytes), where=n_lines > 0)
    reads, writes = live.kernel_reads, live.kernel_writes
    fast_write = writes / fast.write_bytes_per_second
    entry_memory = (
        hits * per_line * (reads / fast.read_bytes_per_second + fast_write)
        + read_misses * per_line * (1 / slow.read_bytes_per_second + fast_write)
        + write_misses * per_line / fast.write_bytes_per_second
        + writebacks * line_nbytes / slow.write_bytes_per_second
    )
    missed = read_misses + write_misses > 0
    entry_latency = np.where(missed, slow.latency_seconds, fast.latency_seconds)
    owner = live.entry_kernels()
    # weighted counts are float64 (the stubs say intp): astype only retypes, it copies nothing
    memory = np.bincount(owner, weights=entry_memory, minlength=live.n_kernels).astype(
        np.float64, copy=False)
    latency = np.bincount(owner, weights=entry_latency, minlength=live.n_kernels).astype(
        np.float64, copy=False)
    compute = costs.constants[:, COMPUTE_TERM]  # latency sits in the coefficients, not here
    workspace = costs.constants[:, MEMORY_TERM]
    seconds = np.maximum(compute, memory + workspace) + latency
    return CacheResult(
        kernel_seconds=seconds,
        line_nbytes=line_nbytes,
        ways=ways,
        cache_nbytes=cache_nbytes,
        accesses=int(n_lines.sum()),
        hits=int(hits.sum()),
        read_misses=int(read_misses.sum()),
        write_misses=int(write_misses.sum()),
        writebacks=int(writebacks.sum()),
    )


def _simulate(first_line, n_lines, reads, writes, n_sets, ways, *, warm, reference):
    from autotm_core.baselines import cache_kernels

    passes = 2 if warm else 1
    if reference:
        sets = None
        for _ in range(passes):
            *counts, sets = cache_kernels.reference_cache(
                first_line.tolist(), n_lines.tolist(), reads.tolist(), writes.tolist(),
                n_sets, ways, sets,
            )
        return tuple(np.asarray(c, dtype=np.int64) for c in counts)
    tags, dirty, stamps = cache_kernels.new_state(n_sets, ways)
    clock = 0
    for _ in range(passes):
        *counts, clock = cache_kernels.run_cache(first_line, n_lines, reads, writes, n_sets, ways,
                                                 tags, dirty, stamps, clock)
    return tuple(counts)


def two_level_memory(graph: Graph, system: MemorySystem, **options: Any) -> Plan:
    """The 2LM plan: all-slow residencies with addresses; the cache model's facts in its
    attributes (``options`` as :func:`two_level_plan` takes them). Its step time is the
    cache model's (:func:`two_level_plan` gives the whole :class:`CacheResult`)."""
    return two_level_plan(graph, system, **options)[0]


def two_level_plan(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    line_nbytes: int = PAGE_NBYTES,
    ways: int = 1,
    warm: bool = True,
    costs: KernelCosts | None = None,
) -> tuple[Plan, CacheResult]:
    """:func:`two_level_memory`'s plan and the whole :class:`CacheResult` (per-kernel times).

    The plan is all-slow: :class:`CapacityError` names the first bounded pool that
    cannot hold its tensors (the kernel, the shortfall), and :class:`PlanError` the
    first kernel whose cost table (``costs``, when partial) lacks that configuration.
    """
    s = setting(graph, system, fast_capacity_nbytes, costs)
    pools = s.slowest()
    check_static_fits(s, pools, what="2lm",
                      hint="allow those tensors in another pool (2LM keeps every tensor in "
                      "its slowest pool, behind the cache)")
    offsets = address_layout(graph)
    result = cache_model(graph, s.system, cache_nbytes=s.capacity_nbytes, line_nbytes=line_nbytes,
                         ways=ways, warm=warm, offsets=offsets)
    logger.info("2lm: hit rate %.3f, predicted %.6f s", result.hit_rate, result.predicted_seconds)
    plan = static_plan(s, pools, planner=PLANNER, offsets=_slow_offsets(s, pools, offsets),
                       attributes={**result.attributes(), "warm": warm})
    return plan, result


def _slow_offsets(s: Setting, pools: IntArray, offsets: dict[int, int]) -> dict[int, int | None]:
    """The layout's addresses of the tensors in the slowest pool, when they lie inside it.

    The layout spans every tensor of the program (the cache sees one address space);
    when the slow pool is bounded and the layout reaches past its end, the plan keeps
    no addresses there (its capacity is checked in aggregate) rather than invalid ones.
    """
    slow = len(s.system.pools) - 1
    here = [t for t in offsets if pools[t] == slow]
    capacity = s.system.slow.capacity_nbytes
    nbytes = s.graph.liveness.nbytes
    if capacity is not None and any(offsets[t] + int(nbytes[t]) > capacity for t in here):
        logger.info("2lm: the address layout reaches past pool %r; its residencies get none",
                    s.system.slow.name)
        return {}
    return {t: offsets[t] for t in here}
