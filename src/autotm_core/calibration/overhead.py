"""The fixed time of a kernel: a small step of real kernels run through the executor's loop.

A framework's kernel takes microseconds however little it computes (PyTorch's
dispatch, the out= variant's checks, the views over the arenas), and the
executor's loop adds its time marks around each kernel. The roofline has no
term for either unless the system says so (``kernel_overhead_seconds``). To
measure it, a small step of the kind's kernels (the torch plugin's: a two-layer
MLP's training step with Adam, 90 kernels of a few dozen bytes) is planned with
every tensor in the fastest pool and run as ``run`` runs it; what its step takes
on the CPU (the executor's on-CPU time: time other processes take the core away
is left out, as everywhere in a calibration) beyond the roofline's prediction at
the rates just measured, per kernel, is the fixed time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from autotm_core.executor import KernelRunner
    from autotm_core.ir import Graph
    from autotm_core.memory import MemorySystem


@attrs.frozen(kw_only=True)
class Overhead:
    """The fixed time per kernel, and what it was measured on."""

    seconds: float
    """Seconds per kernel beyond the roofline's prediction (0 when the step took less)."""
    kernels: int
    """Kernels of the step run."""
    measured_step_seconds: float
    """Median on-CPU time of the step's timed repetitions (the executor's
    ``on_cpu_step_seconds``: time other processes took the core away is not in it, as in
    every figure of a calibration)."""
    predicted_step_seconds: float
    """The roofline's time of the step on the system without a fixed time per kernel."""


def measure_overhead(graph: Graph, runner: KernelRunner, system: MemorySystem, *,
                     repeat: int) -> Overhead:
    """Run ``graph`` with ``runner``, every tensor in ``system``'s fastest pool (every pool
    unbounded, its arena as large as the step uses), ``repeat`` timed steps after one
    warm-up; the fixed time per kernel that makes the roofline's prediction of ``system``
    (with none) the step's on-CPU time."""
    from autotm_core.baselines.all_fast import all_fast
    from autotm_core.executor import execute

    # unbounded pools: the executor packs the residencies itself, in arenas as large as used
    plain = attrs.evolve(system, kernel_overhead_seconds=0.0, pools=tuple(
        attrs.evolve(pool, capacity_nbytes=None) for pool in system.pools))
    plan = all_fast(graph, plain)
    report = execute(plan, graph, plain, kernels=runner, repeat=repeat, fit_machine=True)
    measured, predicted = report.on_cpu_step_seconds, report.predicted_step_seconds
    n = max(1, len(graph.kernels))
    return Overhead(seconds=max(0.0, (measured - predicted) / n), kernels=len(graph.kernels),
                    measured_step_seconds=measured, predicted_step_seconds=predicted)


__all__ = ["Overhead", "measure_overhead"]
