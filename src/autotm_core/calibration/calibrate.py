"""Calibrate this machine: every allowed NUMA node measured, and a memory-system file for it.

:func:`calibrate` measures (:mod:`.measure`) each node's read and write
bandwidth and latency, the copy bandwidth between every ordered pair of nodes
(a node to itself included), synchronous and asynchronous, and the compute
rate. The compute rate and the read and write bandwidths are those of the kind
of kernels the system is to predict (:mod:`.rates`: the replay kernels by
default; ``--kernels torch`` the torch plugin's real kernels, whose fixed time
per kernel is measured too, :mod:`.overhead`). :func:`calibrated_system` turns
that into a :class:`~autotm_core.memory.MemorySystem`:

- several nodes: one pool per node, named ``node<N>``, fastest read first;
- one node: two pools on it, ``dram`` and ``slow``, with the same figures (the
  description says so): the mechanism of planning and running is exercised,
  but no placement can be faster than another.

Every pool but the last is bounded by its node's memory (``MemTotal``); the
last is unbounded. Planners set the fast pool's capacity (``--ratio``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import attrs

from autotm_core.calibration.rates import REPLAY, KernelRates, ReplayRates
from autotm_core.calibration.records import Calibration, LinkFigures, NodeFigures
from autotm_core.errors import UsageError
from autotm_core.executor.numa import last_level_cache_nbytes
from autotm_core.memory import CopyLink, MemorySystem, Pool
from autotm_core.units import format_bytes

logger = logging.getLogger(__name__)

MIB = 1 << 20
QUICK = {"repeat": 3, "chase_steps": 200_000, "iterations": 10_000_000,
         "cache_multiple": 4, "low": 32 * MIB, "high": 128 * MIB, "overhead_steps": 10}
"""Settings of ``--quick``: a few seconds."""
FULL = {"repeat": 7, "chase_steps": 2_000_000, "iterations": 50_000_000,
        "cache_multiple": 8, "low": 64 * MIB, "high": 512 * MIB, "overhead_steps": 30}
"""Default settings: steadier figures, still well under a minute."""

Progress = Callable[[int, int, str], None]
"""``progress(done, total, what)`` after each measurement."""


def buffer_size(*, quick: bool) -> int:
    """Bytes of each buffer: a multiple of the last-level cache, bounded (see QUICK, FULL)."""
    settings = QUICK if quick else FULL
    cache = last_level_cache_nbytes() or 32 * MIB
    return int(min(max(settings["cache_multiple"] * cache, settings["low"]), settings["high"]))


def calibrate(*, quick: bool = False, buffer_nbytes: int | None = None,
              progress: Progress | None = None, kernels: KernelRates | None = None
              ) -> Calibration:
    """Measure every allowed NUMA node of this machine for ``kernels`` (default: the replay
    kernels; see the module doc)."""
    from autotm_core.calibration import measure
    from autotm_core.calibration.overhead import measure_overhead
    from autotm_core.executor import ArenaRequest, Space
    from autotm_core.executor.numa import allowed_nodes, node_memory_nbytes
    from autotm_core.profiler.context import current_context

    rates = kernels if kernels is not None else ReplayRates()
    settings = QUICK if quick else FULL
    nbytes = buffer_nbytes if buffer_nbytes is not None else buffer_size(quick=quick)
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1 << 16:
        raise UsageError(f"buffer size {nbytes!r} is too small", hint="give 64 KiB or more")
    nbytes -= nbytes % 4096
    repeat, steps = int(settings["repeat"]), int(settings["chase_steps"])
    overhead_step = rates.overhead_step()  # first: a frontend that cannot run says so now
    nodes = allowed_nodes()
    total = 1 + 3 * len(nodes) + 2 * len(nodes) ** 2 + (overhead_step is not None)
    done = 0
    started = time.perf_counter()

    def step(what: str) -> None:
        nonlocal done
        done += 1
        logger.info("calibrated %s", what)
        if progress is not None:
            progress(done, total, what)

    flops = rates.compute_rate(quick=quick, repeat=repeat)
    step("compute")
    # the replay compute rounds overlap the asynchronous copies, whatever the kernels
    replay_flops = (flops if rates.name == REPLAY else
                    measure.compute_rate(iterations=int(QUICK["iterations"]), repeat=1))
    requests = [ArenaRequest(f"{n}{half}", nbytes, n) for n in nodes for half in "ab"]
    figures, links = [], []
    with Space(requests) as space:
        buffers = {name: arena.memory for name, arena in space.arenas.items()}
        for n in nodes:
            read = rates.read_rate(buffers[f"{n}a"], repeat=repeat)
            step(f"node {n} read")
            write = rates.write_rate(buffers[f"{n}a"], repeat=repeat)
            step(f"node {n} write")
            wait = measure.latency(buffers[f"{n}b"], steps=steps, repeat=repeat)
            step(f"node {n} latency")
            figures.append(NodeFigures(n, node_memory_nbytes(n), read, write, wait))
        for s in nodes:
            for t in nodes:
                source, target = buffers[f"{s}a"], buffers[f"{t}b"]
                sync = measure.sync_copy_rate(source, target, repeat=repeat)
                step(f"copy {s}->{t}")
                asyn = measure.async_copy_rate(source, target, repeat=repeat,
                                               flops_per_second=replay_flops,
                                               sync_bytes_per_second=sync)
                step(f"async copy {s}->{t}")
                links.append(LinkFigures(s, t, sync, asyn))
    context = current_context()
    calibration = Calibration(
        nodes=tuple(figures), links=tuple(links), flops_per_second=flops, buffer_nbytes=nbytes,
        last_level_cache_nbytes=last_level_cache_nbytes(), repeat=repeat, chase_steps=steps,
        cpu=f"{context.cpu_model}, {context.threads} threads",
        seconds=time.perf_counter() - started, kernels=rates.name, method=rates.method,
    )
    if overhead_step is not None:
        graph, runner = overhead_step
        overhead = measure_overhead(graph, runner, calibrated_system(calibration),
                                    repeat=int(settings["overhead_steps"]))
        step(f"{len(graph.kernels)} {rates.name} kernels")
        calibration = attrs.evolve(calibration, kernel_overhead_seconds=overhead.seconds,
                                   overhead_kernels=overhead.kernels,
                                   seconds=time.perf_counter() - started)
    return calibration


def calibrated_system(calibration: Calibration, *, name: str = "calibrated") -> MemorySystem:
    """The memory system of a calibration (see the module doc for pools and capacities)."""
    by_node = {f.node: f for f in calibration.nodes}
    link_of = {(lk.source, lk.target): lk for lk in calibration.links}
    size = format_bytes(calibration.buffer_nbytes)
    command = "calibrate" + ("" if calibration.kernels == REPLAY
                             else f" --kernels {calibration.kernels}")
    method = (f"measured by 'python -m autotm_core {command}': {calibration.repeat} timed "
              f"repetitions (median) over buffers of {size} bound to each node; "
              f"{calibration.method}; copies by one thread as the executor's moves, "
              f"asynchronous ones on a second thread while the first computes (times are the "
              f"copying thread's CPU time); latency by pointer chasing")
    if calibration.overhead_kernels:
        method += (f"; a fixed {calibration.kernel_overhead_seconds * 1e6:.2f} us per kernel: "
                   f"what a step of {calibration.overhead_kernels} small {calibration.kernels} "
                   "kernels took beyond the roofline at these rates, run as 'run' runs a plan")
    if len(by_node) == 1:
        (only,) = by_node.values()
        placed = [("dram", only), ("slow", only)]
        description = (f"this machine ({calibration.cpu}) has one NUMA node: pools 'dram' and "
                       f"'slow' are both node {only.node}, with the same measured speeds, so no "
                       "placement can be faster than another")
    else:
        ordered = sorted(by_node.values(), key=lambda f: -f.read_bytes_per_second)
        placed = [(f"node{f.node}", f) for f in ordered]
        description = (f"this machine ({calibration.cpu}): one pool per NUMA node, fastest "
                       f"read first")
    pools = []
    for i, (pool_name, f) in enumerate(placed):
        bounded = i < len(placed) - 1
        pools.append(Pool(pool_name, f.memory_nbytes if bounded else None,
                          f.read_bytes_per_second, f.write_bytes_per_second, f.latency_seconds,
                          numa_node=f.node))
    copies = []
    for a, fa in placed:
        for b, fb in placed:
            if a != b:
                lk = link_of[fa.node, fb.node]
                copies.append(CopyLink(a, b, lk.sync_bytes_per_second, lk.async_bytes_per_second))
    return MemorySystem(name=name, pools=tuple(pools), links=tuple(copies),
                        flops_per_second=calibration.flops_per_second, description=description,
                        source=method,
                        kernel_overhead_seconds=calibration.kernel_overhead_seconds)
