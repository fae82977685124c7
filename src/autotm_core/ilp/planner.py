"""The library API of the ILP planner: graph and memory system in, verified plan out."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import AutotmError, CapacityError, NoPlanFoundError, SolverError
from autotm_core.ilp.budget import Budget
from autotm_core.ilp.infeasible import check_lower_bounds, explain_infeasible
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan

if TYPE_CHECKING:
    from autotm_core.solvers.base import Solver

logger = logging.getLogger(__name__)

IMPROVE_ABOVE_COLUMNS = 100_000
"""Asynchronous models with more columns than this start from a held plan improved (window
by window under a time limit, else retimed; see :func:`_improved_start`) instead of
relax-and-fix, whose LP relaxation does not pay there (Inception v4 b64: 441,470
columns, the LP unfinished after 20 s). Below it the LP is cheap (VGG-19 b128: 30,958
columns) and its bound can prove the plan within the gap without the full MIP; when it
still runs out of time, the held plan is improved all the same."""

TEST_EVERY_GAIN_SECONDS = 0.3
"""Windows hold every gain to the caller's test (``fits`` of :func:`plan_graph`) when the
test of their start took no longer than this; else only their final plan and its
fallbacks meet it. VGG-19 b128 on gpu-h200 4:1: decoding and packing took 0.07 s, and
50 s of windows from the synchronous plan reached 0.974x of it with every gain packing,
where unchecked windows reached 0.957x but no plan of theirs packed."""

OBJECTIVE_RELATIVE_TOLERANCE = 1e-6
"""Relative difference allowed between the model's objective and the simulated step time."""


@attrs.frozen(kw_only=True)
class PlanResult:
    """What :func:`plan_graph` produced."""

    plan: Plan
    """The decoded plan; it passed the verifier."""
    solve: Any
    """The solver's :class:`~autotm_core.solvers.SolveResult`."""
    simulation: Any
    """The simulator's :class:`~autotm_core.simulation.Simulation` of the plan."""
    n_variables: int
    """Variables of the model."""
    n_binaries: int
    """Binary variables among them."""
    n_constraints: int
    """Rows of the model."""
    n_nonzeros: int
    """Nonzero coefficients of the rows."""
    build_seconds: float
    """Seconds to generate the model in matrix form (a backend's own translation of it,
    e.g. CBC's Pyomo model, counts as the solve's ``handoff_seconds``)."""
    objective_seconds: float
    """The model's objective for the plan, in seconds, with every kernel time at the largest
    of its lower bounds (no more than the solver's objective, which may leave slack there;
    the simulator agrees with it)."""
    bound_seconds: float | None
    """The solver's proven lower bound on the optimum, in seconds (``None`` when unknown)."""
    warm_started: bool
    """Whether a starting solution (relax-and-fix's, the greedy baseline's plan or one of
    ``start_plans``) was offered to the solver (never to one without warm starts)."""
    system: MemorySystem
    """The memory system planned for, with the fast capacity applied."""

    @property
    def step_seconds(self) -> float:
        """Predicted step time of the plan."""
        return float(self.simulation.step_seconds)


def plan_graph(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    formulation: Formulation | str = Formulation.SYNCHRONOUS,
    solver: str | Solver = "highs",
    time_limit_seconds: float | None = None,
    relative_gap: float = 0.01,
    costs: KernelCosts | None = None,
    options: FormulationOptions | None = None,
    warm_start: bool = True,
    start_plans: Sequence[Plan] = (),
    log_to_terminal: bool = False,
    budget: Budget | None = None,
    fits: Callable[[Plan], bool] | None = None,
) -> PlanResult:
    """Plan ``graph`` on ``system`` by ILP; the plan is verified and simulated.

    ``fast_capacity_nbytes`` overrides the fastest pool's capacity. ``options``
    (when given) wins over ``formulation``. ``solver`` is a solver plugin's name or a
    backend object (:class:`~autotm_core.solvers.Solver`); every solve runs on it.
    Raises :class:`CapacityError` when no plan fits (saying which kernel and the
    smallest capacity that could), and :class:`SolverError` when the solver finds no
    plan or the plan's simulated time exceeds the model's objective for it (see
    :func:`check_objective`).

    With ``warm_start`` and a solver that takes starting solutions, the solver starts from
    the best of relax-and-fix's solution (see :func:`_relax_and_fix_pays`), the greedy
    baseline's plan and ``start_plans`` (e.g. the plan of a neighbouring capacity in a
    sweep, or the previous round of address fitting) that the model can express and that
    fits its limits.

    ``time_limit_seconds`` bounds the whole call (every solve, and the work around them);
    ``budget`` (when given) wins over it: a deadline shared with the caller's other work,
    where this call records the seconds of its phases.

    ``fits`` (when given) is a test the caller will hold the plan to (e.g. that its
    tensors pack at addresses). A retimed start that fails it is not used. Windows
    (:mod:`~autotm_core.ilp.neighbourhood`) hold each gain to it when it is quick
    (:data:`TEST_EVERY_GAIN_SECONDS`); when the plan still fails it, the fastest of
    their earlier incumbents that passes is returned instead, while the time limit
    lasts (the plan itself when none does; checking them may overrun the deadline by
    the model's build time, the time kept for checking).
    """
    from autotm_core.costs import resolve_costs
    from autotm_core.ilp.formulation import build_program
    from autotm_core.ilp.incumbent import Unrelaxed, relax_and_fix
    from autotm_core.ilp.options import resolve_capacities
    from autotm_core.ilp.solve import resolve_solver, solve_program
    from autotm_core.solvers import SolverConfig, TerminationCondition
    from autotm_core.solvers.base import settle_status

    if fast_capacity_nbytes is not None:
        system = system.with_capacity(system.fast.name, int(fast_capacity_nbytes))
    options = options or FormulationOptions(formulation=formulation)
    costs = costs if costs is not None else resolve_costs(graph, system)
    backend = resolve_solver(solver)
    budget = budget if budget is not None else Budget.of(time_limit_seconds)
    capacities = resolve_capacities(graph, system, options.capacities)
    check_lower_bounds(graph, system, capacities, options)

    started = time.perf_counter()
    with budget.phase("build"):
        index = build_program(graph, costs, system, options.capacities, options)
    build_seconds = time.perf_counter() - started
    # decoding, verifying and simulating the plan take about as long as building the model
    reserve = build_seconds
    logger.info("model: %d variables (%d binary), %d rows, %d nonzeros, built in %.2f s",
                index.lp.n_vars, index.lp.n_binaries, index.lp.n_rows, index.lp.n_nonzeros,
                build_seconds)

    passes = None if fits is None else _ValuesTest(fits, index, graph, system, options)
    rf = None
    start: np.ndarray | None = None
    values: np.ndarray | None
    starts = warm_start and bool(backend.capabilities.warm_start)
    # Large asynchronous models: their LP relaxation alone outlasts the budget, so the held
    # plans' best is improved instead of relax-and-fix, when one fits the model.
    improved = (options.formulation is Formulation.ASYNCHRONOUS and starts
                and index.lp.n_vars > IMPROVE_ABOVE_COLUMNS)
    if improved:
        start, rf = _improved_start(index, graph, system, start_plans, backend, budget,
                                    reserve=reserve, relative_gap=relative_gap, passes=passes)
    # Relax-and-fix on separable costs only: with table costs its fixed MIP's objective
    # was seen to differ from the simulated time by ~1e-7 s (config binaries at tolerance).
    if (warm_start and costs.separable() is not None and start is None
            and _relax_and_fix_pays(backend)):
        from autotm_core.ilp.reductions import find_reductions

        # its LP relaxation with the exact reductions applied: at 5,000 kernels about 22 s
        # instead of over 40
        with budget.phase("relax-and-fix"):
            reduced = find_reductions(index, graph, system, costs).apply(index.lp)
            # each of its two solves gets a quarter of the time left
            found = relax_and_fix(index, solver=backend, relative_gap=relative_gap, lp=reduced,
                                  time_limit_seconds=budget.limit(1 / 4, reserve=reserve))
        if not isinstance(found, Unrelaxed):
            rf = found
        elif (not improved and options.formulation is Formulation.ASYNCHRONOUS and starts
              and found.termination is TerminationCondition.TIME_LIMIT):
            # its LP relaxation does not fit the time limit either: improve a held plan
            improved = True
            start, rf = _improved_start(index, graph, system, start_plans, backend, budget,
                                        reserve=reserve, relative_gap=relative_gap,
                                        passes=passes)
    if rf is not None and rf.result.gap is not None and rf.result.gap <= relative_gap:
        # proven within the gap by the LP relaxation's bound (relax-and-fix's; an improved
        # held plan has none): no full MIP needed
        result, values, start = rf.result, rf.values, rf.values
    elif improved and rf is not None and rf.result.best_bound is None \
            and budget.deadline is not None:
        # The full MIP's root needs the LP relaxation that does not fit the time limit (and
        # HiGHS was seen to run seconds past its limit there, unable to stop): the improved
        # plan is the answer, found in the time limit and proven by nothing.
        termination, status = settle_status(TerminationCondition.TIME_LIMIT, has_solution=True,
                                            objective=rf.result.objective, best_bound=None)
        result = attrs.evolve(rf.result, termination=termination, status=status)
        values = rf.values
    else:
        if starts and (not improved or start is None):
            with budget.phase("starts"):
                start = _best_start(index, graph, system, () if improved else start_plans,
                                    first=None if rf is None else rf.values, budget=budget,
                                    reserve=reserve)
            if start is not None and options.formulation is Formulation.ASYNCHRONOUS:
                if passes is not None and not passes(start):
                    # searches from a start that fails the caller's test stay there
                    # (VGG-19 b128 gpu-h200 4:1: every plan overflowed the packing by
                    # 782 MiB): they start from the cheapest held plan instead
                    with budget.phase("starts"):
                        held = _best_start(index, graph, system,
                                           () if improved else start_plans, budget=budget,
                                           reserve=reserve)
                    start = start if held is None else held
                # the start's copies retimed: a better start in seconds (VGG-19 b128
                # gpu-h200 4:1: the synchronous plan 2.7% faster in 1.4 s)
                again = _retime(index, start, backend, budget, share=1 / 4, reserve=reserve,
                                relative_gap=relative_gap)
                if again is not None and (passes is None or passes(again.values)):
                    start = again.values
                    if _replaces(rf, again, passes):
                        rf = again  # what to keep if the full solve loses its start
                if _time_for_windows(budget, reserve):
                    # then windows, for half the time left: the full MIP of VGG-19 b128
                    # (optane-2019 4:1, 60 s) found nothing better than its start; 30 s of
                    # windows gained 1.3%
                    better = _windows(index, start, backend, budget, reserve=reserve,
                                      relative_gap=relative_gap, share=1 / 2, passes=passes)
                    start = better.values
                    if _replaces(rf, better, passes):
                        rf = better
        config = SolverConfig(time_limit_seconds=budget.limit(reserve=reserve),
                              relative_gap=relative_gap, log_to_terminal=log_to_terminal,
                              warm_start=start is not None)
        with budget.phase("solve"):
            result, values = solve_program(index, backend, config, start=start, name=graph.name)
        if (values is None or not result.has_solution) and rf is not None \
                and result.termination is not TerminationCondition.INTERRUPTED:
            # the full solve lost the start it was given (time limit before it was loaded)
            result, values = attrs.evolve(rf.result, termination=result.termination), rf.values
    result = attrs.evolve(result, build_seconds=build_seconds + result.build_seconds)
    if result.termination in (TerminationCondition.INFEASIBLE,
                              TerminationCondition.INFEASIBLE_OR_UNBOUNDED):
        raise explain_infeasible(graph, system, capacities, options)
    if not result.has_solution or values is None:
        raise NoPlanFoundError(
            f"solver {result.solver_name!r} found no plan for graph {graph.name!r} "
            f"({result.termination.value}: {result.message})",
            hint="give it more time (--time-limit), a larger gap, or more fast memory",
        )
    with budget.phase("check"):
        checked = _checked(index, values, result, graph, system, costs, options,
                           start_given=start is not None)
        if fits is None or rf is None or not rf.trail or fits(checked.plan):
            return checked
        # the windows' earlier incumbents, newest (fastest) first: VGG-19 b128 optane-2019
        # 4:1, --time-limit 60: the best of them overflowed the packing by 390 MiB, and the
        # tightened round found nothing better than the synchronous plan
        earlier = ([] if values is rf.values else [rf.values]) + list(reversed(rf.trail))
        # not the solver's answer: an optimum (within the gap) the last solve proved is not
        # this plan's (the bound still holds: it bounds every plan of the model)
        found = result
        if result.termination in (TerminationCondition.OPTIMAL,
                                  TerminationCondition.GAP_REACHED):
            termination, status = settle_status(TerminationCondition.UNKNOWN,
                                                has_solution=True, objective=None,
                                                best_bound=None)
            found = attrs.evolve(result, termination=termination, status=status)
        for fallback in earlier:
            if budget.deadline is not None and time.perf_counter() > budget.deadline + reserve:
                break  # checking them may take the time kept for checking, no more
            candidate = _checked(index, fallback, found, graph, system, costs, options,
                                 start_given=start is not None)
            if fits(candidate.plan):
                logger.info("the plan failed the caller's test; an earlier incumbent of the "
                            "windows passes it (%.6g s against %.6g s)",
                            candidate.step_seconds, checked.step_seconds)
                return candidate
        return checked


def _improved_start(index: Any, graph: Graph, system: MemorySystem, start_plans: Sequence[Plan],
                    backend: Solver, budget: Budget, *, reserve: float, relative_gap: float,
                    passes: _ValuesTest | None) -> tuple[Any, Any]:
    """The best held plan's values (``None``: none fits the model) and its improvement
    (``None`` when it found nothing) within the time left: under a time limit, window by
    window (:mod:`~autotm_core.ilp.neighbourhood`; the answer, see :func:`plan_graph`),
    without one by retiming (only the full MIP's start)."""
    with budget.phase("starts"):
        # the first plan the model can express only: reading one takes seconds here, and the
        # caller's fastest comes first (Inception v4 b64: 1.9 s instead of 5.7 s for three)
        start = _best_start(index, graph, system, start_plans, budget=budget, reserve=reserve,
                            first_fit=True)
    if start is None:
        return None, None
    if _time_for_windows(budget, reserve):
        # the windows time the copies too, and change states: GPT-2 12 layers b8 gpu-h200
        # 1:1, --time-limit 120: windows alone 0.867x of the synchronous plan; a third of
        # the time for retiming the whole model first, then windows, 0.939x
        rf = _windows(index, start, backend, budget, reserve=reserve,
                      relative_gap=relative_gap, passes=passes)
    else:
        rf = _retime(index, start, backend, budget, share=1.0, reserve=reserve,
                     relative_gap=relative_gap)
    return (start if rf is None else rf.values), rf


def _replaces(kept: Any, found: Any, passes: _ValuesTest | None) -> bool:
    """Whether solution ``found`` replaces ``kept`` as the one to fall back on: ``kept`` is
    none, slower, or fails the caller's test ``passes``."""
    return (kept is None or found.result.objective < kept.result.objective
            or (passes is not None and not passes(kept.values)))


def _time_for_windows(budget: Budget, reserve: float) -> bool:
    """Whether a time limit leaves windows (:mod:`~autotm_core.ilp.neighbourhood`) the time
    to pay: :data:`~autotm_core.ilp.neighbourhood.MIN_SEARCH_SECONDS` after ``reserve``."""
    from autotm_core.ilp.neighbourhood import MIN_SEARCH_SECONDS

    remaining = budget.remaining()
    return remaining is not None and remaining - reserve >= MIN_SEARCH_SECONDS


def _retime(index: Any, start: np.ndarray, backend: Solver, budget: Budget, *, share: float,
            reserve: float, relative_gap: float) -> Any:
    """:func:`~autotm_core.ilp.incumbent.retime` of ``start`` within ``share`` of the time
    left, recorded as the ``retime`` phase."""
    from autotm_core.ilp.incumbent import retime

    with budget.phase("retime"):
        return retime(index, start, solver=backend, relative_gap=relative_gap,
                      time_limit_seconds=budget.limit(share, reserve=reserve))


def _windows(index: Any, start: Any, backend: Solver, budget: Budget, *, reserve: float,
             relative_gap: float, share: float = 1.0,
             passes: _ValuesTest | None = None) -> Any:
    """:func:`~autotm_core.ilp.neighbourhood.improve_by_windows` of ``start`` (values)
    within ``share`` of the time left less ``reserve``, recorded as the ``windows`` phase;
    every gain held to ``passes`` when its test of ``start`` took at most
    :data:`TEST_EVERY_GAIN_SECONDS`."""
    from autotm_core.ilp.neighbourhood import improve_by_windows

    with budget.phase("windows"):
        accept = None
        if passes is not None:
            passes(start)  # (its verdict aside, how long a test takes)
            if passes.seconds <= TEST_EVERY_GAIN_SECONDS:
                accept = passes
        remaining = budget.remaining()
        deadline = (None if remaining is None
                    else time.perf_counter() + max(0.0, remaining - reserve) * share)
        return improve_by_windows(index, start, solver=backend, deadline=deadline,
                                  relative_gap=relative_gap, accept=accept)


class _ValuesTest:
    """``fits`` held to the plan of a solution's values (decoded, not verified). The
    verdicts of the last few arrays tested are kept (by identity: a start is tested
    before retiming, before windows and as the solution kept), and :attr:`seconds` is
    how long the last real test took."""

    REMEMBERED = 4

    def __init__(self, fits: Callable[[Plan], bool], index: Any, graph: Graph,
                 system: MemorySystem, options: FormulationOptions) -> None:
        self._fits, self._index, self._graph = fits, index, graph
        self._system, self._options = system, options
        self._verdicts: list[tuple[np.ndarray, bool]] = []
        self.seconds = 0.0

    def __call__(self, values: np.ndarray) -> bool:
        from autotm_core.ilp.decode import objective_of, settled_values

        for known, verdict in self._verdicts:
            if known is values:
                return verdict
        started = time.perf_counter()
        settled = settled_values(self._index, values)
        verdict = self._fits(_decoded(self._index, settled, self._graph, self._system,
                                      self._options,
                                      {"objective_seconds": objective_of(self._index, settled)}))
        self.seconds = time.perf_counter() - started
        self._verdicts = [*self._verdicts[-(self.REMEMBERED - 1):], (values, verdict)]
        return verdict


def _decoded(index: Any, values: np.ndarray, graph: Graph, system: MemorySystem,
             options: FormulationOptions, attributes: dict[str, Any]) -> Plan:
    """The plan of settled ``values``, carrying ``attributes``."""
    from autotm_core.ilp.decode import decode_plan

    return decode_plan(index, values, graph, system, planner=f"ilp/{options.formulation.value}",
                       capacities={p.name: p.capacity_nbytes for p in system.pools},
                       attributes=attributes)


def _checked(index: Any, values: np.ndarray, result: Any, graph: Graph, system: MemorySystem,
             costs: KernelCosts, options: FormulationOptions, *,
             start_given: bool) -> PlanResult:
    """The plan of solved ``values``: decoded, verified, simulated and held to its objective."""
    from autotm_core.ilp.decode import objective_of, settled_values
    from autotm_core.plans.verify import check_plan
    from autotm_core.simulation import simulate

    values = settled_values(index, values)
    objective = objective_of(index, values)
    bound = None if result.best_bound is None else index.objective_seconds(result.best_bound)
    gap = None if result.gap is None or not math.isfinite(result.gap) else result.gap
    if bound is not None and math.isfinite(bound) and objective > 0:
        gap = max(0.0, (objective - bound) / objective)
    plan = _decoded(index, values, graph, system, options, {
        "objective_seconds": objective,
        "bound_seconds": bound,
        "gap": gap,
        "solver": result.solver_name,
        "termination": result.termination.value,
        "options": options.to_json(),
    })
    check_plan(plan, graph, system)
    simulation = simulate(plan, graph, system, costs)
    check_objective(objective_seconds=objective,
                    simulated_seconds=float(simulation.step_seconds), graph=graph)
    return PlanResult(plan=plan, solve=result, simulation=simulation,
                      n_variables=index.lp.n_vars, n_binaries=index.lp.n_binaries,
                      n_constraints=index.lp.n_rows, n_nonzeros=index.lp.n_nonzeros,
                      build_seconds=result.build_seconds, objective_seconds=objective,
                      bound_seconds=bound, warm_started=start_given,
                      system=system)


def _relax_and_fix_pays(backend: Solver) -> bool:
    """Whether relax-and-fix runs before the full solve on ``backend``: when it takes
    starting solutions. Unless the LP bound already proves relax-and-fix's solution within
    the gap, that solution's value is the start it gives the full solve; a backend without
    warm starts (GLPK) would spend two solves for nothing. On CBC it costs about what it
    saves on small graphs (see docs/solvers.md)."""
    return bool(backend.capabilities.warm_start)


def _best_start(index: Any, graph: Graph, system: MemorySystem,
                start_plans: Sequence[Plan], *, first: Any = None,
                budget: Budget | None = None, reserve: float = 0.0,
                first_fit: bool = False) -> Any:
    """Model values of the cheapest start among ``first`` (values already known, e.g.
    relax-and-fix's), ``start_plans`` and greedy's plan; ``None`` when there is none.

    Reading a plan into a large model takes seconds (1-2 s each at 440,000 columns), so
    with a ``budget`` the candidates are read in order (the caller's best first) only while
    more than ``reserve`` seconds are left, once one start is known; with ``first_fit``,
    only until one is known (greedy's plan is made only when no other fits)."""
    from autotm_core.baselines import greedy
    from autotm_core.ilp.warm import warm_start_from_plan

    best, best_cost = first, float("inf")
    if first is not None:
        best_cost = index.lp.objective_value(first)

    def candidates() -> Iterator[Plan]:
        yield from start_plans
        try:
            yield greedy(graph, system, fast_capacity_nbytes=system.fast.capacity_nbytes)
        except AutotmError as exc:
            logger.info("no greedy warm start: the greedy baseline failed (%s)", exc)

    for plan in candidates():
        remaining = None if budget is None else budget.remaining()
        if best is not None and remaining is not None and remaining <= reserve:
            logger.info("starts: the time limit leaves no time to read more plans")
            break
        if best is not None and first_fit:
            break
        values = warm_start_from_plan(index, plan, graph, system)
        if values is None:
            continue
        cost = index.lp.objective_value(values)
        if cost < best_cost:
            best, best_cost = values, cost
    return best


def check_objective(*, objective_seconds: float, simulated_seconds: float, graph: Graph) -> None:
    """Raise :class:`SolverError` when the simulator prices a plan above the model's
    objective for it (``objective_seconds``, from
    :func:`~autotm_core.ilp.decode.settled_values`: no slack in the kernel times): the
    model would then have under-priced plans, and its optimum means nothing.

    A plan priced below its objective is valid and faster than the model says: logged.
    """
    # The solver's feasibility tolerance (1e-6 on values in microseconds) allows a few ulps
    # per kernel; a real mismatch is orders of magnitude larger.
    tolerance = OBJECTIVE_RELATIVE_TOLERANCE * abs(simulated_seconds) + 1e-9 * len(graph.kernels)
    if simulated_seconds - objective_seconds > tolerance:
        raise SolverError(
            f"the model's objective for graph {graph.name!r} is {objective_seconds!r} s, but the "
            f"simulator predicts {simulated_seconds!r} s for the decoded plan",
            hint="this is a bug in the formulation; please report it with the graph and system",
        )
    if objective_seconds - simulated_seconds > tolerance:
        logger.warning("the model charges %r s for the plan of graph %r, the simulator %r s",
                       objective_seconds, graph.name, simulated_seconds)


__all__ = ["CapacityError", "PlanResult", "check_objective", "plan_graph"]
