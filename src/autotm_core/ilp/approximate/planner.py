"""Plans for very large graphs within a time budget, with a stated worst-case gap.

:func:`plan_approximate` builds the one formulation
(:func:`~autotm_core.ilp.formulation.build_program`), fixes what the exact
reductions allow (:mod:`autotm_core.ilp.reductions`) and plans the program a
stretch of ``stretch_kernels`` kernels at a time
(:mod:`autotm_core.ilp.approximate.rolling`; a graph no longer than one stretch is
one relax-and-fix of the whole model). The LP prices of those stretches start a
Lagrangian relaxation of the whole model
(:mod:`autotm_core.ilp.approximate.lagrangian`), whose value is a lower bound. The
asynchronous formulation, whose stretches' LP relaxations do not pay, improves the
fastest held plan (the synchronous stage's) a window of kernels at a time instead
(:mod:`autotm_core.ilp.neighbourhood`); its Lagrangian relaxation starts from zero
prices, and the whole model is not solved after.
When that bound does not already prove the plan within ``relative_gap``, graphs
of up to ``full_solve_kernels`` kernels hand the whole model to the solver for
what is left of the budget, started from the stretch plan. It returns the best
verified plan with the best lower bound found: the solver's, the Lagrangian one,
or every kernel at its fastest. Never worse than the baseline the formulation
should beat (first-touch's plan for the static formulation, greedy's for the
others) or any start plan offered that the formulation allows (a static plan has
no moves, a synchronous one no asynchronous moves): they are candidates too.

Every solve runs on the solver given, which must declare integer variables and
row duals (the stretches' LP prices start the bound) in its
:class:`~autotm_core.solvers.SolverCapabilities`; another is refused before any
work with one :class:`~autotm_core.errors.UsageError`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import AutotmError, PlanError, SolverError
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.reductions import Reductions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import MoveKind, Plan
from autotm_core.simulation import Simulation
from autotm_core.solvers.base import DEFAULT_SOLVER, Solver

logger = logging.getLogger(__name__)

MIN_SOLVE_SECONDS = 1.0
"""Below this much budget left after building, the solver is not started (the baseline's
plan)."""

STRETCH_KERNELS = 1000
"""Kernels planned at once by the rolling planner."""
MARGIN_KERNELS = 250
"""Kernels after each stretch that its slice sees, relaxed."""
BOUND_RESERVE_SECONDS = 6.0
BOUND_RESERVE_SHARE = 0.1
"""The rolling planner stops this much (the smaller) before the budget's end, leaving time
for the bound, decoding and verifying."""
FINISH_SECONDS = 2.0
"""The bound stops this long before the budget's end: decoding, verifying and simulating
the plan take about a second at 20,000 kernels."""
LAGRANGIAN_STEPS = 1000
"""Most subgradient steps of the Lagrangian bound (the budget usually stops it first)."""
FULL_SOLVE_LAGRANGIAN_STEPS = 100
"""As many, when the whole model is solved afterwards (it gets the rest of the budget)."""
FULL_SOLVE_KERNELS = 6000
"""Up to this many kernels, the whole model is solved after the rolling plan, started from it."""


@attrs.frozen(kw_only=True)
class ApproximatePlanResult:
    """What :func:`plan_approximate` produced."""

    plan: Plan
    """The plan returned; it passed the verifier (and has no moves for the static
    formulation)."""
    simulation: Simulation
    """The simulator's :class:`~autotm_core.simulation.Simulation` of the plan."""
    source: str
    """Where the plan came from: ``"ilp"`` (the whole model's incumbent), ``"rolling"``
    (planned a stretch at a time), ``"windows"`` (asynchronous: the fastest held plan
    improved a window of kernels at a time), or the planner name of the baseline's plan or
    the start plan returned (e.g. ``"baseline/greedy"``)."""
    baseline: str
    """The baseline the formulation should beat, whose plan is a candidate: ``"first-touch"``
    (static) or ``"greedy"``."""
    baseline_step_seconds: float | None
    """Predicted step time of the baseline's plan (``None`` when it has none: it failed or
    its plan did not verify)."""
    bound_seconds: float
    """A proven lower bound on the optimal step time."""
    bound_source: str
    """``"solver"`` (the solver's best bound on the whole model), ``"lagrangian"``
    (:mod:`autotm_core.ilp.approximate.lagrangian`) or ``"kernels"`` (every kernel at its
    fastest)."""
    termination: str
    """Why planning stopped: the whole-model solve's termination when it ran, else
    ``"stretches planned"`` or ``"windows improved the held plan (...)"``, or ``"not run"``
    when the budget was spent before."""
    reductions: Reductions
    """The fixings applied, and what each reduction removed."""
    n_variables: int
    """Variables of the model."""
    n_binaries: int
    """Binary variables of the model."""
    n_nonzeros: int
    """Nonzero coefficients of its rows."""
    build_seconds: float
    """Seconds to build the model, find the reductions and lay it out in time."""
    baseline_seconds: float
    """Seconds the baseline took, and verifying and simulating the start plans."""
    solve_seconds: float
    """Seconds spent in the solver (hand-off included)."""
    total_seconds: float
    """Seconds from the call to the verified, simulated result."""
    system: MemorySystem
    """The memory system planned for, with the fast capacity applied."""
    solver_name: str
    """Name of the solver plugin that ran the solves (e.g. ``"highs"``)."""
    solver_version: str = ""
    """Its version, as it reports it (``""`` when it did not run)."""

    @property
    def step_seconds(self) -> float:
        """Predicted step time of the plan."""
        return float(self.simulation.step_seconds)

    @property
    def gap(self) -> float:
        """Worst-case relative distance from the optimum: ``(step - bound) / step``."""
        step = self.step_seconds
        return 0.0 if step <= 0 else max(0.0, (step - self.bound_seconds) / step)


def plan_approximate(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    time_budget_seconds: float = 60.0,
    relative_gap: float = 0.01,
    costs: KernelCosts | None = None,
    options: FormulationOptions | None = None,
    solver: str | Solver = DEFAULT_SOLVER,
    reduce: bool = True,
    threads: int | None = None,
    stretch_kernels: int = STRETCH_KERNELS,
    full_solve_kernels: int = FULL_SOLVE_KERNELS,
    start_plans: Sequence[Plan] = (),
) -> ApproximatePlanResult:
    """Plan ``graph`` within about ``time_budget_seconds`` end to end (see the module docstring).

    The solves, by ``solver`` (a plugin's name or a backend object), get what is left
    of the budget after building, and stop earlier at ``relative_gap``. ``start_plans``
    (e.g. a simpler formulation's plan) are verified; those the formulation allows are
    candidates, and the fastest starts the whole-model solve when the stretches fail.
    Raises :class:`~autotm_core.errors.UsageError` at once when the solver lacks integer
    variables or row duals, :class:`~autotm_core.errors.CapacityError` when no plan fits,
    and :class:`~autotm_core.errors.SolverError` when no plan was found in the budget.
    """
    from autotm_core.costs import resolve_costs
    from autotm_core.ilp.approximate.lagrangian import lagrangian_bound
    from autotm_core.ilp.approximate.layout import model_layout
    from autotm_core.ilp.approximate.rolling import rolling_plan
    from autotm_core.ilp.formulation import build_program
    from autotm_core.ilp.infeasible import check_lower_bounds
    from autotm_core.ilp.lp import to_matrix_problem
    from autotm_core.ilp.options import resolve_capacities
    from autotm_core.ilp.reductions import find_reductions
    from autotm_core.ilp.solve import require, resolve_solver
    from autotm_core.ilp.warm import warm_start_from_plan
    from autotm_core.plans.verify import check_plan, verify_plan
    from autotm_core.simulation import simulate
    from autotm_core.solvers import SolverConfig

    backend = resolve_solver(solver)
    require(backend, "mip", "duals", purpose="plan approximately",
            instead="--solver highs (its LP row duals start the Lagrangian bound), "
                    "or --mode exact")
    started = time.perf_counter()
    deadline = started + time_budget_seconds
    if fast_capacity_nbytes is not None:
        system = system.with_capacity(system.fast.name, int(fast_capacity_nbytes))
    options = options or FormulationOptions()
    costs = costs if costs is not None else resolve_costs(graph, system)
    check_lower_bounds(graph, system, resolve_capacities(graph, system, options.capacities),
                       options)

    best = _Best(formulation=options.formulation)
    baseline_started = time.perf_counter()
    baseline, baseline_plan = _baseline(graph, system, options.formulation)
    baseline_step = None
    for plan in ([] if baseline_plan is None else [baseline_plan]) + list(start_plans):
        problems = _disallowed(plan, options.formulation) or verify_plan(plan, graph, system)
        if problems:
            logger.info("plan %r is no candidate: %s", plan.planner, problems[0])
            continue
        timed = simulate(plan, graph, system, costs)
        if plan is baseline_plan:
            baseline_step = float(timed.step_seconds)
        best.offer(plan, timed, plan.planner or "a start plan")
    baseline_seconds = time.perf_counter() - baseline_started
    index = build_program(graph, costs, system, options.capacities, options)
    lp = index.lp
    found = find_reductions(index, graph, system, costs) if reduce else Reductions.none(lp)
    logger.info("reductions: %s", found.summary())
    problem = to_matrix_problem(found.apply(lp), name=graph.name)
    kernel_bound = index.objective_seconds(
        float(sum(lp.var_lb[v] for v in index.kernel_time_vars)))
    layout = model_layout(index, problem)
    build_seconds = time.perf_counter() - started - baseline_seconds

    bound, bound_source, termination, solve_seconds = kernel_bound, "kernels", "not run", 0.0
    full_solve = len(graph.kernels) <= full_solve_kernels

    def consider(values: np.ndarray, source: str, attributes: dict[str, Any]) -> None:
        from autotm_core.ilp.decode import decode_plan

        candidate = decode_plan(index, values, graph, system, planner=f"approximate/{source}",
                                capacities={p.name: p.capacity_nbytes for p in system.pools},
                                attributes=attributes)
        try:
            check_plan(candidate, graph, system)
        except PlanError as exc:  # never returned; the other candidates remain
            logger.warning("the %s plan failed verification, left out: %s", source, exc.message)
            return
        best.offer(candidate, simulate(candidate, graph, system, costs), source)

    start, version = None, ""
    if time.perf_counter() < deadline:
        solve_started = time.perf_counter()
        reserve = min(BOUND_RESERVE_SECONDS, BOUND_RESERVE_SHARE * time_budget_seconds)
        held_plan = best.plan
        held = (warm_start_from_plan(index, held_plan, graph, system)
                if options.formulation is Formulation.ASYNCHRONOUS and held_plan is not None
                else None)
        target, row_duals = None, None  # what the Lagrangian bound aims at and starts from
        if held is not None and held_plan is not None:
            # asynchronous: the fastest held plan (the synchronous stage's) improved a window
            # of kernels at a time; an asynchronous stretch's LP relaxation does not pay
            # (chain-700 on gpu-h200 4:1: 594,535 columns, no stretch planned in 27 s)
            from autotm_core.ilp.neighbourhood import improve_by_windows

            improved = improve_by_windows(index, held, solver=backend,
                                          deadline=deadline - reserve,
                                          relative_gap=relative_gap)
            version = improved.result.solver_version
            termination = ("windows improved the held plan "
                           f"({improved.result.termination.value})")
            consider(improved.values, "windows", {"held_plan": held_plan.planner})
            assert best.simulation is not None  # the held plan's at least
            target = float(best.simulation.step_seconds) / index.seconds_per_unit
            full_solve = False  # its root is the LP relaxation the windows avoid
        else:
            stretched = rolling_plan(layout, problem, solver=backend,
                                     core_kernels=stretch_kernels,
                                     margin_kernels=MARGIN_KERNELS, relative_gap=relative_gap,
                                     deadline=deadline - reserve)
            if stretched is not None:
                termination = "stretches planned"
                if stretched.planned_kernels < len(graph.kernels):
                    termination = (f"stretches planned to kernel {stretched.planned_kernels:,}, "
                                   "the rest in the slowest pool (out of time)")
                else:
                    start = stretched.values
                consider(stretched.values, "rolling", {
                    "stretch_kernels": stretch_kernels,
                    "planned_kernels": stretched.planned_kernels})
                target = (float(problem.cost @ stretched.values) if best.simulation is None
                          else float(best.simulation.step_seconds) / index.seconds_per_unit)
                row_duals = stretched.row_duals
        if target is not None:
            priced = lagrangian_bound(layout, problem, target=target, row_duals=row_duals,
                                      deadline=deadline - FINISH_SECONDS,
                                      max_iterations=FULL_SOLVE_LAGRANGIAN_STEPS if full_solve
                                      else LAGRANGIAN_STEPS)
            if index.objective_seconds(priced.objective) > bound:
                bound, bound_source = index.objective_seconds(priced.objective), "lagrangian"
        solve_seconds += time.perf_counter() - solve_started
    step = None if best.simulation is None else float(best.simulation.step_seconds)
    proven = step is not None and (step <= 0 or (step - bound) / step <= relative_gap)
    left = deadline - time.perf_counter()
    if left >= MIN_SOLVE_SECONDS and full_solve and not proven:
        if start is None and best.plan is not None:  # the rolling plan failed: the best held
            start = warm_start_from_plan(index, best.plan, graph, system)
        config = SolverConfig(time_limit_seconds=left, relative_gap=relative_gap,
                              threads=threads, warm_start=start is not None)
        result, values = backend.solve(problem, config, start)
        version = result.solver_version
        termination = result.termination.value
        solve_seconds += result.solve_seconds + result.handoff_seconds
        if result.best_bound is not None and math.isfinite(result.best_bound):
            solver_bound = index.objective_seconds(result.best_bound)
            if solver_bound > bound:
                bound, bound_source = solver_bound, "solver"
        if values is not None:
            consider(values, "ilp", {
                "objective_seconds": index.objective_seconds(result.objective or 0.0),
                "bound_seconds": bound, "termination": termination})
    chosen, simulation, source = best.plan, best.simulation, best.source
    if chosen is None or simulation is None:
        raise SolverError(
            f"no plan of graph {graph.name!r} was found within {time_budget_seconds:g} s, and "
            f"the {baseline} baseline has none",
            hint="give the planner more time (--time-limit), more fast memory, or plan exactly "
                 "(--mode exact)")
    check_plan(chosen, graph, system)
    step = float(simulation.step_seconds)
    if bound > step * (1 + 1e-9) and source not in ("ilp", "rolling"):
        # a plan from outside the model (page rounding, pinning) beats the model's bound,
        # which then bounds nothing about it: only every kernel at its fastest does
        bound, bound_source = min(kernel_bound, bound), "kernels"
    # a bound above a feasible plan's time can only come from tolerances now: clip it
    bound = min(bound, step)
    return ApproximatePlanResult(
        plan=chosen, simulation=simulation, source=source, baseline=baseline,
        baseline_step_seconds=baseline_step, bound_seconds=bound,
        bound_source=bound_source, termination=termination, reductions=found,
        n_variables=lp.n_vars, n_binaries=lp.n_binaries, n_nonzeros=problem.n_nonzeros,
        build_seconds=build_seconds, baseline_seconds=baseline_seconds,
        solve_seconds=solve_seconds,
        total_seconds=time.perf_counter() - started, system=system, solver_name=backend.name,
        solver_version=version,
    )


def _baseline(graph: Graph, system: MemorySystem,
              formulation: Formulation) -> tuple[str, Plan | None]:
    """The baseline ``formulation`` should beat and its plan (``None`` when it fails)."""
    from autotm_core.baselines import first_touch, greedy

    static = formulation is Formulation.STATIC
    name, make = ("first-touch", first_touch) if static else ("greedy", greedy)
    try:
        return name, make(graph, system, fast_capacity_nbytes=system.fast.capacity_nbytes)
    except AutotmError as exc:
        logger.info("no %s plan: %s", name, exc.message)
        return name, None


def _disallowed(plan: Plan, formulation: Formulation) -> list[str]:
    """Why ``formulation`` does not allow ``plan``'s moves (empty when it does)."""
    if formulation is Formulation.STATIC and plan.moves:
        return [f"a static plan has no moves; it has {len(plan.moves)}"]
    if formulation is Formulation.SYNCHRONOUS and any(m.kind is MoveKind.ASYNC
                                                       for m in plan.moves):
        return ["a synchronous plan has no asynchronous moves"]
    return []


@attrs.define
class _Best:
    """The fastest verified plan so far that the formulation allows."""

    formulation: Formulation
    plan: Plan | None = None
    simulation: Simulation | None = None
    source: str = ""

    def offer(self, plan: Plan, simulation: Simulation, source: str) -> None:
        if _disallowed(plan, self.formulation):
            return
        if (self.simulation is None
                or float(simulation.step_seconds) < float(self.simulation.step_seconds)):
            self.plan, self.simulation, self.source = plan, simulation, source
