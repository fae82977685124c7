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
from collections.abc import Callable, Mapping, Sequence

import attrs

from autotm_core.errors import UsageError
from autotm_core.planning.mode import PlanMode, resolve_mode
from autotm_core.planning.outcome import Outcome
from autotm_core.planning.planners import Planner, get_planner
from autotm_core.planning.problem import Problem
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import DEFAULT_SOLVER
from autotm_core.units import PAGE_NBYTES

logger = logging.getLogger(__name__)

DEFAULT_RELATIVE_GAP = 0.01
"""Relative gap at which an ILP solve stops (the paper's 1%)."""
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


SETTING_NAMES = {"relative_gap": "relative_gap", "time_limit_seconds": "time_limit_seconds",
                 "max_rounds": "max_rounds"}
"""How :func:`check_settings` names each setting (the command line passes its options)."""


def check_settings(*, time_limit_seconds: float | None, relative_gap: float,
                   max_rounds: int = DEFAULT_MAX_ROUNDS,
                   names: Mapping[str, str] = SETTING_NAMES) -> None:
    """One :class:`UsageError` naming the first setting out of range, if any: a relative
    gap in [0, 1), a finite time limit > 0, at least one fitting round."""
    if not (isinstance(relative_gap, int | float) and math.isfinite(relative_gap)
            and 0 <= relative_gap < 1):
        percent = (f" ({relative_gap:g} is {relative_gap * 100:g}%)"
                   if isinstance(relative_gap, int | float) and math.isfinite(relative_gap)
                   and relative_gap >= 1 else "")
        raise UsageError(f"{names['relative_gap']} {relative_gap} is out of range{percent}",
                         hint="give a relative gap from 0 up to (not including) 1: "
                         "0.01 is 1%")
    if time_limit_seconds is not None and not (math.isfinite(time_limit_seconds)
                                               and time_limit_seconds > 0):
        raise UsageError(f"{names['time_limit_seconds']} {time_limit_seconds} is out of range",
                         hint="give a time limit in seconds, more than 0")
    if max_rounds < 1:
        raise UsageError(f"{names['max_rounds']} {max_rounds} is out of range",
                         hint="give at least 1")


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
    insist: bool = False,
) -> Outcome:
    """Plan ``problem`` with ``planner``; the plan is verified and simulated.

    ILP planners: ``mode`` chooses exact or approximate planning (``auto`` by the
    graph's size); ``addresses`` gives every tensor in a bounded pool an offset
    that fits (exact planning; approximate plans carry none); ``solver`` is the
    solver plugin, checked before anything is built; ``warm_starts`` are plans
    offered as starting solutions (e.g. a neighbouring point's). Baselines ignore
    the ILP settings; ``cache`` configures 2LM. An ILP plan of a graph too big for this
    machine's memory (:mod:`autotm_core.resources`) is refused before anything is
    built unless ``insist``. Raises
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
    from autotm_core.planning.ilp import IlpSettings, plan_ilp
    from autotm_core.plugins import get_solver
    from autotm_core.resources import check_model_fits

    backend = get_solver(solver)  # fail now, saying what to install, rather than after building
    check_model_fits(problem.graph.name, len(problem.graph.kernels), chosen.name, insist=insist)
    settings = IlpSettings(
        mode=resolve_mode(problem.graph, mode), addresses=addresses, solver=backend,
        time_limit_seconds=time_limit_seconds, relative_gap=relative_gap, max_rounds=max_rounds,
        pin_to_fast=pin_to_fast,
        # pages are the allocator's: sizes round to them only when addresses are fitted
        page_nbytes=PAGE_NBYTES if addresses else 1)
    return plan_ilp(problem, chosen, settings, warm_starts=warm_starts, say=say)


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
