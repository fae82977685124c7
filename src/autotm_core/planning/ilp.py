"""ILP planning of a point, monotone in the formulation: richer never returns worse.

Every static plan is a synchronous plan, and every synchronous plan an
asynchronous one. So :func:`plan_ilp` plans the formulations up to the one
asked for in turn (static, then synchronous, then asynchronous), each offered
the plans held so far as starting solutions: the simpler formulation's plan,
the baselines it should beat (first-touch for static; first-touch and greedy
for the moving formulations; each verified first) and the caller's warm
starts. It returns the fastest verified plan of all, saying where it came
from: a formulation asked for never reports a plan worse than one the planner
already held. The bound reported is the richest model's (a lower bound on
every plan it allows); the gap is measured from it.

Approximate planning (very large graphs) plans the formulation asked for a
stretch at a time within its time budget (:data:`DEFAULT_APPROXIMATE_SECONDS`
without a limit), with the held plans offered the same way; asked for the
asynchronous formulation it plans the synchronous one first, whose plan it
hands over (its static plan would be of no use to either).

The time limit bounds the whole call (:mod:`autotm_core.ilp.budget`): each
formulation of the chain gets a share of what is left when it starts
(:data:`STAGE_WEIGHTS`; time a stage does not use passes on), a richer
formulation is not started without the time to build its model
(:data:`SETUP_FACTOR`), and the outcome lists the seconds of every phase.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from autotm_core.errors import (
    AutotmError,
    CapacityError,
    NoPlanFoundError,
    PlanError,
    SolveInterruptedError,
)
from autotm_core.ilp.budget import MIN_SOLVE_SECONDS, Budget
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.restrictions import model_restrictions
from autotm_core.planning.mode import PlanMode
from autotm_core.planning.outcome import Addresses, ModelSize, Outcome, SolveStats
from autotm_core.planning.planners import PLANNERS, Planner
from autotm_core.planning.problem import Problem
from autotm_core.plans.model import MoveKind, Plan
from autotm_core.simulation import Simulation

logger = logging.getLogger(__name__)

DEFAULT_APPROXIMATE_SECONDS = 60.0
"""The approximate planner's time budget (the whole call's) when no time limit is given."""
CHAIN = (Formulation.STATIC, Formulation.SYNCHRONOUS, Formulation.ASYNCHRONOUS)
"""The formulations from the simplest; each one's plans are plans of the next."""

STAGE_WEIGHTS = {Formulation.STATIC: 1.0, Formulation.SYNCHRONOUS: 3.0,
                 Formulation.ASYNCHRONOUS: 3.0}
"""Each formulation's share of the time left when it starts, against the stages after it."""

SETUP_FACTOR = 20.0
"""A richer formulation's stage takes about this many times the simpler model's build time
even when its solve is cut short: building its model, loading a start, the shortest solve,
checking and packing the plan (Inception v4 b64, optane-2019 4:1: synchronous build 0.62 s;
asynchronous build 6.5 s, start 1.8 s, retiming 2.7 s for a 0.5 s limit, check and
packing 1.0 s: 12.0 s, 19x); a richer stage is not started with less time than that left."""

_NOT_PROVEN = frozenset({"time_limit", "interrupted", "iteration_limit", "unknown", "error"})
"""Terminations after which a loaded plan is the best found, not a proven one."""

_APPROXIMATE_SOURCES = {"ilp": "ilp", "rolling": "ilp by stretches",
                        "windows": "ilp by windows"}
"""The approximate planner's own sources, as outcomes name them (others are plan names)."""


@attrs.frozen(kw_only=True)
class IlpSettings:
    """How the ILP planner plans a point (see :func:`autotm_core.planning.plan`)."""

    mode: PlanMode
    """Exact or approximate (already resolved from ``auto``)."""
    addresses: bool
    """Whether plans get addresses that fit (exact planning only)."""
    solver: Any
    """The solver backend (a :class:`~autotm_core.solvers.Solver`)."""
    time_limit_seconds: float | None
    """The whole call's time limit (every formulation, round and solve); the approximate
    planner's budget."""
    relative_gap: float
    """Relative gap at which a solve stops."""
    max_rounds: int
    """Address-fitting rounds before giving up."""
    pin_to_fast: bool
    """Keep parameters, inputs and outputs in the fastest pool."""
    page_nbytes: int
    """Sizes are rounded up to a multiple of this in the model's capacity rows."""


def plan_ilp(problem: Problem, planner: Planner, settings: IlpSettings, *,
             warm_starts: Sequence[Plan], say: Callable[[str], None]) -> Outcome:
    """The ILP's plan of ``problem`` for ``planner``'s formulation (see the module docstring)."""
    started = time.perf_counter()
    approximate = settings.mode is PlanMode.APPROXIMATE
    limit = settings.time_limit_seconds
    budget = Budget.of(DEFAULT_APPROXIMATE_SECONDS if limit is None and approximate else limit)
    target = planner.formulation
    assert target is not None  # every ILP planner has one
    say("planning first-touch's and greedy's plans to start from and to beat")
    with budget.phase("held plans"):
        priced = _priced(problem, target, warm_starts)  # verified and simulated once per call
    best: Outcome | None = None
    chain = CHAIN[:CHAIN.index(target) + 1]
    if approximate:  # a stretch at a time: a moving plan to hand over, not the static one
        chain = chain[-2:] if target is Formulation.ASYNCHRONOUS else chain[-1:]
    stage_planner = _approximate if approximate else _exact
    for i, formulation in enumerate(chain):
        if best is not None and not _time_for(best, budget, approximate):
            best = attrs.evolve(best, note=_joined(
                best.note, f"too little of the time limit was left to plan the "
                f"{formulation.value} formulation; the {best.planner.name} plan is returned"))
            break
        held = sorted(_allowed(priced, formulation) + (  # the fastest first
            [_Held(best.plan, best.simulation)] if best else []),
            key=lambda h: float(h.simulation.step_seconds))
        if not approximate:
            say(f"building the {formulation.value} model of {problem.graph.name} "
                f"({len(problem.graph.kernels):,} kernels)")
        later = sum(STAGE_WEIGHTS[f] for f in chain[i:])
        stage = Budget(budget.until(STAGE_WEIGHTS[formulation] / later),
                       stage=formulation.value, spent=budget.spent)
        try:
            outcome = stage_planner(problem, PLANNERS[formulation.value], settings, held, stage,
                                    started, say)
        except SolveInterruptedError:
            if best is None:
                raise
            best = _interrupted(best, formulation)
            break
        except (CapacityError, NoPlanFoundError) as exc:  # e.g. out of time
            if best is None:
                raise
            best = attrs.evolve(best, note=_joined(
                best.note, f"the {formulation.value} formulation gave no plan that fits "
                f"({exc.message}); the {best.planner.name} plan is returned"))
            break
        if best is not None and best.step_seconds < outcome.step_seconds:
            outcome = _kept(best, outcome)
        best = outcome
        if best.interrupted:  # Ctrl-C: stop the chain, keep the best verified plan
            break
    assert best is not None
    return attrs.evolve(best, planner=planner, plan_seconds=time.perf_counter() - started,
                        phases=budget.phases())


def _time_for(best: Outcome, budget: Budget, approximate: bool) -> bool:
    """Whether the time left allows a richer stage after ``best``'s (see
    :data:`SETUP_FACTOR`; an approximate stage plans within whatever is left)."""
    remaining = budget.remaining()
    if remaining is None:
        return True
    if approximate or best.solve is None:
        return remaining > 0
    return remaining > SETUP_FACTOR * best.solve.build_seconds


def _joined(note: str, more: str) -> str:
    return f"{note}; {more}" if note else more


@attrs.frozen
class _Held:
    """A plan the planner holds, verified, with its simulation under the problem's costs."""

    plan: Plan
    simulation: Simulation


def _priced(problem: Problem, target: Formulation, warm_starts: Sequence[Plan]) -> list[_Held]:
    """The plans to beat, verified and simulated: the warm starts, first-touch's and (for a
    moving ``target``) greedy's. Plans the verifier refuses or the costs cannot price are
    left out."""
    from autotm_core.baselines import first_touch, greedy
    from autotm_core.plans.verify import verify_plan
    from autotm_core.simulation import simulate

    graph, system = problem.graph, problem.limited_system
    baselines = (first_touch,) if target is Formulation.STATIC else (first_touch, greedy)
    candidates = list(warm_starts)
    for baseline in baselines:
        try:
            candidates.append(baseline(graph, system, costs=problem.costs))
        except AutotmError as exc:
            logger.info("no %s plan to hold: %s", baseline.__name__, exc.message)
    held = []
    for plan in candidates:
        if verify_plan(plan, graph, system):
            continue
        try:
            held.append(_Held(plan, simulate(plan, graph, system, problem.costs)))
        except PlanError:  # a configuration its cost table lacks
            continue
    return held


def _allowed(priced: Sequence[_Held], formulation: Formulation) -> list[_Held]:
    """The held plans ``formulation`` allows: no moves for static, no asynchronous ones for
    synchronous."""
    return [h for h in priced
            if (formulation is not Formulation.STATIC or not h.plan.moves)
            and (formulation is Formulation.ASYNCHRONOUS
                 or all(m.kind is MoveKind.SYNC for m in h.plan.moves))]


def _options(settings: IlpSettings, formulation: Formulation) -> FormulationOptions:
    return FormulationOptions(formulation=formulation, pin_to_fast=settings.pin_to_fast,
                              page_nbytes=settings.page_nbytes)


def _exact(problem: Problem, planner: Planner, settings: IlpSettings, held: list[_Held],
           budget: Budget, started: float, say: Callable[[str], None]) -> Outcome:
    """One exact solve of ``planner``'s formulation, with addresses when asked."""
    from autotm_core.simulation import simulate

    assert planner.formulation is not None
    common: dict[str, Any] = dict(
        costs=problem.costs, options=_options(settings, planner.formulation),
        solver=settings.solver, relative_gap=settings.relative_gap,
        budget=budget, start_plans=tuple(h.plan for h in held))
    graph, system = problem.graph, problem.limited_system
    fitting = None
    if settings.addresses:
        from autotm_core.ilp.fitting import plan_with_addresses

        fitted = plan_with_addresses(
            graph, system, max_rounds=settings.max_rounds,
            on_round=lambda r: say(f"{planner.name}, round {r.round}: the packing " + (
                "fits" if r.fits else "overflows; re-solving with tightened limits")),
            **common)
        result, plan, bound = fitted.result, fitted.plan, fitted.bound_seconds
        fitting = Addresses(fits=fitted.fits, rounds=fitted.rounds, assignment=fitted.assignment)
        with budget.phase("check"):
            simulation = simulate(plan, graph, system, problem.costs)
        source = "ilp" if fitted.source.startswith("round") else _held_source(fitted.source)
    else:
        from autotm_core.ilp.planner import plan_graph

        result = plan_graph(graph, system, **common)
        plan, bound, simulation, source = (result.plan, result.bound_seconds,
                                           result.simulation, "ilp")
        for other in held:  # a held plan the solve did not beat (time limit, gap) is kept
            if other.simulation.step_seconds < simulation.step_seconds:
                plan, simulation = other.plan, other.simulation
                source = _held_source(other.plan.planner)
    restrictions = model_restrictions(graph, system, costs=problem.costs,
                                      options=common["options"])
    stats = _stats(result, bound=bound, step_seconds=float(simulation.step_seconds),
                   restrictions=restrictions)
    size = ModelSize(formulation=planner.name, variables=result.n_variables,
                     binaries=result.n_binaries, constraints=result.n_constraints,
                     nonzeros=result.n_nonzeros)
    note = "" if source == "ilp" else (
        f"the {planner.name} solve found no plan faster than the {source} plan it was "
        f"offered, so that plan is returned (every such plan is a {planner.name} plan)")
    return Outcome(problem=problem, planner=planner, plan=plan, simulation=simulation,
                   step_seconds=float(simulation.step_seconds), source=source, solve=stats,
                   model=size, addresses=fitting, plan_seconds=time.perf_counter() - started,
                   note=note)


def _held_source(planner: str) -> str:
    """How an outcome names a held plan made by ``planner`` (a plan's ``planner`` field):
    ``"ilp, synchronous formulation"`` for ``ilp/synchronous``, else the name itself."""
    kind, _, formulation = planner.partition("/")
    if kind == "ilp" and formulation:
        return f"ilp, {formulation} formulation"
    if kind == "approximate":  # the approximate planner's plan of an earlier stage
        return "ilp by stretches, a simpler formulation"
    return planner or "a warm start"


def _gap(step_seconds: float, bound: float | None) -> float | None:
    """``(step - bound) / step``; ``None`` without a bound, or when the plan beats the bound
    (a held plan the model cannot express: the bound does not bound it)."""
    if bound is None or step_seconds <= 0 or not math.isfinite(bound):
        return None
    if bound > step_seconds * (1 + 1e-9):
        return None
    return max(0.0, (step_seconds - bound) / step_seconds)


def _stats(result: Any, *, bound: float | None, step_seconds: float,
           restrictions: tuple[str, ...]) -> SolveStats:
    solve = result.solve
    termination = solve.termination.value
    gap = _gap(step_seconds, bound)
    in_model = (solve.status.value == "optimal" and termination not in _NOT_PROVEN
                and gap is not None)
    return SolveStats(
        solver=solve.solver_name, solver_version=solve.solver_version, mode=PlanMode.EXACT,
        termination=termination, status=solve.status.value, optimal_in_model=in_model,
        proven_optimal=in_model and not restrictions, restrictions=restrictions,
        interrupted=termination == "interrupted", objective_seconds=result.objective_seconds,
        bound_seconds=bound, bound_source="" if bound is None else "solver", gap=gap,
        build_seconds=result.build_seconds, handoff_seconds=solve.handoff_seconds,
        solve_seconds=solve.solve_seconds, warm_started=result.warm_started)


def _kept(best: Outcome, richer: Outcome) -> Outcome:
    """``best`` (a simpler formulation's plan) kept over ``richer``'s slower one, with the
    richer model's bound (it bounds every plan of the simpler formulation too)."""
    assert best.solve is not None and richer.solve is not None
    gap = _gap(best.step_seconds, richer.solve.bound_seconds)
    note = (f"the {richer.planner.name} solve found no plan better than the "
            f"{best.planner.name} plan it started from ({richer.step_seconds:.6g} s against "
            f"{best.step_seconds:.6g} s); every {best.planner.name} plan is a "
            f"{richer.planner.name} plan, so that one is returned")
    logger.info(note)
    in_model = richer.solve.optimal_in_model and gap is not None
    stats = attrs.evolve(richer.solve, gap=gap, optimal_in_model=in_model,
                         proven_optimal=in_model and not richer.solve.restrictions)
    source = best.source if best.source != "ilp" else f"ilp, {best.planner.name} formulation"
    return attrs.evolve(best, solve=stats, model=richer.model, source=source, note=note)


def _interrupted(best: Outcome, formulation: Formulation) -> Outcome:
    """``best`` kept after Ctrl-C stopped the ``formulation`` solve before it found a plan."""
    assert best.solve is not None
    note = (f"interrupted (Ctrl-C) during the {formulation.value} solve, before it found a "
            f"plan; the {best.planner.name} plan is kept")
    return attrs.evolve(best, solve=attrs.evolve(best.solve, interrupted=True,
                                                 termination="interrupted",
                                                 optimal_in_model=False, proven_optimal=False),
                        note=note)


def _approximate(problem: Problem, planner: Planner, settings: IlpSettings, held: list[_Held],
                 budget: Budget, started: float, say: Callable[[str], None]) -> Outcome:
    from autotm_core.ilp.approximate import plan_approximate

    graph = problem.graph
    assert planner.formulation is not None
    say(f"planning the {planner.name} formulation of {graph.name} "
        f"({len(graph.kernels):,} kernels) approximately, a stretch at a time")
    remaining = budget.remaining()
    assert remaining is not None  # approximate planning always has a deadline
    with budget.phase("approximate"):
        result = plan_approximate(
            graph, problem.limited_system, costs=problem.costs, solver=settings.solver,
            options=_options(settings, planner.formulation), relative_gap=settings.relative_gap,
            time_budget_seconds=max(remaining, MIN_SOLVE_SECONDS),
            start_plans=tuple(h.plan for h in held))
    restrictions = model_restrictions(graph, problem.limited_system, costs=problem.costs,
                                      options=_options(settings, planner.formulation))
    stats = SolveStats(
        solver=result.solver_name, solver_version=result.solver_version,
        mode=PlanMode.APPROXIMATE, termination=result.termination, status="feasible",
        proven_optimal=False, optimal_in_model=False, restrictions=restrictions,
        interrupted=False, objective_seconds=result.step_seconds,
        bound_seconds=result.bound_seconds, bound_source=result.bound_source, gap=result.gap,
        build_seconds=result.build_seconds + result.baseline_seconds, handoff_seconds=0.0,
        solve_seconds=result.solve_seconds, warm_started=True)
    size = ModelSize(formulation=planner.name, variables=result.n_variables,
                     binaries=result.n_binaries, constraints=None, nonzeros=result.n_nonzeros)
    source = _APPROXIMATE_SOURCES.get(result.source) or _held_source(result.source)
    note = "" if result.source in _APPROXIMATE_SOURCES else (
        f"the {planner.name} stretches found no plan faster than the {source} plan they were "
        f"offered, so that plan is returned")
    return Outcome(problem=problem, planner=planner, plan=result.plan,
                   simulation=result.simulation, step_seconds=result.step_seconds,
                   source=source, solve=stats, model=size, reductions=result.reductions,
                   plan_seconds=time.perf_counter() - started, note=note)
