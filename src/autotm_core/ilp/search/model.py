"""One model's search, step by step: build, starts, relax-and-fix, retiming, windows, MIP, check.

:func:`~autotm_core.ilp.planner.plan_graph` runs :data:`EXACT_STEPS` over a
:class:`ModelSearch` with :func:`~autotm_core.ilp.search.runner.run_steps`. The
state holds the model, the start offered to the full MIP (model values), the
solution kept to fall back on (relax-and-fix's, a retimed or window-improved
start) and, at the end, the solver's result and values. Which steps run:

- large asynchronous models (:attr:`~Strategy.improve_above_columns`), or any
  asynchronous model whose relax-and-fix LP ran out of time, start from the best
  held plan improved window by window (or retimed when too little time is left);
- otherwise relax-and-fix (separable costs, a backend with warm starts), whose LP
  bound may prove its solution within the gap: then no full MIP;
- an asynchronous start is held to the caller's test, retimed, then improved by
  windows, before the full MIP;
- the full MIP, from the best start; the kept solution when it loses its start;
- the check: decoded, verified, simulated, held to its objective; when it fails the
  caller's test, the windows' earlier incumbents, newest first.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence

import attrs
import numpy as np

from autotm_core.errors import AutotmError, NoPlanFoundError, SolverError
from autotm_core.ilp.incumbent import RelaxAndFix
from autotm_core.ilp.model_index import ModelIndex
from autotm_core.ilp.options import Formulation
from autotm_core.ilp.search.budget import seconds_until
from autotm_core.ilp.search.events import ModelBuilt
from autotm_core.ilp.search.runner import SearchInterrupted
from autotm_core.ilp.search.state import SearchState
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.simulation import Simulation
from autotm_core.solvers.base import SolverConfig, SolveResult, TerminationCondition

logger = logging.getLogger(__name__)

OBJECTIVE_RELATIVE_TOLERANCE = 1e-6
"""Relative difference allowed between the model's objective and the simulated step time."""


@attrs.frozen(kw_only=True)
class PlanResult:
    """What :func:`~autotm_core.ilp.planner.plan_graph` produced."""

    plan: Plan
    """The decoded plan; it passed the verifier."""
    solve: SolveResult
    """The solver's result."""
    simulation: Simulation
    """The simulator's account of the plan."""
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
    of its lower bounds (the simulator agrees with it)."""
    bound_seconds: float | None
    """The solver's proven lower bound on the optimum, in seconds (``None`` when unknown)."""
    warm_started: bool
    """Whether a starting solution was offered to the solver."""
    system: MemorySystem
    """The memory system planned for, with the fast capacity applied."""

    @property
    def step_seconds(self) -> float:
        """Predicted step time of the plan."""
        return float(self.simulation.step_seconds)


@attrs.define
class ModelSearch(SearchState):
    """The state of one model's search (see the module docstring)."""

    start_plans: tuple[Plan, ...]
    """Held plans to start from, fastest first (greedy's is read last, when made)."""
    fits: Callable[[Plan], bool] | None
    """The caller's test the plan will be held to (address packing)."""
    warm_start: bool
    log_to_terminal: bool
    make_greedy: bool
    """Whether greedy's plan is made as a start when the held plans give none better (a
    caller whose held plans include it says no)."""
    index: ModelIndex | None = None
    build_seconds: float = 0.0
    passes: ValuesTest | None = None
    start: np.ndarray | None = None
    """Values the full MIP starts from."""
    kept: RelaxAndFix | None = None
    """A solution to fall back on (relax-and-fix's, an improved or retimed start)."""
    improved: bool = False
    """Whether the start is a held plan improved instead of relax-and-fix's."""
    lp_out_of_time: bool = False
    """Whether relax-and-fix's LP relaxation ran out of time."""
    read_starts: bool = False
    """Whether the held plans were read as the full MIP's start."""
    result: SolveResult | None = None
    values: np.ndarray | None = None
    checked: PlanResult | None = None

    @property
    def model(self) -> ModelIndex:
        """The model (after the build step)."""
        assert self.index is not None, "the build step runs first"
        return self.index

    @property
    def reserve(self) -> float:
        """Seconds kept for the work after the last solve: decoding, verifying and simulating
        the plan (about the build's time), and the caller's test of it (packing: as long as
        its last test of a solution took, when one was made)."""
        return self.build_seconds + (self.passes.seconds if self.passes is not None else 0.0)

    @property
    def asynchronous(self) -> bool:
        return self.options.formulation is Formulation.ASYNCHRONOUS

    @property
    def takes_starts(self) -> bool:
        """Whether the solver is offered starting solutions."""
        return self.warm_start and bool(self.solver.capabilities.warm_start)

    @property
    def settled(self) -> bool:
        """Whether the answer is known without the full MIP."""
        return self.result is not None


def _retime(state: ModelSearch, start: np.ndarray, share: float) -> RelaxAndFix | None:
    from autotm_core.ilp.incumbent import retime

    with state.budget.phase("retime"):
        return retime(state.model, start, solver=state.solver, relative_gap=state.relative_gap,
                      time_limit_seconds=state.budget.limit(share, reserve=state.reserve),
                      abandon_at=state.budget.abandon_at(reserve=state.reserve))


def _windows(state: ModelSearch, start: np.ndarray, share: float) -> RelaxAndFix:
    from autotm_core.ilp.neighbourhood import improve_by_windows

    with state.budget.phase("windows"):
        accept = None
        if state.passes is not None:
            state.passes(start)  # (its verdict aside, how long a test takes)
            if state.passes.seconds <= state.strategy.test_every_gain_seconds:
                accept = state.passes
        return improve_by_windows(state.model, start, solver=state.solver,
                                  deadline=state.budget.until(share, reserve=state.reserve),
                                  relative_gap=state.relative_gap, strategy=state.strategy,
                                  accept=accept,
                                  abandon_at=state.budget.abandon_at(reserve=state.reserve))


def _time_for_windows(state: ModelSearch) -> bool:
    remaining = state.budget.remaining()
    return (remaining is not None
            and remaining - state.reserve >= state.strategy.min_search_seconds)


def _time_for_retime(state: ModelSearch) -> bool:
    """Whether retiming the whole model may start: the time left after the reserve is at
    least :attr:`~Strategy.retime_build_factor` times the model's build."""
    remaining = state.budget.remaining()
    return (remaining is None or remaining - state.reserve
            >= state.strategy.retime_build_factor * state.build_seconds)


def _replaces(state: ModelSearch, found: RelaxAndFix) -> bool:
    """Whether ``found`` replaces the kept solution: none is kept, it is slower, or it fails
    the caller's test."""
    kept = state.kept
    if kept is None:
        return True
    inf = math.inf
    faster = (found.result.objective if found.result.objective is not None else inf) < (
        kept.result.objective if kept.result.objective is not None else inf)
    return faster or (state.passes is not None and not state.passes(kept.values))


def best_start(state: ModelSearch, plans: Sequence[Plan], *, first: np.ndarray | None = None,
               first_fit: bool = False) -> np.ndarray | None:
    """Model values of the cheapest start among ``first`` (values already known), ``plans``
    and greedy's plan (made only when needed); ``None`` when none fits the model.

    Reading a plan into a large model takes seconds (1-2 s each at 440,000 columns): the
    candidates are read in order while more than the check reserve is left, once one start
    is known; with ``first_fit``, only until one is known."""
    from autotm_core.baselines import greedy
    from autotm_core.ilp.warm import warm_start_from_plan

    index, graph, system = state.model, state.graph, state.system
    best, best_cost = first, float("inf")
    if first is not None:
        best_cost = index.lp.objective_value(first)

    def candidates() -> Iterator[Plan]:
        yield from plans
        if not state.make_greedy:
            return
        try:
            yield greedy(graph, system, fast_capacity_nbytes=system.fast.capacity_nbytes,
                         costs=state.costs)
        except AutotmError as exc:
            logger.info("no greedy warm start: the greedy baseline failed (%s)", exc)

    for plan in candidates():
        if best is not None and (first_fit or not state.budget.allows(state.reserve)):
            break
        values = warm_start_from_plan(index, plan, graph, system)
        if values is None:
            continue
        cost = index.lp.objective_value(values)
        if cost < best_cost:
            best, best_cost = values, cost
    return best


@attrs.frozen
class BuildModel:
    """Build the formulation's model."""

    name = "build"

    def says(self, state: ModelSearch) -> str:
        return (f"building the {state.options.formulation.value} model of {state.graph.name} "
                f"({len(state.graph.kernels):,} kernels)")

    def wanted(self, state: ModelSearch) -> bool:
        return True

    def run(self, state: ModelSearch) -> None:
        from autotm_core.ilp.formulation import build_program

        started = time.perf_counter()
        state.index = build_program(state.graph, state.costs, state.system,
                                    state.options.capacities, state.options)
        state.build_seconds = time.perf_counter() - started
        state.budget.built(len(state.graph.kernels), state.options.formulation,
                           state.build_seconds, recompute=state.options.recompute)
        lp = state.index.lp
        logger.info("model: %d variables (%d binary), %d rows, %d nonzeros, built in %.2f s",
                    lp.n_vars, lp.n_binaries, lp.n_rows, lp.n_nonzeros, state.build_seconds)
        state.listener(ModelBuilt(state.options.formulation.value, lp.n_vars, lp.n_binaries,
                                  lp.n_rows, lp.n_nonzeros, state.build_seconds))
        if state.fits is not None:
            state.passes = ValuesTest(state.fits, state)


@attrs.frozen
class ImproveHeld:
    """Asynchronous models whose LP relaxation does not pay: the best held plan that fits the
    model, improved window by window under a time limit (else retimed) — the start and the
    solution kept."""

    name = None  # recorded as "starts", then "windows" or "retime"

    def says(self, state: ModelSearch) -> str:
        return "improving the best held plan a window of kernels at a time"

    def wanted(self, state: ModelSearch) -> bool:
        return (state.asynchronous and state.takes_starts and not state.improved
                and (state.model.lp.n_vars > state.strategy.improve_above_columns
                     or state.lp_out_of_time))

    def run(self, state: ModelSearch) -> None:
        state.improved = True
        with state.budget.phase("starts"):
            # the first plan the model can express only: the caller's fastest comes first
            start = best_start(state, state.start_plans, first_fit=True)
        if start is None:
            return
        found: RelaxAndFix | None = None
        if _time_for_windows(state):
            # GPT-2 12 layers b8 gpu-h200 1:1, --time-limit 120: windows alone 0.867x of the
            # synchronous plan; a third of the time retiming the whole model first, 0.939x
            found = _windows(state, start, share=1.0)
        elif _time_for_retime(state):
            found = _retime(state, start, share=1.0)
        else:
            logger.info("too little time to retime the whole model (%.1f s left, its build "
                        "took %.1f s): the held plan is kept", state.budget.remaining() or 0.0,
                        state.build_seconds)
        state.start, state.kept = (start if found is None else found.values), found


@attrs.frozen
class RelaxAndFixStep:
    """Relax-and-fix on the reduced model (separable costs only: with table costs its fixed
    MIP's objective was seen to differ from the simulated time by ~1e-7 s)."""

    name = "relax-and-fix"

    def says(self, state: ModelSearch) -> str:
        return "solving the LP relaxation and the MIP it leaves (relax-and-fix)"

    def wanted(self, state: ModelSearch) -> bool:
        return (state.takes_starts and state.costs.separable() is not None
                and state.start is None)

    def run(self, state: ModelSearch) -> None:
        from autotm_core.ilp.incumbent import Unrelaxed, relax_and_fix
        from autotm_core.ilp.reductions import find_reductions

        # the LP relaxation with the exact reductions applied: at 5,000 kernels about 22 s
        # instead of over 40
        reduced = find_reductions(state.model, state.graph, state.system,
                                  state.costs).apply(state.model.lp)
        found = relax_and_fix(state.model, solver=state.solver, relative_gap=state.relative_gap,
                              lp=reduced, time_limit_seconds=state.budget.limit(
                                  state.strategy.relax_and_fix_share, reserve=state.reserve),
                              abandon_at=state.budget.abandon_at(reserve=state.reserve))
        if not isinstance(found, Unrelaxed):
            state.kept = found
        elif found.termination in (TerminationCondition.TIME_LIMIT,
                                   TerminationCondition.ABANDONED):
            state.lp_out_of_time = True


@attrs.frozen
class Settle:
    """The answer without the full MIP: relax-and-fix's solution proven within the gap by its
    LP bound, or an improved held plan whose MIP root (the LP relaxation) does not fit the
    time limit (HiGHS was seen to run seconds past its limit there, unable to stop)."""

    name = None

    def says(self, state: ModelSearch) -> str:
        return ""

    def wanted(self, state: ModelSearch) -> bool:
        kept = state.kept
        if kept is None:
            return False
        proven = kept.result.gap is not None and kept.result.gap <= state.relative_gap
        unprovable = (state.improved and kept.result.best_bound is None
                      and state.budget.deadline is not None)
        return proven or unprovable

    def run(self, state: ModelSearch) -> None:
        from autotm_core.solvers.base import settle_status

        kept = state.kept
        assert kept is not None
        result = kept.result
        if not (result.gap is not None and result.gap <= state.relative_gap):
            termination, status = settle_status(TerminationCondition.TIME_LIMIT,
                                                has_solution=True, objective=result.objective,
                                                best_bound=None)
            result = attrs.evolve(result, termination=termination, status=status)
        state.result, state.values, state.start = result, kept.values, kept.values


@attrs.frozen
class ReadStarts:
    """The full MIP's start: the cheapest of the kept solution, the held plans and greedy's."""

    name = "starts"

    def says(self, state: ModelSearch) -> str:
        return "reading the held plans as starting solutions"

    def wanted(self, state: ModelSearch) -> bool:
        return (not state.settled and state.takes_starts
                and (not state.improved or state.start is None))

    def run(self, state: ModelSearch) -> None:
        state.read_starts = True
        state.start = best_start(state, () if state.improved else state.start_plans,
                                 first=None if state.kept is None else state.kept.values)


def _improving_async_start(state: ModelSearch) -> bool:
    return (not state.settled and state.read_starts and state.asynchronous
            and state.start is not None)


@attrs.frozen
class PackableStart:
    """Searches from a start that fails the caller's test stay there (VGG-19 b128 gpu-h200
    4:1: every plan overflowed the packing by 782 MiB): start from the cheapest held plan."""

    name = "starts"

    def says(self, state: ModelSearch) -> str:
        return "holding the start to the packing"

    def wanted(self, state: ModelSearch) -> bool:
        return _improving_async_start(state) and state.passes is not None

    def run(self, state: ModelSearch) -> None:
        assert state.passes is not None and state.start is not None
        if not state.passes(state.start):
            held = best_start(state, () if state.improved else state.start_plans)
            state.start = state.start if held is None else held


@attrs.frozen
class RetimeStart:
    """The start's copies retimed: a better start in seconds."""

    name = None  # recorded as "retime" by the solve itself

    def says(self, state: ModelSearch) -> str:
        return "retiming the start's copies"

    def wanted(self, state: ModelSearch) -> bool:
        return _improving_async_start(state)

    def run(self, state: ModelSearch) -> None:
        assert state.start is not None
        again = _retime(state, state.start, share=state.strategy.retime_share)
        if again is not None and (state.passes is None or state.passes(again.values)):
            state.start = again.values
            if _replaces(state, again):
                state.kept = again  # what to keep if the full solve loses its start


@attrs.frozen
class WindowsStart:
    """The start improved window by window before the full MIP."""

    name = None  # recorded as "windows" by the search itself

    def says(self, state: ModelSearch) -> str:
        return "improving the start a window of kernels at a time"

    def wanted(self, state: ModelSearch) -> bool:
        return _improving_async_start(state) and _time_for_windows(state)

    def run(self, state: ModelSearch) -> None:
        assert state.start is not None
        better = _windows(state, state.start, share=state.strategy.windows_share)
        state.start = better.values
        if _replaces(state, better):
            state.kept = better


@attrs.frozen
class FullSolve:
    """The whole model, from the best start, for the time left less the check reserve; a solve
    that does not stop is abandoned within the call's grace after it, its last reported
    solution (else the solution kept, else its start) the answer."""

    name = "solve"

    def says(self, state: ModelSearch) -> str:
        return (f"solving with {state.solver.name} (Ctrl-C keeps the best plan found)")

    def wanted(self, state: ModelSearch) -> bool:
        return not state.settled

    def run(self, state: ModelSearch) -> None:
        from autotm_core.ilp.solve import solve_program

        config = SolverConfig(time_limit_seconds=state.budget.limit(reserve=state.reserve),
                              relative_gap=state.relative_gap,
                              log_to_terminal=state.log_to_terminal,
                              warm_start=state.start is not None,
                              abandon_after_seconds=seconds_until(
                                  state.budget.abandon_at(reserve=state.reserve)))
        result, values = solve_program(state.model, state.solver, config, start=state.start,
                                       name=state.graph.name)
        if result.termination is TerminationCondition.INTERRUPTED and (
                values is None or state.reserve > state.strategy.interrupt_decode_seconds):
            raise SearchInterrupted("solve")  # the plans already held are the answer
        kept = state.kept
        if (values is None or not result.has_solution) and kept is not None \
                and result.termination is not TerminationCondition.INTERRUPTED:
            # the full solve lost the start it was given (time limit before it was loaded)
            result, values = attrs.evolve(kept.result, termination=result.termination), kept.values
        elif values is None and result.termination is TerminationCondition.ABANDONED \
                and state.start is not None:
            # abandoned before it reported a solution: its start, a held plan's, is the answer
            from autotm_core.solvers.base import settle_status

            objective = state.model.lp.objective_value(state.start)
            termination, status = settle_status(result.termination, has_solution=True,
                                                objective=objective, best_bound=None)
            result = attrs.evolve(result, termination=termination, status=status,
                                  objective=objective, best_bound=None)
            values = state.start
        state.result, state.values = result, values


@attrs.frozen
class Check:
    """The plan of the solution: decoded, verified, simulated, held to its objective; when it
    fails the caller's test, the windows' earlier incumbents, newest first (VGG-19 b128
    optane-2019 4:1, --time-limit 60: the best overflowed the packing by 390 MiB)."""

    name = "check"

    def says(self, state: ModelSearch) -> str:
        return "checking the plan"

    def wanted(self, state: ModelSearch) -> bool:
        return True

    def run(self, state: ModelSearch) -> None:
        from autotm_core.ilp.infeasible import explain_infeasible
        from autotm_core.ilp.options import resolve_capacities
        from autotm_core.solvers.base import settle_status

        result, values = state.result, state.values
        assert result is not None
        result = attrs.evolve(result, build_seconds=state.build_seconds + result.build_seconds)
        if result.termination in (TerminationCondition.INFEASIBLE,
                                  TerminationCondition.INFEASIBLE_OR_UNBOUNDED):
            capacities = resolve_capacities(state.graph, state.system,
                                            state.options.capacities)
            raise explain_infeasible(state.graph, state.system, capacities, state.options)
        if not result.has_solution or values is None:
            raise NoPlanFoundError(
                f"solver {result.solver_name!r} found no plan for graph {state.graph.name!r} "
                f"({result.termination.value}: {result.message})",
                hint="give it more time (--time-limit), a larger gap, or more fast memory")
        checked = _checked(state, values, result)
        state.checked = checked
        kept = state.kept
        if state.fits is None or kept is None or not kept.trail or state.fits(checked.plan):
            return
        earlier = ([] if values is kept.values else [kept.values]) + list(reversed(kept.trail))
        # not the solver's answer: an optimum (within the gap) the last solve proved is not
        # this plan's (the bound still holds: it bounds every plan of the model)
        found = result
        if result.termination in (TerminationCondition.OPTIMAL,
                                  TerminationCondition.GAP_REACHED):
            termination, status = settle_status(TerminationCondition.UNKNOWN,
                                                has_solution=True, objective=None,
                                                best_bound=None)
            found = attrs.evolve(result, termination=termination, status=status)
        deadline = state.budget.deadline
        for fallback in earlier:
            if deadline is not None and time.perf_counter() > deadline + state.reserve:
                break  # checking them may take the time kept for checking, no more
            try:
                candidate = _checked(state, fallback, found)
            except NoPlanFoundError:
                continue  # rounded, it overfills a pool: not a plan
            if state.fits(candidate.plan):
                logger.info("the plan failed the caller's test; an earlier incumbent of the "
                            "windows passes it (%.6g s against %.6g s)",
                            candidate.step_seconds, checked.step_seconds)
                state.checked = candidate
                return


EXACT_STEPS = (BuildModel(), ImproveHeld(), RelaxAndFixStep(), ImproveHeld(), Settle(),
               ReadStarts(), PackableStart(), RetimeStart(), WindowsStart(), FullSolve(),
               Check())
"""The exact planner's steps, in order (see the module docstring)."""


class ValuesTest:
    """The caller's test held to the plan of a solution's values (decoded, not verified). The
    verdicts of the last few arrays tested are kept (by identity: a start is tested before
    retiming, before windows and as the solution kept), and :attr:`seconds` is how long the
    last real test took."""

    REMEMBERED = 4

    def __init__(self, fits: Callable[[Plan], bool], state: ModelSearch) -> None:
        self._fits, self._state = fits, state
        self._verdicts: list[tuple[np.ndarray, bool]] = []
        self.seconds = 0.0

    def __call__(self, values: np.ndarray) -> bool:
        from autotm_core.ilp.decode import objective_of, settled_values

        for known, verdict in self._verdicts:
            if known is values:
                return verdict
        started = time.perf_counter()
        index = self._state.model
        settled = settled_values(index, values)
        verdict = self._fits(_decoded(self._state, settled,
                                      {"objective_seconds": objective_of(index, settled)}))
        self.seconds = time.perf_counter() - started
        self._verdicts = [*self._verdicts[-(self.REMEMBERED - 1):], (values, verdict)]
        return verdict


def _decoded(state: ModelSearch, values: np.ndarray,
             attributes: dict[str, object]) -> Plan:
    """The plan of settled ``values``, carrying ``attributes``."""
    from autotm_core.ilp.decode import decode_plan

    system = state.system
    return decode_plan(state.model, values, state.graph, system,
                       planner=f"ilp/{state.options.formulation.value}",
                       capacities={p.name: p.capacity_nbytes for p in system.pools},
                       attributes=attributes)


def _checked(state: ModelSearch, values: np.ndarray, result: SolveResult) -> PlanResult:
    """The plan of solved ``values``: decoded, verified, simulated and held to its objective."""
    from autotm_core.ilp.decode import objective_of, overfilled, settled_values
    from autotm_core.ilp.search.pool import gap_of
    from autotm_core.plans.verify import check_plan
    from autotm_core.simulation import simulate

    index, graph, system = state.model, state.graph, state.system
    values = settled_values(index, values)
    over = overfilled(index, values)
    if over is not None:
        pool, kernel, nbytes = over
        raise NoPlanFoundError(
            f"the solver's solution for graph {graph.name!r}, its decisions rounded to 0 or 1, "
            f"fills pool {system.pools[pool].name!r} {nbytes:,.0f} bytes over its limit at "
            f"kernel {graph.kernels[kernel].name!r} (the solver took them within its "
            "integrality tolerance, so its plan is not one)",
            hint="the best plan held is returned; give the pool a little more memory, or "
                 "plan with addresses (sizes in whole pages)")
    objective = objective_of(index, values)
    bound = None if result.best_bound is None else index.objective_seconds(result.best_bound)
    gap = None if result.gap is None or not math.isfinite(result.gap) else result.gap
    if bound is not None and math.isfinite(bound) and objective > 0:
        gap = gap_of(objective, bound) if bound <= objective else 0.0
    plan = _decoded(state, values, {
        "objective_seconds": objective,
        "bound_seconds": bound,
        "gap": gap,
        "solver": result.solver_name,
        "termination": result.termination.value,
        "options": state.options.to_json(),
    })
    check_plan(plan, graph, system)
    simulation = simulate(plan, graph, system, state.costs)
    check_objective(objective_seconds=objective,
                    simulated_seconds=float(simulation.step_seconds), graph=graph)
    return PlanResult(plan=plan, solve=result, simulation=simulation,
                      n_variables=index.lp.n_vars, n_binaries=index.lp.n_binaries,
                      n_constraints=index.lp.n_rows, n_nonzeros=index.lp.n_nonzeros,
                      build_seconds=result.build_seconds, objective_seconds=objective,
                      bound_seconds=bound, warm_started=state.start is not None,
                      system=system)


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


__all__ = ["EXACT_STEPS", "ModelSearch", "PlanResult", "ValuesTest", "best_start",
           "check_objective"]
