"""Plan one point: :func:`plan` (problem, planner, settings) -> a verified :class:`Outcome`.

This is the one place where a point is planned: ``solve``, ``baseline``,
``compare``, ``sweep`` (and the evaluation's grids), ``explain``, ``plot`` and the
benchmarks all come here. For an ILP planner it chooses exact or approximate
planning by the mode, fits addresses when asked (exact planning only), and
checks the solver up front; for a baseline it runs the baseline (2LM with its
cache options). Every plan returned passed the verifier against the problem's
limited system and was simulated.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from autotm_core.errors import UsageError
from autotm_core.planning.mode import PlanMode, resolve_mode
from autotm_core.planning.outcome import Addresses, ModelSize, Outcome, SolveStats
from autotm_core.planning.planners import Planner, get_planner
from autotm_core.planning.problem import Problem
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import DEFAULT_SOLVER
from autotm_core.units import PAGE_NBYTES

logger = logging.getLogger(__name__)

DEFAULT_RELATIVE_GAP = 0.01
"""Relative gap at which an ILP solve stops (the paper's 1%)."""
DEFAULT_APPROXIMATE_SECONDS = 60.0
"""The approximate planner's time budget when no time limit is given."""
DEFAULT_MAX_ROUNDS = 8
"""Address-fitting solves before giving up."""

Progress = Callable[[str], None]
"""Called with one line saying what planning is doing now."""


@attrs.frozen(kw_only=True)
class CacheOptions:
    """How the 2LM baseline models the hardware cache."""

    line_nbytes: int = attrs.field(default=PAGE_NBYTES, validator=attrs.validators.ge(1))
    """Cache line size (4 KiB pages by default, for speed; 64 for hardware lines)."""
    ways: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    """Lines per set, LRU (1: direct-mapped, as the hardware)."""
    warm: bool = True
    """Start from a cache warmed by one step (a training loop's steady state)."""


def check_settings(*, time_limit_seconds: float | None, relative_gap: float,
                   max_rounds: int = DEFAULT_MAX_ROUNDS) -> None:
    """One :class:`UsageError` naming the first setting out of range, if any."""
    if not (isinstance(relative_gap, int | float) and math.isfinite(relative_gap)
            and relative_gap >= 0):
        raise UsageError(f"gap {relative_gap} is out of range",
                         hint="give a relative gap >= 0 (0.01 is 1%)")
    if time_limit_seconds is not None and not (math.isfinite(time_limit_seconds)
                                               and time_limit_seconds > 0):
        raise UsageError(f"time limit {time_limit_seconds} s is out of range",
                         hint="give a time limit > 0 seconds")
    if max_rounds < 1:
        raise UsageError(f"max rounds {max_rounds} is out of range", hint="give at least 1")


def plan(
    problem: Problem,
    planner: str | Planner,
    *,
    mode: PlanMode | str = PlanMode.AUTO,
    addresses: bool = True,
    solver: str = DEFAULT_SOLVER,
    time_limit_seconds: float | None = None,
    relative_gap: float = DEFAULT_RELATIVE_GAP,
    warm_starts: Sequence[Plan] = (),
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    pin_to_fast: bool = False,
    cache: CacheOptions | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """Plan ``problem`` with ``planner``; the plan is verified and simulated.

    ILP planners: ``mode`` chooses exact or approximate planning (``auto`` by the
    graph's size); ``addresses`` gives every tensor in a bounded pool an offset
    that fits (exact planning; approximate plans carry none); ``solver`` is the
    solver plugin, checked before anything is built; ``warm_starts`` are plans
    offered as starting solutions (e.g. a neighbouring point's). Baselines ignore
    the ILP settings; ``cache`` configures 2LM. Raises
    :class:`~autotm_core.errors.CapacityError` when no plan fits the limit and
    :class:`~autotm_core.errors.SolverError` when the solver found none.
    """
    check_settings(time_limit_seconds=time_limit_seconds, relative_gap=relative_gap,
                   max_rounds=max_rounds)
    chosen = get_planner(planner)
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    if not chosen.is_ilp:
        return _baseline(problem, chosen, cache or CacheOptions(), started)
    from autotm_core.ilp.options import FormulationOptions
    from autotm_core.plugins import get_solver

    backend = get_solver(solver)  # fail now, saying what to install, rather than after building
    assert chosen.formulation is not None  # every ILP planner has one
    options = FormulationOptions(formulation=chosen.formulation, pin_to_fast=pin_to_fast)
    settings: dict[str, Any] = dict(costs=problem.costs, options=options, solver=backend,
                                    relative_gap=relative_gap)
    graph, system = problem.graph, problem.limited_system
    if resolve_mode(graph, mode) is PlanMode.APPROXIMATE:
        from autotm_core.ilp.approximate import plan_approximate

        say(f"planning {graph.name} ({len(graph.kernels):,} kernels) approximately, "
            "warm-started from greedy")
        budget = time_limit_seconds or DEFAULT_APPROXIMATE_SECONDS
        return _approximate(problem, chosen, plan_approximate(
            graph, system, time_budget_seconds=budget, **settings), started)
    settings.update(time_limit_seconds=time_limit_seconds, start_plans=tuple(warm_starts))
    say(f"building the {chosen.name} model of {graph.name} ({len(graph.kernels):,} kernels)")
    if not addresses:
        from autotm_core.ilp.planner import plan_graph

        return _exact(problem, chosen, plan_graph(graph, system, **settings), None, started)
    from autotm_core.ilp.fitting import plan_with_addresses

    fitted = plan_with_addresses(
        graph, system, max_rounds=max_rounds,
        on_round=lambda r: say(f"round {r.round}: the packing " + (
            "fits" if r.fits else "overflows; re-solving with tightened limits")),
        **settings)
    fitting = Addresses(fits=fitted.fits, rounds=fitted.rounds, assignment=fitted.assignment)
    return _exact(problem, chosen, fitted.result, fitting, started, plan=fitted.plan)


def _baseline(problem: Problem, planner: Planner, cache: CacheOptions,
              started: float) -> Outcome:
    from autotm_core.baselines import run_baseline, two_level_plan
    from autotm_core.plans.verify import check_plan
    from autotm_core.simulation import simulate

    graph, system = problem.graph, problem.limited_system
    model = None
    if planner.name == "2lm":
        plan_, model = two_level_plan(graph, system, line_nbytes=cache.line_nbytes,
                                      ways=cache.ways, warm=cache.warm)
    else:
        plan_ = run_baseline(planner.name, graph, system)
    check_plan(plan_, graph, system)
    simulation = simulate(plan_, graph, system, problem.costs)
    # 2LM's plan moves nothing: its time is the cache model's, not the simulator's
    step = model.predicted_seconds if model is not None else simulation.step_seconds
    return Outcome(problem=problem, planner=planner, plan=plan_, simulation=simulation,
                   step_seconds=float(step), source=planner.name, cache=model,
                   plan_seconds=time.perf_counter() - started)


_NOT_PROVEN = frozenset({"time_limit", "interrupted", "iteration_limit", "unknown", "error"})
"""Terminations after which a loaded plan is the best found, not a proven one."""


def _exact(problem: Problem, planner: Planner, result: Any, fitting: Addresses | None,
           started: float, *, plan: Plan | None = None) -> Outcome:
    solve = result.solve
    termination = solve.termination.value
    gap = solve.gap if solve.gap is not None and math.isfinite(solve.gap) else None
    stats = SolveStats(
        solver=solve.solver_name, solver_version=solve.solver_version, mode=PlanMode.EXACT,
        termination=termination, status=solve.status.value,
        proven_optimal=solve.status.value == "optimal" and termination not in _NOT_PROVEN,
        interrupted=termination == "interrupted", objective_seconds=result.objective_seconds,
        bound_seconds=result.bound_seconds,
        bound_source="" if result.bound_seconds is None else "solver", gap=gap,
        build_seconds=result.build_seconds, handoff_seconds=solve.handoff_seconds,
        solve_seconds=solve.solve_seconds, warm_started=result.warm_started)
    size = ModelSize(formulation=str(planner.name), variables=result.n_variables,
                     binaries=result.n_binaries, constraints=result.n_constraints,
                     nonzeros=result.n_nonzeros)
    return Outcome(problem=problem, planner=planner, plan=result.plan if plan is None else plan,
                   simulation=result.simulation, step_seconds=result.step_seconds, source="ilp",
                   solve=stats, model=size, addresses=fitting,
                   plan_seconds=time.perf_counter() - started)


_SOURCES = {"ilp": "ilp", "rolling": "ilp by stretches", "greedy": "greedy"}
"""The approximate planner's sources, as outcomes name them."""


def _approximate(problem: Problem, planner: Planner, result: Any, started: float) -> Outcome:
    stats = SolveStats(
        solver=result.solver_name, solver_version=result.solver_version,
        mode=PlanMode.APPROXIMATE, termination=result.termination, status="feasible",
        proven_optimal=False,
        interrupted=False, objective_seconds=result.step_seconds,
        bound_seconds=result.bound_seconds, bound_source=result.bound_source, gap=result.gap,
        build_seconds=result.build_seconds + result.greedy_seconds, handoff_seconds=0.0,
        solve_seconds=result.solve_seconds, warm_started=True)
    size = ModelSize(formulation=str(planner.name), variables=result.n_variables,
                     binaries=result.n_binaries, constraints=None, nonzeros=result.n_nonzeros)
    return Outcome(problem=problem, planner=planner, plan=result.plan,
                   simulation=result.simulation, step_seconds=result.step_seconds,
                   source=_SOURCES.get(result.source, result.source), solve=stats, model=size,
                   reductions=result.reductions, plan_seconds=time.perf_counter() - started)
