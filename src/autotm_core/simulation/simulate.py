"""Predict what a plan costs: step time, memory over time, traffic between pools.

The model (the one every planner optimises):

- kernel ``k`` runs in ``costs.seconds_all`` of its configuration ``plan.configs[k]``;
- synchronous moves before ``k`` block: they add their copy time at the sync bandwidth;
- asynchronous moves overlap kernels on copy streams: one per copy channel of the memory
  system (:attr:`~autotm_core.memory.MemorySystem.link_channels`: one engine shared by
  every link that is not duplex, one per duplex link). A stream runs its copies in
  flight earliest ``until`` first (ties in issue order: by kernel, then plan order; a
  copy issued at a kernel's start takes over from one due later), at the async
  bandwidth, only while kernels run (synchronous moves and reruns between kernels pause
  it); a running kernel's own reads and writes crossing a link that carries kernel
  traffic go first, the copies take the rest of the kernel's time. Kernel ``k + 1`` (or
  the end of the step) starts once kernel ``k`` has run, its traffic is done, and every
  copy with ``until == k + 1`` is done. Kernel
  ``k``'s effective time is from its start to then; for one-kernel copies
  (``until = k + 1``) that is max(its time, each channel's traffic and copies during it);
- a rerun before ``k`` blocks too: it adds its kernel's time with every tensor in the fastest
  pool (:func:`~autotm_core.costs.model.rerun_seconds`);
- step time = sum of effective kernel times + synchronous move times + rerun times;
- memory: the bytes of the residencies covering each kernel in each pool, plus the
  kernel's workspace in the fastest pool.

:func:`simulate` trusts the plan's semantics (verify it first with
:func:`autotm_core.plans.check_plan`) but refuses records it cannot place.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import attrs
import numpy as np

from autotm_core.arrays import FloatArray, IntArray
from autotm_core.costs.model import KernelCosts, rerun_seconds
from autotm_core.errors import PlanError, summarize_problems
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import encode_plan
from autotm_core.plans.model import MoveKind, Plan
from autotm_core.plans.verify_memory import plan_capacities


class Engine(enum.Enum):
    """Which implementation of the simulation loop runs."""

    NUMBA = "numba"
    """The compiled loop (:mod:`autotm_core.simulation.kernels`)."""
    REFERENCE = "reference"
    """The plain-Python loop (:mod:`autotm_core.simulation.reference`); slow, for tests."""


@attrs.frozen(slots=True, eq=False)
class Simulation:
    """What a plan is predicted to cost; arrays are indexed by kernel or pool position."""

    graph: str
    """Name of the graph simulated."""
    system: str
    """Name of the memory system simulated."""
    planner: str
    """Who made the plan."""
    kernel_names: tuple[str, ...]
    """Name of each kernel, in order."""
    pool_names: tuple[str, ...]
    """Name of each pool, fastest first."""
    capacities: tuple[int | None, ...]
    """Capacity of each pool the plan respects (``None``: unbounded)."""
    kernel_seconds: FloatArray
    """``(n_kernels,)`` run time of each kernel in its configuration (compute and memory)."""
    sync_seconds: FloatArray
    """``(n_kernels,)`` time of the synchronous moves just before each kernel."""
    async_seconds: FloatArray
    """``(n_kernels,)`` copy time of the asynchronous moves issued at each kernel."""
    effective_seconds: FloatArray
    """``(n_kernels,)`` time from each kernel's start until the next may start: its own time,
    its traffic on the copy streams, and the copies that must be complete before the next
    kernel (see the module doc); with one-kernel copies, max(kernel time, each copy
    channel's time during it)."""
    pool_nbytes: IntArray
    """``(n_pools, n_kernels)`` bytes in each pool at each kernel (workspace in the fastest)."""
    pair_nbytes: IntArray
    """``(n_pools, n_pools, 2)`` bytes moved from pool to pool; last axis sync, async."""
    pair_counts: IntArray
    """``(n_pools, n_pools, 2)`` number of moves from pool to pool; last axis sync, async."""
    rerun_seconds: FloatArray = attrs.field(factory=lambda: np.zeros(0))
    """``(n_kernels,)`` time of the reruns at the boundary before each kernel (each its
    kernel's time with every tensor in the fastest pool); empty: none."""

    @property
    def step_seconds(self) -> float:
        """Predicted time of the step: effective kernel times, synchronous moves and reruns."""
        return float(self.effective_seconds.sum() + self.sync_seconds.sum()
                     + self.rerun_seconds.sum())

    @property
    def n_kernels(self) -> int:
        """Number of kernels."""
        return len(self.kernel_seconds)

    @property
    def peak_nbytes(self) -> IntArray:
        """``(n_pools,)`` largest bytes in each pool over the program."""
        if not self.n_kernels:
            return np.zeros(len(self.pool_names), dtype=np.int64)
        return self.pool_nbytes.max(axis=1)

    @property
    def peak_kernels(self) -> IntArray:
        """``(n_pools,)`` first kernel where each pool reaches its peak (-1 with no kernels)."""
        if not self.n_kernels:
            return np.full(len(self.pool_names), -1, dtype=np.int64)
        return self.pool_nbytes.argmax(axis=1)

    @property
    def moved_nbytes(self) -> dict[tuple[str, str], int]:
        """Bytes moved per (source, target) pool pair that saw any move, both kinds together."""
        return self._per_pair(self.pair_nbytes)

    @property
    def move_counts(self) -> dict[tuple[str, str], int]:
        """Moves per (source, target) pool pair that saw any move, both kinds together."""
        return self._per_pair(self.pair_counts)

    @property
    def kind_nbytes(self) -> dict[MoveKind, int]:
        """Bytes moved per kind of move."""
        return {MoveKind.SYNC: int(self.pair_nbytes[..., 0].sum()),
                MoveKind.ASYNC: int(self.pair_nbytes[..., 1].sum())}

    @property
    def kind_counts(self) -> dict[MoveKind, int]:
        """Number of moves per kind."""
        return {MoveKind.SYNC: int(self.pair_counts[..., 0].sum()),
                MoveKind.ASYNC: int(self.pair_counts[..., 1].sum())}

    def _per_pair(self, table: IntArray) -> dict[tuple[str, str], int]:
        counts = self.pair_counts.sum(axis=2)
        names = self.pool_names
        return {
            (names[s], names[t]): int(table[s, t].sum())
            for s, t in zip(*np.nonzero(counts), strict=True)
        }


def simulate(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    costs: KernelCosts,
    *,
    engine: Engine = Engine.NUMBA,
) -> Simulation:
    """Predict the step time, memory over time and traffic of ``plan`` (see the module doc)."""
    arrays, problems = encode_plan(plan, graph, system)
    n = len(graph.kernels)
    a = arrays
    bad_spans = int(((a.res_first < 0) | (a.res_last >= n) | (a.res_first > a.res_last)).sum())
    if bad_spans:
        problems.append(f"{bad_spans} residencies do not span kernels inside 0..{n - 1}")
    bad_moves = int(((a.move_kernel < 0) | (a.move_kernel >= n)).sum())
    if bad_moves:
        problems.append(f"{bad_moves} moves happen at kernels outside 0..{n - 1}")
    early = a.move_async & ((a.move_until <= a.move_kernel) | (a.move_until > n))
    if early.any():
        problems.append(f"{int(early.sum())} async moves complete before a kernel outside "
                        f"their flight (until after the kernel issuing them, at most {n})")
    if not problems and (a.entry_pools < 0).any():
        problems.append("some kernel configurations name no pool")
    if costs.n_pools != len(system.pools):
        problems.append(f"the costs are for {costs.n_pools} pools, memory system "
                        f"{system.name!r} has {len(system.pools)}")
    if problems:
        raise PlanError(
            summarize_problems(f"cannot simulate the plan for graph {graph.name!r}", problems),
            problems=problems,
            hint="run 'python -m autotm_core verify' on the plan to see what is wrong",
        )
    kernel_seconds = np.asarray(costs.seconds_all(a.entry_pools), dtype=np.float64)
    if kernel_seconds.shape != (n,):
        raise PlanError(
            f"the costs give {kernel_seconds.shape} kernel times for graph {graph.name!r} "
            f"of {n} kernels",
            hint="the cost model was built for another graph; rebuild it for this one",
        )
    sync_bps, async_bps = copy_rates(system)
    nbytes = graph.liveness.nbytes
    channels = system.link_channels
    traffic = kernel_traffic_seconds(graph, system, a.entry_pools)
    loop = _loop(engine)
    sync, asyn, effective, pool_nbytes, pair_nbytes, pair_counts = loop(
        kernel_seconds,
        graph.liveness.workspace_nbytes,
        a.res_pool,
        a.res_first,
        a.res_last,
        nbytes[a.res_tensor],
        a.move_kernel,
        a.move_source,
        a.move_target,
        a.move_async,
        a.move_until,
        nbytes[a.move_tensor],
        sync_bps,
        async_bps,
        channels,
        traffic,
    )
    reruns = np.zeros(n)
    for k, b in zip(a.rerun_kernel.tolist(), a.rerun_before.tolist(), strict=True):
        reruns[b] += rerun_seconds(costs, k, len(graph.kernels[k].tensors))
    return Simulation(
        graph=graph.name,
        system=system.name,
        planner=plan.planner,
        kernel_names=tuple(map(attrgetter("name"), graph.kernels)),
        pool_names=tuple(pool.name for pool in system.pools),
        capacities=tuple(plan_capacities(plan, system)),
        kernel_seconds=kernel_seconds,
        sync_seconds=sync,
        async_seconds=asyn,
        effective_seconds=effective,
        pool_nbytes=pool_nbytes,
        pair_nbytes=pair_nbytes,
        pair_counts=pair_counts,
        rerun_seconds=reruns,
    )


def copy_rates(system: MemorySystem) -> tuple[FloatArray, FloatArray]:
    """``(n_pools, n_pools)`` synchronous and asynchronous copy rates between pools, in bytes
    per second (infinite on the diagonal)."""
    n_pools = len(system.pools)
    sync_bps = np.full((n_pools, n_pools), np.inf)
    async_bps = np.full((n_pools, n_pools), np.inf)
    for s in range(n_pools):
        for t in range(n_pools):
            if s != t:
                link = system.link(s, t)
                sync_bps[s, t] = link.sync_bytes_per_second
                async_bps[s, t] = link.async_bytes_per_second
    return sync_bps, async_bps


def kernel_traffic_seconds(graph: Graph, system: MemorySystem,
                           entry_pools: IntArray) -> FloatArray:
    """``(n_kernels, n_channels)`` seconds each kernel's own reads and writes keep each copy
    channel busy, the entries of its tensors used from ``entry_pools`` (zeros unless a link
    carries kernel traffic, :attr:`~autotm_core.memory.CopyLink.kernel_traffic`)."""
    live = graph.liveness
    channels = system.link_channels
    n_channels = int(channels.max()) + 1
    out = np.zeros((len(graph.kernels), n_channels))
    reads, writes = system.kernel_traffic_seconds_per_byte()
    if not (reads.any() or writes.any()):
        return out
    pools = np.asarray(entry_pools, dtype=np.int64)
    kernel_of = live.entry_kernels()
    nbytes = live.nbytes[live.kernel_tensors].astype(np.float64)
    remote = pools > 0
    into = np.where(remote, channels[pools, 0], 0)
    out_of = np.where(remote, channels[0, pools], 0)
    np.add.at(out, (kernel_of, into), np.where(live.kernel_reads, nbytes * reads[pools], 0.0))
    np.add.at(out, (kernel_of, out_of), np.where(live.kernel_writes, nbytes * writes[pools], 0.0))
    return out


def _loop(engine: Engine) -> Callable[..., tuple[Any, ...]]:
    if engine is Engine.REFERENCE:
        from autotm_core.simulation.reference import simulate_arrays

        return simulate_arrays
    from autotm_core.simulation.kernels import simulate_arrays

    return simulate_arrays
