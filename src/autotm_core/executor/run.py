"""Execute a plan on real memory: one run loop, pluggable kernels, measured against predicted.

:func:`execute` verifies the plan, lays it out (:mod:`~autotm_core.executor.layout`),
resolves it into a :class:`~autotm_core.executor.Program`, and hands both to a
:class:`~autotm_core.executor.kernels.KernelRunner` (the replay kernels by default,
or a plugin's), which makes the memory the arenas live in. Then :class:`StepLoop`,
the one run loop every runner goes through, runs the step ``repeat`` times after
one untimed warm-up: ``repeat + 1`` steps, each starting with what the runner writes
before it (:meth:`~autotm_core.executor.kernels.KernelRunner.begin_step`). Per
kernel, in order: wait for the asynchronous copies that must be done before it, do
its synchronous copies, run the reruns at the boundary before it (the plan's
:class:`~autotm_core.plans.Rerun` records, with the same runner as the kernels), submit
its asynchronous copies, run the kernel. Each phase
is timed with the memory's marks; the report gives medians over the repetitions
next to the simulator's prediction. Each step's main-thread CPU time
(``time.thread_time_ns``) is kept too: with the time the thread was blocked on
copies added, it is the step's time with the cores to itself, which other processes
taking the cores away do not lengthen. The loop hashes what each kernel read (or
takes the kernels' own hashes) and every surviving tensor's final bytes, and the
runner checks the results against its reference. A rerun must read the bytes its kernel
read when it first ran in the same step: the loop hashes a rerun's reads as it does a
kernel's, and a rerun that read other bytes makes the check fail, named.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.costs.model import KernelCosts, rerun_seconds
from autotm_core.errors import UsageError
from autotm_core.executor.kernels import KernelRunner, Memory, RunSetup
from autotm_core.executor.layout import Layout, plan_layout
from autotm_core.executor.program import Copy, Program, build_program
from autotm_core.executor.records import ExecutionReport, RerunRun, ResultCheck
from autotm_core.executor.rows import READ
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan

logger = logging.getLogger(__name__)

ViewOf = Callable[[str, str, int], Any]
"""``view(tensor, pool, kernel)``: the region of ``tensor``'s residency in ``pool`` at
``kernel`` (a NumPy ``uint8`` view in NUMA memory)."""
PHASES = ("wait", "sync", "rerun", "submit", "kernel")
"""What the loop times before and in each kernel, in order."""
WAIT, SYNC, RERUN, SUBMIT, KERNEL = range(len(PHASES))
"""Positions of the phases in :data:`PHASES` (the loop's ``samples``)."""


def execute(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    *,
    kernels: KernelRunner | None = None,
    repeat: int = 5,
    costs: KernelCosts | None = None,
    bind: Mapping[str, int] | None = None,
    arena_nbytes: Mapping[str, int] | None = None,
    flops_scale: float = 1.0,
    fit_machine: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    after_kernel: Callable[[int, ViewOf], None] | None = None,
) -> ExecutionReport:
    """Run ``plan`` for real with ``kernels`` and report measured against predicted time (see
    the module doc).

    ``kernels`` defaults to the replay kernels checked against the one-pool replay
    (:class:`~autotm_core.executor.replay_kernels.ReplayKernels`). ``bind`` maps pool names
    to NUMA nodes, overriding the system's; ``arena_nbytes`` shrinks bounded pools' arenas;
    ``fit_machine`` fits both to this machine, and by default (``None``) does so for a
    built-in preset only (:func:`~autotm_core.executor.layout.fits_machine`);
    ``flops_scale`` scales every replay kernel's compute; ``progress(done, total)`` is called
    after each repetition; ``after_kernel(k, view)`` runs after kernel ``k`` of every
    repetition (for inspection and fault injection; it is inside the timed loop).
    """
    from autotm_core.costs.flops import estimate_flops
    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.executor.replay_kernels import ReplayKernels
    from autotm_core.plans.verify import check_plan

    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat {repeat!r} must be a whole number >= 1", hint="e.g. --repeat 5")
    if not flops_scale >= 0:
        raise UsageError(f"flops scale {flops_scale!r} must be >= 0", hint="e.g. 1 or 0.01")
    runner: KernelRunner = kernels if kernels is not None else ReplayKernels()
    check_plan(plan, graph, system)
    costs = costs if costs is not None else resolve_costs(graph, system)
    predicted, predicted_step, predicted_reruns = prediction(plan, graph, system, costs)
    layout = plan_layout(plan, graph, system, bind=bind, arena_nbytes=arena_nbytes,
                         fit_machine=fit_machine)
    program = build_program(plan, graph, layout, flops=estimate_flops(graph).flops,
                            flops_scale=flops_scale)
    if plan.reruns and not callable(getattr(runner, "run_rerun", None)):
        raise UsageError(
            f"the plan reruns {len(plan.reruns)} kernels, but the {runner.name!r} kernels "
            "cannot run a kernel again (they have no run_rerun)",
            hint="run it with kernels that rerun (the replay kernels do), or plan without "
            "recomputation",
        )
    memory = runner.open(RunSetup(plan, graph, system, layout, program))
    try:
        loop = StepLoop(runner, memory, program, steps=repeat + 1)
        if after_kernel is not None:
            view = _viewer(plan, graph, layout, memory)
            loop.after = lambda k: after_kernel(k, view)
        loop.run_step(0)  # the warm-up: code loaded, caches and TLB warm
        for rep in range(1, repeat + 1):
            loop.run_step(rep)
            if progress is not None:
                progress(rep, repeat)
        final = dict(zip(program.final_tensors, (int(v) for v in memory.digests(program.final)),
                         strict=True))
        done = runner.finish(digests=loop.digests, final_digests=final)
        arenas = memory.arenas_made()
    finally:
        memory.close()
    check = _with_reruns(done.check, loop.rerun_mismatch(), plan, graph)
    if check is not None and not check.matches:
        logger.warning("the run's results differ from %s (first at kernel %d of step %d)",
                       check.reference, check.first_kernel, check.step)
    samples = loop.samples[1:]
    median = np.median(samples, axis=0)
    rerun_median = np.median(loop.rerun_samples[1:], axis=0)
    notes = [*layout.notes, *done.notes]
    bound = {a.node for a in arenas if a.policy_nodes}
    same = len(bound) == 1 and all(a.policy_nodes for a in arenas)
    if same:
        notes.append(f"every pool is bound to NUMA node {bound.pop()}: the pools are the same "
                     "memory, so speed differences between them cannot show")
    return ExecutionReport(
        graph=graph.name, system=system.name, predicted_for=prediction_machine(system),
        kernels=runner.name, planner=plan.planner, repeat=repeat,
        kernel_names=tuple(k.name for k in graph.kernels), pools=arenas, notes=tuple(notes),
        same_memory=same, kernel_seconds=median[KERNEL], sync_seconds=median[SYNC],
        wait_seconds=median[WAIT], measured_seconds=np.median(samples.sum(axis=1), axis=0),
        step_seconds=loop.step_seconds[1:], step_on_cpu_seconds=loop.on_cpu_seconds[1:],
        predicted_seconds=predicted, predicted_step_seconds=predicted_step,
        sync_nbytes=sum(c.nbytes for cs in program.sync for c in cs),
        async_nbytes=sum(c.nbytes for cs in program.asynchronous for c in cs),
        async_copy_seconds=float(np.median(loop.copy_seconds[1:])),
        digests=loop.digests[-1 if runner.hashes_reads else 0], final_digests=final,
        check=check, rerun_seconds=median[RERUN], predicted_rerun_seconds=predicted_reruns,
        reruns=tuple(
            RerunRun(ops.kernel, ops.before, float(rerun_median[ops.rerun]),
                     rerun_seconds(costs, ops.kernel, len(graph.kernels[ops.kernel].tensors)))
            for ops in program.reruns),
    )


def _with_reruns(check: ResultCheck | None, mismatch: tuple[int, int] | None, plan: Plan,
                 graph: Graph) -> ResultCheck | None:
    """The runner's check, failed when a rerun read other bytes than its kernel did."""
    if mismatch is None:
        return check
    step, j = mismatch
    rerun = plan.reruns[j]
    detail = (f"reruns[{j}] (kernel {graph.kernels[rerun.kernel].name!r} again before "
              f"{graph.kernels[rerun.before].name!r}) read other bytes in step {step} than the "
              "kernel read when it first ran")
    if check is None:
        return ResultCheck(reference="each rerun's kernel as it first ran", matches=False,
                           first_kernel=rerun.kernel, step=step, detail=detail)
    return attrs.evolve(check, matches=False,
                        detail="; ".join(d for d in (check.detail, detail) if d))


def prediction_machine(system: MemorySystem) -> str:
    """Which machine a prediction on ``system`` describes, for the report."""
    from autotm_core.presets import is_preset

    if is_preset(system):
        return f"the {system.name} preset's machine (its published speeds), not this one"
    return f"the machine memory system {system.name!r} describes"


def prediction(
    plan: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts
) -> tuple[npt.NDArray[np.float64], float, npt.NDArray[np.float64]]:
    """What a run is compared with: the simulated time of each kernel (its synchronous
    copies, the reruns before it and its effective time), of the step, and of the reruns
    before each kernel."""
    from autotm_core.simulation import simulate

    sim = simulate(plan, graph, system, costs)
    reruns = (sim.rerun_seconds if len(sim.rerun_seconds)
              else np.zeros(len(graph.kernels), dtype=np.float64))
    return (sim.sync_seconds + reruns + sim.effective_seconds, float(sim.step_seconds),
            np.asarray(reruns, dtype=np.float64))


class StepLoop:
    """The run loop, in the shape of torch.fx's ``Interpreter``: :meth:`run_step` runs
    one step kernel by kernel through per-kernel methods (:meth:`join`, :meth:`copy`,
    :meth:`rerun`, :meth:`submit`, :meth:`run_kernel`), each the one place that phase
    happens (a subclass overrides one to change it); the kernels themselves (and their
    reruns) are the runner's, the copies the memory's. :func:`execute` drives it.

    ``samples[step, phase, k]`` (phases :data:`PHASES`), ``step_seconds``,
    ``on_cpu_seconds``, ``copy_seconds`` (each step's), ``digests[step, k]`` (the hash of
    what kernel ``k`` read), ``rerun_samples[step, r]`` and ``rerun_digests[step, r]`` (the
    time of rerun ``r`` of ``program.reruns`` and the hash of what it read) fill as steps run.
    """

    def __init__(
        self, runner: KernelRunner, memory: Memory, program: Program, *, steps: int
    ) -> None:
        def regions(copies: tuple[Copy, ...]) -> list[tuple[int, Any, Any]]:
            return [(c.move, memory.region(c.source[0], c.source[1], c.nbytes),
                     memory.region(c.target[0], c.target[1], c.nbytes)) for c in copies]

        self.runner, self.memory, self.program = runner, memory, program
        n = len(program.iterations)
        self.sync = [regions(cs) for cs in program.sync]
        self.asynchronous = [regions(cs) for cs in program.asynchronous]
        self.joins = [list(js) for js in program.joins]
        ptr = program.kernel_ptr
        rows = program.rows
        self.reads = [rows[ptr[k]:ptr[k + 1]][rows[ptr[k]:ptr[k + 1], 4] == READ]
                      for k in range(n)]
        self.reruns_before = [list(rs) for rs in program.reruns_before] or [[] for _ in range(n)]
        self.rerun_reads = [ops.rows[ops.rows[:, 4] == READ] for ops in program.reruns]
        self.tickets: dict[int, int] = {}
        self.blocked_ns = 0
        self.after: Callable[[int], None] | None = None
        """Called after each kernel of every timed step, inside it (inspection, fault
        injection); not in the warm-up."""
        self.samples = np.zeros((steps, len(PHASES), n), dtype=np.float64)
        self.step_seconds = np.zeros(steps, dtype=np.float64)
        self.on_cpu_seconds = np.zeros(steps, dtype=np.float64)
        self.copy_seconds = np.zeros(steps, dtype=np.float64)
        self.digests = np.zeros((steps, n), dtype=np.uint64)
        self.rerun_samples = np.zeros((steps, len(program.reruns)), dtype=np.float64)
        self.rerun_digests = np.zeros((steps, len(program.reruns)), dtype=np.uint64)
        self._step, self._hash_reads = 0, False
        self._rerun_marks: list[tuple[int, Any, Any]] = []

    def run_step(self, step: int) -> None:
        """Step ``step`` of the loop (0: the warm-up), timed into the loop's arrays."""
        memory, runner, mark = self.memory, self.runner, self.memory.mark
        hash_reads = step == 0 and not runner.hashes_reads
        self._step, self._hash_reads, self._rerun_marks = step, hash_reads, []
        after = self.after if step > 0 else None
        runner.begin_step(step)
        memory.finish()
        copied = memory.copy_seconds()
        self.tickets, self.blocked_ns = {}, 0
        digests, marks = self.digests[step], []
        cpu_start = time.thread_time_ns()
        start = mark()
        for k in range(len(self.sync)):
            m0 = mark()
            self.join(k)
            m1 = mark()
            self.copy(k)
            m2 = mark()
            if self.reruns_before[k]:
                self.rerun(k)
                m3 = mark()
            else:  # no rerun here: no mark either, so the phase is exactly 0
                m3 = m2
            self.submit(k)
            m4 = mark()
            if hash_reads:  # the warm-up is untimed: hashing here costs no measurement
                digests[k] = self.hash_reads(k)
                self.run_kernel(k)
            else:
                digests[k] = self.run_kernel(k)
            marks.append((m0, m1, m2, m3, m4, mark()))
            runner.after_kernel(k)
            if after is not None:
                after(k)
        held = time.perf_counter_ns()
        memory.finish()
        end = mark()
        memory.finish()
        self.blocked_ns += time.perf_counter_ns() - held
        cpu = time.thread_time_ns() - cpu_start
        seconds = memory.seconds
        samples = self.samples[step]
        for k, times in enumerate(marks):
            for phase in range(len(PHASES)):
                samples[phase, k] = seconds(times[phase], times[phase + 1])
        for r, m0, m1 in self._rerun_marks:
            self.rerun_samples[step, r] = seconds(m0, m1)
        self.step_seconds[step] = seconds(start, end)
        self.on_cpu_seconds[step] = (cpu + self.blocked_ns) * 1e-9
        self.copy_seconds[step] = memory.copy_seconds() - copied

    def join(self, k: int) -> None:
        """Wait for the asynchronous copies kernel ``k`` (or a rerun before it) must see done."""
        if self.joins[k]:
            held = time.perf_counter_ns()
            for move in self.joins[k]:
                self.memory.wait(self.tickets[move])
            self.blocked_ns += time.perf_counter_ns() - held

    def copy(self, k: int) -> None:
        """The synchronous moves before kernel ``k``."""
        for _, source, target in self.sync[k]:
            self.memory.copy(source, target)

    def rerun(self, k: int) -> None:
        """The reruns at the boundary before kernel ``k``, in the plan's order, each timed and
        the hash of what it read kept (taken by the loop in the warm-up for runners that do
        not hash their reads)."""
        mark, runner = self.memory.mark, self.runner
        for r in self.reruns_before[k]:
            m0 = mark()
            if self._hash_reads:
                self.rerun_digests[self._step, r] = self._hash(self.rerun_reads[r])
                runner.run_rerun(r)
            else:
                self.rerun_digests[self._step, r] = runner.run_rerun(r)
            self._rerun_marks.append((r, m0, mark()))

    def submit(self, k: int) -> None:
        """Start the asynchronous moves during kernel ``k``."""
        for move, source, target in self.asynchronous[k]:
            self.tickets[move] = self.memory.submit(source, target)

    def run_kernel(self, k: int) -> int:
        """Kernel ``k`` itself (the runner's); the hash of what it read, if the runner
        computes one."""
        return self.runner.run_kernel(k)

    def hash_reads(self, k: int) -> int:
        """A hash of the bytes kernel ``k`` is about to read, taken through the memory."""
        return self._hash(self.reads[k])

    def rerun_mismatch(self) -> tuple[int, int] | None:
        """The first (step, rerun) whose reads differ from its kernel's in that step (only
        the warm-up's are known for runners that do not hash their reads), else ``None``."""
        steps = len(self.digests) if self.runner.hashes_reads else 1
        for step in range(steps):
            for ops in self.program.reruns:
                if self.rerun_digests[step, ops.rerun] != self.digests[step, ops.kernel]:
                    return step, ops.rerun
        return None

    def _hash(self, rows: Any) -> int:
        row_digests = np.ascontiguousarray(self.memory.digests(rows), dtype=np.uint64)
        return int.from_bytes(hashlib.blake2b(row_digests.tobytes(), digest_size=8).digest(),
                              "little")


def _viewer(plan: Plan, graph: Graph, layout: Layout, memory: Memory) -> ViewOf:
    def view(tensor: str, pool: str, kernel: int) -> Any:
        for i, r in enumerate(plan.residencies):
            if r.tensor == tensor and r.pool == pool and r.first <= kernel <= r.last:
                arena, offset = layout.residency_places[i]
                return memory.region(arena, offset, graph.tensor(tensor).nbytes)
        raise UsageError(f"tensor {tensor!r} has no residency in pool {pool!r} at kernel {kernel}")

    return view
