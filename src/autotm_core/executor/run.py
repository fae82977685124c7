"""Execute a plan on real memory: arenas per pool, replay kernels, real copies, measured time.

:func:`execute` verifies the plan, lays it out (:mod:`~autotm_core.executor.layout`),
makes one NUMA-bound, pre-faulted arena per pool (:mod:`~autotm_core.executor.arena`),
then runs the step ``repeat`` times after one untimed warm-up: ``repeat + 1`` steps
of a training loop, each starting where the previous one ended (only the inputs'
data is written between steps; nothing is re-initialised or copied). Per kernel, in
order: wait for the asynchronous copies that must be done before it, do its
synchronous copies, submit its asynchronous copies to the copy thread, run its
replay kernel. Each phase is timed with ``time.perf_counter_ns``; the report
gives medians over the repetitions next to the simulator's prediction. Each
step's main-thread CPU time (``time.thread_time_ns``) is kept too: with its
blocked waits for copies added, it is the step's time with the cores to itself,
which other processes taking the cores away do not lengthen. Finally
the bytes the kernels read in every step are compared with a one-pool replay of
as many steps of the graph (:mod:`~autotm_core.executor.check`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import UsageError
from autotm_core.executor.arena import Space
from autotm_core.executor.copy import CopyThread, copy_for
from autotm_core.executor.layout import Layout, plan_layout
from autotm_core.executor.program import Program, arrival, build_program, link
from autotm_core.executor.records import ExecutionReport, PoolRun
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan

logger = logging.getLogger(__name__)

Bytes = npt.NDArray[np.uint8]
ViewOf = Callable[[str, str, int], Bytes]
"""``view(tensor, pool, kernel)``: bytes of ``tensor``'s residency in ``pool`` at ``kernel``."""


def execute(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    *,
    repeat: int = 5,
    costs: KernelCosts | None = None,
    bind: Mapping[str, int] | None = None,
    arena_nbytes: Mapping[str, int] | None = None,
    flops_scale: float = 1.0,
    check: bool = True,
    fit_machine: bool = False,
    progress: Callable[[int, int], None] | None = None,
    after_kernel: Callable[[int, ViewOf], None] | None = None,
) -> ExecutionReport:
    """Run ``plan`` for real and report measured against predicted time (see the module doc).

    ``bind`` maps pool names to NUMA nodes, overriding the system's; ``arena_nbytes``
    shrinks bounded pools' arenas, and ``fit_machine`` fits both to this machine (see
    :func:`~autotm_core.executor.layout.plan_layout`);
    ``flops_scale`` scales every kernel's compute; ``progress(done, total)`` is called after each
    repetition; ``after_kernel(k, view)`` runs after kernel ``k`` of every
    repetition (for inspection and fault injection; it is inside the timed loop).
    """
    from autotm_core.costs.flops import estimate_flops
    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.executor import replay
    from autotm_core.plans.verify import check_plan

    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat {repeat!r} must be a whole number >= 1", hint="e.g. --repeat 5")
    if not flops_scale >= 0:
        raise UsageError(f"flops scale {flops_scale!r} must be >= 0", hint="e.g. 1 or 0.01")
    check_plan(plan, graph, system)
    costs = costs if costs is not None else resolve_costs(graph, system)
    predicted, predicted_step = prediction(plan, graph, system, costs)
    layout = plan_layout(plan, graph, system, bind=bind, arena_nbytes=arena_nbytes,
                         fit_machine=fit_machine)
    program = build_program(plan, graph, layout, flops=estimate_flops(graph).flops,
                            flops_scale=flops_scale)
    n = len(graph.kernels)
    with Space(layout.requests) as space, CopyThread() as copier:
        bases = np.array([space.arenas[r.name].base for r in layout.requests], dtype=np.int64)
        loop = _Loop(program, space, copier, bases, repeat + 1)
        view = _viewer(plan, graph, layout, space) if after_kernel is not None else None
        loop.once(replay, 0, None, None)  # warm-up: compiled code loaded, caches and TLB warm
        samples = np.zeros((repeat, 4, n), dtype=np.int64)
        steps = np.zeros(repeat, dtype=np.float64)
        on_cpu = np.zeros(repeat, dtype=np.float64)
        copy_seconds = np.zeros(repeat, dtype=np.float64)
        for rep in range(repeat):
            before = copier.copy_ns
            hook = (None if after_kernel is None or view is None
                    else (lambda k: after_kernel(k, view)))
            steps[rep], on_cpu[rep] = loop.once(replay, rep + 1, samples[rep], hook)
            copy_seconds[rep] = (copier.copy_ns - before) * 1e-9
            if progress is not None:
                progress(rep + 1, repeat)
        final_values = replay.digests(space.bytes, space.words, link(program.final, bases))
    final = {name: int(v) for name, v in zip(program.final_tensors, final_values, strict=True)}
    result = None
    if check:
        from autotm_core.executor.check import compare, replay_one_pool

        expected, expected_final = replay_one_pool(graph, steps=repeat + 1)
        result = compare(loop.digests, final, expected, expected_final)
        if not result.matches:
            logger.warning("the run's bytes differ from the one-pool replay (first at kernel "
                           "%d of step %d)", result.first_kernel, result.step)
    median = np.median(samples, axis=0) * 1e-9
    pools = tuple(PoolRun(r.name, r.node, r.nbytes, space_binding.policy_nodes,
                          space_binding.sampled_pages, space_binding.pages_on_node)
                  for r, space_binding in zip(layout.requests, loop.bindings, strict=True))
    notes = list(layout.notes)
    same = len({r.node for r in layout.requests}) == 1
    if same:
        notes.append(f"every pool is bound to NUMA node {layout.requests[0].node}: the pools are "
                     "the same memory, so speed differences between them cannot show")
    return ExecutionReport(
        graph=graph.name, system=system.name, planner=plan.planner, repeat=repeat,
        kernel_names=tuple(k.name for k in graph.kernels), pools=pools, notes=tuple(notes),
        same_memory=same, kernel_seconds=median[3], sync_seconds=median[1],
        wait_seconds=median[0], measured_seconds=np.median(samples.sum(axis=1), axis=0) * 1e-9,
        step_seconds=steps, step_on_cpu_seconds=on_cpu,
        predicted_seconds=predicted, predicted_step_seconds=predicted_step,
        sync_nbytes=sum(c.nbytes for cs in program.sync for c in cs),
        async_nbytes=sum(c.nbytes for cs in program.asynchronous for c in cs),
        async_copy_seconds=float(np.median(copy_seconds)), digests=loop.digests[-1],
        final_digests=final, check=result,
    )


def prediction(
    plan: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts
) -> tuple[npt.NDArray[np.float64], float]:
    """What a run is compared with: the simulated time of each kernel (its synchronous
    copies and its effective time) and of the step."""
    from autotm_core.simulation import simulate

    sim = simulate(plan, graph, system, costs)
    return sim.sync_seconds + sim.effective_seconds, float(sim.step_seconds)


class _Loop:
    """The program linked to a space: views and addresses ready for the timed loop."""

    def __init__(
        self, program: Program, space: Space, copier: CopyThread, bases: npt.NDArray[np.int64],
        steps: int,
    ) -> None:
        memory = space.bytes

        def views(copies):
            return [(c.move, memory[bases[c.source[0]] + c.source[1]:][: c.nbytes],
                     memory[bases[c.target[0]] + c.target[1]:][: c.nbytes]) for c in copies]

        self.space, self.copier = space, copier
        self.ops = link(program.rows, bases)
        self.initial = link(program.initial, bases)
        self.arriving = link(program.arriving, bases)
        self.ptr = program.kernel_ptr.tolist()
        self.iterations = program.iterations.tolist()
        self.sync = [[(copy_for(t.nbytes), t, s) for _, s, t in views(cs)] for cs in program.sync]
        self.asynchronous = [views(cs) for cs in program.asynchronous]
        self.joins = [list(js) for js in program.joins]
        self.digests = np.zeros((steps, len(self.iterations)), dtype=np.uint64)  # per step
        self.bindings = [space.arenas[name].binding for name in space.arenas]

    def once(self, replay, step, samples, after) -> tuple[float, float]:
        """Step ``step`` of the loop; fills ``samples[(wait, sync, submit, kernel), k]`` in ns.

        Before step 0 every tensor existing before the step is written with its initial
        bytes; before a later one only the inputs, with that step's data: the rest is
        where the previous step left it. Returns the step's wall time and its on-CPU time
        (this thread's CPU time plus the wall time it spent blocked on the copy thread),
        in seconds.
        """
        memory, words, ops, copier = self.space.bytes, self.space.words, self.ops, self.copier
        replay.initialise(memory, words, self.initial if step == 0
                          else arrival(self.arriving, step))
        clock = time.perf_counter_ns
        run = replay.run_kernel
        ptr, iterations, joins, sync, asyn = (self.ptr, self.iterations, self.joins, self.sync,
                                              self.asynchronous)
        tickets: dict[int, int] = {}
        digests = self.digests[step]
        blocked = 0
        cpu_start, start = time.thread_time_ns(), clock()
        for k in range(len(iterations)):
            t0 = clock()
            for move in joins[k]:
                copier.wait(tickets[move])
            t1 = clock()
            blocked += t1 - t0
            for copy, target, source in sync[k]:
                copy(target, source)
            t2 = clock()
            for move, source, target in asyn[k]:
                tickets[move] = copier.submit(source, target)
            t3 = clock()
            digests[k] = run(memory, words, ops, ptr[k], ptr[k + 1], iterations[k])[0]
            t4 = clock()
            if samples is not None:
                samples[0, k], samples[1, k], samples[2, k], samples[3, k] = (
                    t1 - t0, t2 - t1, t3 - t2, t4 - t3)
            if after is not None:
                after(k)
        t0 = clock()
        copier.drain()
        end = clock()
        cpu = time.thread_time_ns() - cpu_start
        return (end - start) * 1e-9, (cpu + blocked + end - t0) * 1e-9


def _viewer(plan: Plan, graph: Graph, layout: Layout, space: Space) -> ViewOf:
    names = [r.name for r in layout.requests]

    def view(tensor: str, pool: str, kernel: int) -> Bytes:
        for i, r in enumerate(plan.residencies):
            if r.tensor == tensor and r.pool == pool and r.first <= kernel <= r.last:
                arena, offset = layout.residency_places[i]
                return space.arenas[names[arena]].view(offset, graph.tensor(tensor).nbytes)
        raise UsageError(f"tensor {tensor!r} has no residency in pool {pool!r} at kernel {kernel}")

    return view
