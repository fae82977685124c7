"""Plan one point: :func:`plan` (problem, planner, settings) -> a verified :class:`Outcome`.

This is the one place where a point is planned: ``solve``, ``baseline``,
``compare``, ``sweep`` (and the evaluation's grids), ``explain``, ``plot`` and the
benchmarks all come here. Every input is checked before any work: the settings
when their record is made, the planner's name, the solver (resolved once, here),
and the model's size against this machine's memory. For an ILP planner it runs
the search of :mod:`autotm_core.planning.ilp`; for a baseline it runs the baseline
(2LM with its cache options). Every plan returned passed the verifier against the
problem's limited system and was simulated.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from autotm_core.ilp.search.events import Listener, ignore
from autotm_core.ilp.search.pool import WarmStart
from autotm_core.planning.outcome import Outcome
from autotm_core.planning.planners import Planner, get_planner
from autotm_core.planning.problem import Problem
from autotm_core.planning.settings import CacheOptions, PlanSettings
from autotm_core.plans.model import Plan

logger = logging.getLogger(__name__)


def plan(problem: Problem, planner: str | Planner, settings: PlanSettings | None = None, *,
         warm_starts: Sequence[Plan | WarmStart] = (),
         listener: Listener = ignore) -> Outcome:
    """Plan ``problem`` with ``planner`` under ``settings``; the plan is verified and simulated.

    ILP planners: ``settings.mode`` chooses exact or approximate planning (``auto`` by
    the graph's size); with ``settings.addresses`` every tensor in a bounded pool gets an
    offset that fits (exact planning; approximate plans carry none); ``warm_starts`` are
    plans offered as starting solutions and as plans to beat (e.g. a neighbouring point's,
    or another planner's at the same point, with where it came from); ``listener`` hears
    the search's events (phases, models built, better plans). An ILP plan of a graph too
    big for this machine's memory (:mod:`autotm_core.resources`) is refused before
    anything is built unless ``settings.insist``. Baselines read only
    ``settings.cache`` (2LM). Raises :class:`~autotm_core.errors.CapacityError` when no
    plan fits the limit and :class:`~autotm_core.errors.SolverError` when the solver
    found none; on Ctrl-C, the best verified plan held is returned with its solve marked
    interrupted (:class:`~autotm_core.errors.SolveInterruptedError` when none is held).
    """
    settings = settings or PlanSettings()
    chosen = get_planner(planner)
    started = time.perf_counter()
    if not chosen.is_ilp:
        return _baseline(problem, chosen, settings.cache, started)
    from autotm_core.planning.ilp import IlpSettings, plan_ilp
    from autotm_core.plugins import get_solver
    from autotm_core.resources import check_model_fits

    backend = get_solver(settings.solver)  # fail now, saying what to install
    check_model_fits(problem.graph.name, len(problem.graph.kernels), chosen.name,
                     insist=settings.insist)
    return plan_ilp(problem, chosen, IlpSettings.of(settings, problem.graph, backend),
                    warm_starts=warm_starts, listener=listener, started=started)


def _baseline(problem: Problem, planner: Planner, cache: CacheOptions,
              started: float) -> Outcome:
    from autotm_core.baselines import run_baseline, two_level_plan
    from autotm_core.plans.verify import check_plan
    from autotm_core.simulation import simulate

    graph, system = problem.graph, problem.limited_system
    model = None
    if planner.name == "2lm":
        plan_, model = two_level_plan(graph, system, line_nbytes=cache.line_nbytes,
                                      ways=cache.ways, warm=cache.warm, costs=problem.costs)
    else:
        plan_ = run_baseline(planner.name, graph, system, costs=problem.costs)
    check_plan(plan_, graph, system)
    simulation = simulate(plan_, graph, system, problem.costs)
    # 2LM's plan moves nothing: its time is the cache model's, not the simulator's
    step = model.predicted_seconds if model is not None else simulation.step_seconds
    return Outcome(problem=problem, planner=planner, plan=plan_, simulation=simulation,
                   step_seconds=float(step), source=planner.name, cache=model,
                   plan_seconds=time.perf_counter() - started)
