"""Plans for very large graphs within a time budget, with a stated worst-case gap.

:func:`plan_approximate` builds the one formulation
(:func:`~autotm_core.ilp.formulation.build_program`), fixes what the exact
reductions allow (:mod:`autotm_core.ilp.reductions`) and plans the program a
stretch of ``stretch_kernels`` kernels at a time
(:mod:`autotm_core.ilp.approximate.rolling`; a graph no longer than one stretch is
one relax-and-fix of the whole model). The LP prices of those stretches start a
Lagrangian relaxation of the whole model
(:mod:`autotm_core.ilp.approximate.lagrangian`), whose value is a lower bound.
When that bound does not already prove the plan within ``relative_gap``, graphs
of up to ``full_solve_kernels`` kernels hand the whole model to the solver for
what is left of the budget, started from the stretch plan. It returns the best
verified plan (never worse than greedy's) with the best lower bound found: the
solver's, the Lagrangian one, or every kernel at its fastest.

Every solve runs on the solver given, which must declare integer variables and
row duals (the stretches' LP prices start the bound) in its
:class:`~autotm_core.solvers.SolverCapabilities`; another is refused before any
work with one :class:`~autotm_core.errors.UsageError`.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import PlanError
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.reductions import Reductions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.simulation import Simulation
from autotm_core.solvers.base import DEFAULT_SOLVER, Solver

logger = logging.getLogger(__name__)

MIN_SOLVE_SECONDS = 1.0
"""Below this much budget left after building, the solver is not started (greedy's plan)."""

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
    """The plan returned; it passed the verifier."""
    simulation: Simulation
    """The simulator's :class:`~autotm_core.simulation.Simulation` of the plan."""
    source: str
    """Where the plan came from: ``"ilp"`` (the whole model's incumbent), ``"rolling"``
    (planned a stretch at a time) or ``"greedy"``."""
    greedy_step_seconds: float
    """Predicted step time of the greedy baseline's plan."""
    bound_seconds: float
    """A proven lower bound on the optimal step time."""
    bound_source: str
    """``"solver"`` (the solver's best bound on the whole model), ``"lagrangian"``
    (:mod:`autotm_core.ilp.approximate.lagrangian`) or ``"kernels"`` (every kernel at its
    fastest)."""
    termination: str
    """Why planning stopped: the whole-model solve's termination when it ran, else
    ``"stretches planned"``, or ``"not run"`` when the budget was spent before."""
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
    greedy_seconds: float
    """Seconds the greedy baseline took."""
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
) -> ApproximatePlanResult:
    """Plan ``graph`` within about ``time_budget_seconds`` end to end (see the module docstring).

    The solves, by ``solver`` (a plugin's name or a backend object), get what is left
    of the budget after building, and stop earlier at ``relative_gap``. Raises
    :class:`~autotm_core.errors.UsageError` at once when the solver lacks integer
    variables or row duals, and :class:`~autotm_core.errors.CapacityError` when no
    plan fits.
    """
    from autotm_core.baselines import greedy
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
    from autotm_core.plans.verify import check_plan
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

    greedy_started = time.perf_counter()
    greedy_plan = greedy(graph, system, fast_capacity_nbytes=system.fast.capacity_nbytes)
    greedy_sim = simulate(greedy_plan, graph, system, costs)
    greedy_seconds = time.perf_counter() - greedy_started

    index = build_program(graph, costs, system, options.capacities, options)
    lp = index.lp
    found = find_reductions(index, graph, system, costs) if reduce else Reductions.none(lp)
    logger.info("reductions: %s", found.summary())
    problem = to_matrix_problem(found.apply(lp), name=graph.name)
    kernel_bound = index.objective_seconds(
        float(sum(lp.var_lb[v] for v in index.kernel_time_vars)))
    layout = model_layout(index, problem)
    build_seconds = time.perf_counter() - started - greedy_seconds

    best = _Best(greedy_plan, greedy_sim, "greedy")
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
        stretched = rolling_plan(layout, problem, solver=backend, core_kernels=stretch_kernels,
                                 margin_kernels=MARGIN_KERNELS, relative_gap=relative_gap,
                                 deadline=deadline - reserve)
        if stretched is not None:
            termination = "stretches planned"
            if stretched.planned_kernels < len(graph.kernels):
                termination = (f"stretches planned to kernel {stretched.planned_kernels:,}, "
                               "the rest in the slowest pool (out of time)")
            else:
                start = stretched.values
            consider(stretched.values, "rolling", {"stretch_kernels": stretch_kernels,
                                                   "planned_kernels": stretched.planned_kernels})
            priced = lagrangian_bound(layout, problem,
                                      target=float(best.simulation.step_seconds)
                                      / index.seconds_per_unit,
                                      row_duals=stretched.row_duals,
                                      deadline=deadline - FINISH_SECONDS,
                                      max_iterations=FULL_SOLVE_LAGRANGIAN_STEPS if full_solve
                                      else LAGRANGIAN_STEPS)
            if index.objective_seconds(priced.objective) > bound:
                bound, bound_source = index.objective_seconds(priced.objective), "lagrangian"
        solve_seconds += time.perf_counter() - solve_started
    step = float(best.simulation.step_seconds)
    proven = step <= 0 or (step - bound) / step <= relative_gap
    left = deadline - time.perf_counter()
    if left >= MIN_SOLVE_SECONDS and full_solve and not proven:
        if start is None:  # the rolling plan failed: start from greedy's plan
            start = warm_start_from_plan(index, greedy_plan, graph, system)
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
    plan, simulation, source = best.plan, best.simulation, best.source
    check_plan(plan, graph, system)
    # a bound above a feasible plan's time can only come from tolerances: clip it
    bound = min(bound, float(simulation.step_seconds))
    return ApproximatePlanResult(
        plan=plan, simulation=simulation, source=source,
        greedy_step_seconds=float(greedy_sim.step_seconds), bound_seconds=bound,
        bound_source=bound_source, termination=termination, reductions=found,
        n_variables=lp.n_vars, n_binaries=lp.n_binaries, n_nonzeros=problem.n_nonzeros,
        build_seconds=build_seconds, greedy_seconds=greedy_seconds, solve_seconds=solve_seconds,
        total_seconds=time.perf_counter() - started, system=system, solver_name=backend.name,
        solver_version=version,
    )


@attrs.define
class _Best:
    """The fastest verified plan so far (greedy's first, so never worse than greedy)."""

    plan: Plan
    simulation: Simulation
    source: str

    def offer(self, plan: Plan, simulation: Simulation, source: str) -> None:
        if float(simulation.step_seconds) < float(self.simulation.step_seconds):
            self.plan, self.simulation, self.source = plan, simulation, source
