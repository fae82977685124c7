"""Plans for very large graphs within a time budget, with a stated worst-case gap.

:func:`plan_approximate` runs :data:`APPROXIMATE_STEPS` over an
:class:`ApproximateSearch`. The synchronous and asynchronous formulations first plan
the static formulation's whole model by relax-and-fix (:class:`StaticStart`): a plan
of theirs with no moves, which sees the whole step at once and starts their second
pass when it beats their stretches. Then it builds the one formulation
(:func:`~autotm_core.ilp.formulation.build_program`), fixes what the exact
reductions allow (:mod:`autotm_core.ilp.reductions`) and plans the program a
stretch of the strategy's ``stretch_kernels`` kernels at a time
(:mod:`autotm_core.ilp.approximate.rolling`). The LP prices of those stretches
start a Lagrangian relaxation of the whole model
(:mod:`autotm_core.ilp.approximate.lagrangian`), whose value is a lower bound. The
asynchronous formulation, whose stretches' LP relaxations do not pay, improves the
fastest held plan (the synchronous stage's) a window of kernels at a time instead
(:mod:`autotm_core.ilp.neighbourhood`); its Lagrangian relaxation starts from zero
prices, and the whole model is not solved after. When that bound does not already
prove the plan within ``relative_gap``, graphs of up to ``full_solve_kernels``
kernels hand the whole model to the solver for what is left of the budget, started
from the stretch plan. A model whose build (estimated from its size) does not fit
the time left is not built: the best held plan is returned.

Every plan goes into the search's :class:`~autotm_core.ilp.search.pool.IncumbentPool`
with the baseline the formulation should beat (first-touch's plan for the static
formulation, greedy's for the others) and the start plans offered; the answer is
the fastest one the formulation allows (a static plan has no moves, a synchronous
one no asynchronous moves), with the best lower bound found: the solver's, the
Lagrangian one, or every kernel at its fastest.

Every solve runs on the solver given, which must declare integer variables and
row duals (the stretches' LP prices start the bound) in its
:class:`~autotm_core.solvers.SolverCapabilities`; another is refused before any
work with one :class:`~autotm_core.errors.UsageError`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator, Sequence

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import AutotmError, SolverError
from autotm_core.ilp.approximate.layout import ModelLayout
from autotm_core.ilp.model_index import ModelIndex
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.reductions import Reductions
from autotm_core.ilp.search.budget import Budget, seconds_until
from autotm_core.ilp.search.events import Listener, ModelBuilt, ignore
from autotm_core.ilp.search.pool import IncumbentPool, Origin, Source, gap_of
from autotm_core.ilp.search.runner import run_steps
from autotm_core.ilp.search.state import SearchState
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.simulation import Simulation
from autotm_core.solvers.base import (
    DEFAULT_SOLVER,
    MatrixProblem,
    Solver,
    SolveResult,
    TerminationCondition,
)

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class ApproximatePlanResult:
    """What :func:`plan_approximate` produced."""

    plan: Plan
    """The plan returned; it passed the verifier (and has no moves for the static
    formulation)."""
    simulation: Simulation
    """The simulator's :class:`~autotm_core.simulation.Simulation` of the plan."""
    source: Source
    """Where the plan came from: the whole model's solve, the stretches, the windows, the
    baseline or a held plan."""
    baseline: str
    """The baseline the formulation should beat, whose plan is a candidate: ``"first-touch"``
    (static) or ``"greedy"``."""
    baseline_step_seconds: float | None
    """Predicted step time of the baseline's plan (``None`` when it has none: it failed or
    its plan did not verify)."""
    bound_seconds: float
    """A proven lower bound on the optimal step time."""
    bound_source: str
    """``"solver"`` (the solver's best bound on the whole model), ``"lp relaxation"`` (the
    whole model's, solved for relax-and-fix), ``"lagrangian"``
    (:mod:`autotm_core.ilp.approximate.lagrangian`) or ``"kernels"`` (every kernel at its
    fastest)."""
    termination: str
    """Why planning stopped: the whole-model solve's termination when it ran, else
    ``"stretches planned"`` or ``"windows improved the held plan (...)"``, or ``"not run"``
    when the budget was spent before."""
    reductions: Reductions | None
    """The fixings applied, and what each reduction removed (``None``: no model was built)."""
    n_variables: int
    """Variables of the model (0: not built)."""
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
    interrupted: bool = False
    """Whether Ctrl-C stopped the whole-model solve (the plan is the best found before)."""

    @property
    def step_seconds(self) -> float:
        """Predicted step time of the plan."""
        return float(self.simulation.step_seconds)

    @property
    def gap(self) -> float:
        """Worst-case relative distance from the optimum: ``(step - bound) / step``."""
        return gap_of(self.step_seconds, self.bound_seconds) or 0.0


@attrs.define
class ApproximateSearch(SearchState):
    """The state of one approximate search (see the module docstring)."""

    pool: IncumbentPool
    reduce: bool
    threads: int | None
    started: float
    baseline: str = ""
    baseline_step: float | None = None
    baseline_seconds: float = 0.0
    index: ModelIndex | None = None
    reductions: Reductions | None = None
    problem: MatrixProblem | None = None
    layout: ModelLayout | None = None
    build_seconds: float = 0.0
    bound: float = -math.inf
    bound_source: str = ""
    termination: str = "not run"
    solve_seconds: float = 0.0
    version: str = ""
    start: np.ndarray | None = None
    """A complete stretch plan's values, the whole-model solve's start."""
    target: float | None = None
    """The objective the Lagrangian bound aims at (a plan's, model units)."""
    row_duals: np.ndarray | None = None
    full_solve: bool = False
    stretch_seconds: float = 0.0
    """Seconds the stretches took (the whole-model solve needs several times as many)."""
    windowed: bool = False
    """Whether the windows improved a held plan (the stretches are then not planned)."""
    kernel_bound: float = 0.0
    """Every kernel at its fastest, in seconds (known once the model is built)."""
    interrupted: bool = False
    offer_seconds: float = 0.0
    """The longest a plan took to decode, verify and simulate in :meth:`offer`."""

    @property
    def model(self) -> ModelIndex:
        assert self.index is not None, "the build step runs first"
        return self.index

    def offer(self, values: np.ndarray, source: Source, attributes: dict[str, object], *,
              index: ModelIndex | None = None) -> None:
        """Decode ``values`` (of ``index``'s model, the search's own by default) and offer the
        plan to the pool (one that fails verification is logged and left out; the other
        candidates remain)."""
        from autotm_core.ilp.decode import decode_plan

        started = time.perf_counter()
        system = self.system
        planner = {Origin.SOLVE: "ilp", Origin.STRETCHES: "rolling",
                   Origin.WINDOWS: "windows"}[source.origin]
        candidate = decode_plan(self.model if index is None else index, values, self.graph,
                                system,
                                planner=f"approximate/{planner}",
                                capacities={p.name: p.capacity_nbytes for p in system.pools},
                                attributes=attributes)
        if self.pool.offer(candidate, source) is None:
            logger.warning("the %s plan failed verification, left out", source.describe())
        self.offer_seconds = max(self.offer_seconds, time.perf_counter() - started)

    def finish_reserve(self) -> float:
        """Seconds kept after the last solve: its plan decoded, verified and simulated, and
        the answer verified again: twice the longest offer so far, and at least the
        strategy's ``finish_seconds`` (an abandoned solve's threads run on beside the
        decoding; the Llama-7B-shaped step at 4:1 ended 0.7 s past its grace at load 3-7
        with twice the offer alone)."""
        return max(self.strategy.finish_seconds, 2 * self.offer_seconds)

    def held_step(self) -> float | None:
        best = self.pool.best(self.formulation)
        return None if best is None else best.step_seconds


@attrs.frozen
class Baseline:
    """The baseline the formulation should beat: first-touch's (static), else greedy's."""

    name = "held plans"

    def says(self, state: ApproximateSearch) -> str:
        return f"planning the {self.baseline(state)} baseline to beat"

    def baseline(self, state: ApproximateSearch) -> str:
        return "first-touch" if state.formulation is Formulation.STATIC else "greedy"

    def wanted(self, state: ApproximateSearch) -> bool:
        return True

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.baselines import first_touch, greedy

        started = time.perf_counter()
        name = state.baseline = self.baseline(state)
        source = Source(Origin.BASELINE, name=name)
        known = state.pool.held(source)
        if known is not None:  # the caller's pool holds it already
            state.baseline_step = known.step_seconds
            return
        make = first_touch if name == "first-touch" else greedy
        try:
            plan = make(state.graph, state.system,
                        fast_capacity_nbytes=state.system.fast.capacity_nbytes)
        except AutotmError as exc:
            logger.info("no %s plan: %s", name, exc.message)
        else:
            held = state.pool.offer(plan, source)
            state.baseline_step = None if held is None else held.step_seconds
        state.baseline_seconds += time.perf_counter() - started


@attrs.frozen
class StaticStart:
    """The synchronous and asynchronous searches of graphs planned by stretches (up to the
    strategy's :attr:`~Strategy.static_start_kernels`): the static formulation's whole model
    first, by relax-and-fix (its LP relaxation, then the MIP of
    what that leaves), within the strategy's :attr:`~Strategy.static_start_share` of the
    time left. A static plan (no moves) is one of theirs; held in the pool, it starts the
    second pass when it beats the stretches' plan (:func:`_start_from_held`). Its model is a
    third of the synchronous one's size and sees the whole step at once, where the
    stretches see a thousand kernels: on chain:20000 optane-2019 4:1 its plan is 3.5%
    faster than the stretches and their second pass reached in 60 s. Its LP bound bounds
    static plans only, so it is not the search's bound. Not for table costs (relax-and-fix
    is held to separable ones, as in the exact search), and not when the pool already
    holds a static plan of a whole-model solve (the static stage of the chain)."""

    name = "static"

    def says(self, state: ApproximateSearch) -> str:
        return (f"planning {state.graph.name} in the static formulation first (its whole "
                "model, relax-and-fix)")

    def wanted(self, state: ApproximateSearch) -> bool:
        kernels = len(state.graph.kernels)
        return (state.formulation is not Formulation.STATIC
                and state.strategy.static_start_share > 0
                and state.strategy.stretch_kernels < kernels
                <= state.strategy.static_start_kernels
                and state.costs.separable() is not None
                and state.pool.held(Source(Origin.SOLVE, Formulation.STATIC)) is None
                and state.budget.allows(state.budget.build_estimate(kernels,
                                                                    Formulation.STATIC)))

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.incumbent import RelaxAndFix, relax_and_fix_matrix

        static = Formulation.STATIC
        index, _, problem = _reduced_model(state, attrs.evolve(state.options, formulation=static),
                                           name=f"{state.graph.name} (static)")
        with _solving(state):
            found = relax_and_fix_matrix(
                problem, solver=state.solver, relative_gap=state.relative_gap,
                time_limit_seconds=state.budget.limit(state.strategy.static_start_share),
                threads=state.threads, abandon_at=_abandon_at(state))
        if not isinstance(found, RelaxAndFix):
            logger.info("static formulation: no plan in its share of the time")
            return
        state.offer(found.values, Source(Origin.SOLVE, static), {
            "objective_seconds": index.objective_seconds(found.result.objective or 0.0),
            "termination": "relax-and-fix of the static model"}, index=index)


def _reduced_model(state: ApproximateSearch, options: FormulationOptions, *,
                   name: str) -> tuple[ModelIndex, Reductions, MatrixProblem]:
    """The model of ``options`` for the search's graph, its build time told to the budget, the
    exact reductions found (none without ``state.reduce``) and the matrix with them applied."""
    from autotm_core.ilp.formulation import build_program
    from autotm_core.ilp.lp import to_matrix_problem
    from autotm_core.ilp.reductions import find_reductions

    graph = state.graph
    started = time.perf_counter()
    index = build_program(graph, state.costs, state.system, options.capacities, options)
    state.budget.built(len(graph.kernels), options.formulation, time.perf_counter() - started)
    found = (find_reductions(index, graph, state.system, state.costs) if state.reduce
             else Reductions.none(index.lp))
    return index, found, to_matrix_problem(found.apply(index.lp), name=name)


@attrs.frozen
class Build:
    """The model, its reductions and its layout in time, when the estimated build fits the
    time left or nothing is held to return instead."""

    name = "build"

    def says(self, state: ApproximateSearch) -> str:
        return (f"building the {state.formulation.value} model of {state.graph.name} "
                f"({len(state.graph.kernels):,} kernels) to plan it a stretch at a time")

    def wanted(self, state: ApproximateSearch) -> bool:
        estimate = state.budget.build_estimate(len(state.graph.kernels), state.formulation)
        if state.pool.best(state.formulation) is not None and not state.budget.allows(estimate):
            state.termination = (f"not run: building the model (about {estimate:.3g} s) does "
                                 "not fit the time left")
            return False
        return True

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.approximate.layout import model_layout

        started = time.perf_counter()
        graph = state.graph
        index, found, state.problem = _reduced_model(state, state.options, name=graph.name)
        state.index, lp = index, index.lp
        logger.info("reductions: %s", found.summary())
        state.reductions = found
        state.bound = state.kernel_bound = index.objective_seconds(
            float(sum(lp.var_lb[v] for v in index.kernel_time_vars)))
        state.bound_source = "kernels"
        state.layout = model_layout(index, state.problem)
        state.build_seconds = time.perf_counter() - started
        state.full_solve = len(graph.kernels) <= state.strategy.full_solve_kernels
        state.listener(ModelBuilt(state.formulation.value, lp.n_vars, lp.n_binaries, lp.n_rows,
                                  lp.n_nonzeros, state.build_seconds))


def _reserve(state: ApproximateSearch) -> float:
    """Seconds before the deadline at which the windows or stretches stop."""
    remaining = state.budget.remaining() or 0.0
    budget = remaining + (time.perf_counter() - state.started)
    return min(state.strategy.bound_reserve_seconds,
               state.strategy.bound_reserve_share * budget)


def _abandon_at(state: ApproximateSearch) -> float | None:
    """When a solve still running is abandoned: within the grace after the deadline, less the
    time kept to finish (:meth:`ApproximateSearch.finish_reserve`)."""
    return state.budget.abandon_at(reserve=state.finish_reserve())


def _deadline(state: ApproximateSearch, before: float) -> float | None:
    return None if state.budget.deadline is None else state.budget.deadline - before


@contextlib.contextmanager
def _solving(state: ApproximateSearch) -> Iterator[None]:
    """Count the ``with`` body's seconds as solving."""
    started = time.perf_counter()
    try:
        yield
    finally:
        state.solve_seconds += time.perf_counter() - started


def _built_in_time(state: ApproximateSearch) -> bool:
    return state.index is not None and not state.budget.expired


@attrs.frozen
class Windows:
    """Asynchronous: the fastest held plan (the synchronous stage's) improved a window of
    kernels at a time; an asynchronous stretch's LP relaxation does not pay (chain-700 on
    gpu-h200 4:1: 594,535 columns, no stretch planned in 27 s)."""

    name = "windows"

    def says(self, state: ApproximateSearch) -> str:
        return "improving the held plan a window of kernels at a time"

    def wanted(self, state: ApproximateSearch) -> bool:
        return (_built_in_time(state) and state.formulation is Formulation.ASYNCHRONOUS
                and state.pool.best(state.formulation) is not None)

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.neighbourhood import improve_by_windows
        from autotm_core.ilp.warm import warm_start_from_plan

        held_plan = state.pool.best(state.formulation)
        assert held_plan is not None
        held = warm_start_from_plan(state.model, held_plan.plan, state.graph, state.system)
        if held is None:
            return
        state.windowed = True
        with _solving(state):
            improved = improve_by_windows(state.model, held, solver=state.solver,
                                          deadline=_deadline(state, _reserve(state)),
                                          relative_gap=state.relative_gap,
                                          strategy=state.strategy,
                                          abandon_at=_abandon_at(state))
        state.version = improved.result.solver_version
        state.termination = ("windows improved the held plan "
                             f"({improved.result.termination.value})")
        state.offer(improved.values, Source(Origin.WINDOWS, state.formulation),
                    {"held_plan": held_plan.plan.planner})
        step = state.held_step()
        assert step is not None  # the held plan's at least
        state.target = step / state.model.seconds_per_unit
        state.full_solve = False  # its root is the LP relaxation the windows avoid


@attrs.frozen
class Stretches:
    """The model planned a stretch of kernels at a time."""

    name = "stretches"

    def says(self, state: ApproximateSearch) -> str:
        return f"planning {state.graph.name} a stretch of kernels at a time"

    def wanted(self, state: ApproximateSearch) -> bool:
        return _built_in_time(state) and not state.windowed

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.approximate.rolling import rolling_plan

        assert state.layout is not None and state.problem is not None
        strategy = state.strategy
        started = time.perf_counter()
        with _solving(state):
            # out of time, the plan so far is joined to the held plan's: the stretches leave
            # time for that too (Strategy.completion_build_share)
            completion = strategy.completion_build_share * state.build_seconds
            stretched = rolling_plan(state.layout, state.problem, solver=state.solver,
                                     core_kernels=strategy.stretch_kernels,
                                     margin_kernels=strategy.margin_kernels,
                                     relative_gap=state.relative_gap,
                                     deadline=_deadline(state, _reserve(state) + completion),
                                     abandon_at=_abandon_at(state),
                                     held=lambda: _held_values(state),
                                     held_until=_deadline(state, completion))
        state.stretch_seconds = time.perf_counter() - started
        if stretched is None:
            return
        state.termination = "stretches planned"
        attributes: dict[str, object] = {"stretch_kernels": strategy.stretch_kernels,
                                          "planned_kernels": stretched.planned_kernels}
        if stretched.planned_kernels < len(state.graph.kernels):
            rest = "in the slowest pool"
            held_plan = state.pool.best(state.formulation)  # the plan the rest was joined to
            if stretched.completed_from_held and held_plan is not None:
                attributes["completed_from"] = held_plan.plan.planner
                rest = f"as in {held_plan.plan.planner}'s plan"
            state.termination = (f"stretches planned to kernel {stretched.planned_kernels:,}, "
                                 f"the rest {rest} (out of time)")
        else:
            state.start = stretched.values
        state.offer(stretched.values, Source(Origin.STRETCHES, state.formulation), attributes)
        _start_from_held(state)
        step = state.held_step()
        state.target = (float(state.problem.cost @ stretched.values) if step is None
                        else step / state.model.seconds_per_unit)
        state.row_duals = stretched.row_duals


def _start_from_held(state: ApproximateSearch) -> None:
    """Start what follows the stretches (their second pass, the whole model's solve) from
    the fastest held plan instead, when it is not theirs and is faster (the static
    formulation's, :class:`StaticStart`), or when they did not plan every kernel."""
    best = state.pool.best(state.formulation)
    if best is None or best.source == Source(Origin.STRETCHES, state.formulation):
        return
    held = _held_values(state)
    assert state.problem is not None
    cost = np.asarray(state.problem.cost)
    if held is None or (state.start is not None
                        and float(cost @ held) >= float(cost @ state.start)):
        return
    named = best.source.describe(state.formulation)
    logger.info("the second pass starts from the held plan of %s (%.6g s)", named,
                best.step_seconds)
    state.start = held
    state.termination += f"; what follows them starts from the plan of {named}"


def _held_values(state: ApproximateSearch) -> np.ndarray | None:
    """The fastest held plan's values in the model (:func:`~autotm_core.ilp.warm.
    warm_start_from_plan`), ``None`` when nothing is held or the model cannot express it."""
    from autotm_core.ilp.warm import warm_start_from_plan

    best = state.pool.best(state.formulation)
    if best is None:
        return None
    return warm_start_from_plan(state.model, best.plan, state.graph, state.system)


@attrs.frozen
class WholeRelaxAndFix:
    """The whole model relaxed, what its LP sets fixed, the rest solved (one stretch of the
    whole program), when the time left fits it (several times what the stretches took) and
    the whole model is not to be solved after (too many kernels).
    Its plan sees the whole step at once (the stretches' plan of the Llama-7B-shaped step
    was slower than greedy's; this one 0.71x greedy's), and the LP relaxation's optimum
    is a lower bound (the model's LP is near its integer optimum on these graphs)."""

    name = "relax-and-fix"

    def says(self, state: ApproximateSearch) -> str:
        return "relaxing the whole model and fixing what its LP decides"

    def wanted(self, state: ApproximateSearch) -> bool:
        if not _built_in_time(state) or state.windowed or state.stretch_seconds <= 0:
            return False
        if len(state.graph.kernels) <= state.strategy.stretch_kernels:
            return False  # one stretch was the whole model already
        if state.full_solve:
            return False  # the whole model's solve, from the stretch plan, does more
        remaining = state.budget.remaining()
        return remaining is None or remaining - _reserve(state) >= (
            state.strategy.full_solve_stretch_factor * state.stretch_seconds)

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.incumbent import RelaxAndFix, relax_and_fix_matrix

        assert state.problem is not None
        left = state.budget.remaining()
        with _solving(state):
            found = relax_and_fix_matrix(
                state.problem, solver=state.solver, relative_gap=state.relative_gap,
                time_limit_seconds=None if left is None else max(0.0, left - _reserve(state)),
                threads=state.threads, duals=state.solver.capabilities.duals,
                abandon_at=_abandon_at(state))
        if not isinstance(found, RelaxAndFix):
            return
        state.version = found.result.solver_version
        state.termination = "relax-and-fix of the whole model"
        if found.result.best_bound is not None and math.isfinite(found.result.best_bound):
            lp_bound = state.model.objective_seconds(found.result.best_bound)
            if lp_bound > state.bound:
                state.bound, state.bound_source = lp_bound, "lp relaxation"
        state.offer(found.values, Source(Origin.SOLVE, state.formulation), {
            "objective_seconds": state.model.objective_seconds(found.result.objective or 0.0),
            "bound_seconds": state.bound, "termination": state.termination})
        state.start = found.values
        step = state.held_step()
        if step is not None:
            state.target = step / state.model.seconds_per_unit
        if found.row_duals is not None:
            state.row_duals = found.row_duals


@attrs.frozen
class Revisit:
    """A second pass over groups of tensors and stretches of the complete plan held, each
    planned again with everything else at its planned values
    (:func:`~autotm_core.ilp.approximate.rolling.revisit`)."""

    name = "revisit"

    def says(self, state: ApproximateSearch) -> str:
        return "planning each group of tensors and each stretch again with the rest held"

    def wanted(self, state: ApproximateSearch) -> bool:
        return (_built_in_time(state) and state.start is not None and not state.windowed
                and len(state.graph.kernels) > state.strategy.stretch_kernels
                and not _whole_model_fits(state))  # that solve gets the time instead

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.approximate.rolling import revisit

        assert state.layout is not None and state.problem is not None
        assert state.start is not None
        with _solving(state):
            end = _deadline(state, _reserve(state))
            if end is not None:  # the Lagrangian bound gets the rest
                end = time.perf_counter() + state.strategy.revisit_share * max(
                    0.0, end - time.perf_counter())
            again = revisit(state.layout, state.problem, state.start, solver=state.solver,
                            core_kernels=state.strategy.stretch_kernels,
                            relative_gap=state.relative_gap, deadline=end,
                            abandon_at=_abandon_at(state))
        logger.info("revisit: %d of %d groups of tensors and stretches improved", again.improved,
                    again.revisited)
        if not again.improved:
            return
        state.termination += (f"; a second pass improved {again.improved} of "
                              f"{again.revisited} groups of tensors and stretches")
        state.offer(again.values, Source(Origin.STRETCHES, state.formulation), {
            "stretch_kernels": state.strategy.stretch_kernels,
            "revisited_pieces": again.revisited, "improved_pieces": again.improved})
        state.start = None  # its kernel times are not all set: a start comes from the plan
        step = state.held_step()
        if step is not None:
            state.target = step / state.model.seconds_per_unit


@attrs.frozen
class LagrangianBound:
    """A lower bound from the Lagrangian relaxation, started from the stretches' LP prices."""

    name = "bound"

    def says(self, state: ApproximateSearch) -> str:
        return "bounding the optimum (Lagrangian relaxation)"

    def wanted(self, state: ApproximateSearch) -> bool:
        return state.target is not None

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.approximate.lagrangian import lagrangian_bound

        assert state.layout is not None and state.problem is not None
        assert state.target is not None
        strategy = state.strategy
        with _solving(state):
            priced = lagrangian_bound(state.layout, state.problem, target=state.target,
                                      row_duals=state.row_duals,
                                      deadline=_deadline(state, strategy.finish_seconds),
                                      max_iterations=strategy.full_solve_lagrangian_steps
                                      if _whole_model_fits(state)
                                      else strategy.lagrangian_steps,
                                      strategy=strategy)
        seconds = state.model.objective_seconds(priced.objective)
        if seconds > state.bound:
            state.bound, state.bound_source = seconds, "lagrangian"


def _whole_model_fits(state: ApproximateSearch) -> bool:
    """Whether the whole model is to be solved and the time left fits its solve."""
    remaining = state.budget.remaining()
    needed = max(state.strategy.min_full_solve_seconds,
                 state.strategy.full_solve_stretch_factor * state.stretch_seconds)
    return (state.index is not None and state.full_solve
            and (remaining is None or remaining >= needed))


@attrs.frozen
class WholeModel:
    """The whole model, from the stretch plan (else the best held plan), for what is left of
    the budget, when the bound does not already prove the plan within the gap."""

    name = "solve"

    def says(self, state: ApproximateSearch) -> str:
        return f"solving the whole model with {state.solver.name}"

    def wanted(self, state: ApproximateSearch) -> bool:
        step = state.held_step()
        proven = step is not None and (step <= 0 or (step - state.bound) / step
                                       <= state.relative_gap)
        return not proven and _whole_model_fits(state)

    def run(self, state: ApproximateSearch) -> None:
        from autotm_core.ilp.warm import warm_start_from_plan
        from autotm_core.solvers import SolverConfig

        assert state.problem is not None
        start = state.start
        best = state.pool.best(state.formulation)
        if start is None and best is not None:  # the stretches failed: the best held plan
            start = warm_start_from_plan(state.model, best.plan, state.graph, state.system)
        # its plan is decoded, verified and simulated, and the answer checked again, within
        # the time limit; a solve that does not stop is abandoned within the grace after it
        config = SolverConfig(time_limit_seconds=state.budget.limit(
                                  reserve=state.finish_reserve()),
                              relative_gap=state.relative_gap, threads=state.threads,
                              warm_start=start is not None,
                              abandon_after_seconds=seconds_until(_abandon_at(state)))
        result, values = state.solver.solve(state.problem, config, start)
        state.version = result.solver_version
        state.termination = result.termination.value
        state.interrupted = result.termination is TerminationCondition.INTERRUPTED
        state.solve_seconds += result.solve_seconds + result.handoff_seconds
        if result.best_bound is not None and math.isfinite(result.best_bound):
            solver_bound = state.model.objective_seconds(result.best_bound)
            if solver_bound > state.bound:
                state.bound, state.bound_source = solver_bound, "solver"
        if values is not None and not _abandoned_at_its_start(result, state.problem, start):
            state.offer(values, Source(Origin.SOLVE, state.formulation), {
                "objective_seconds": state.model.objective_seconds(result.objective or 0.0),
                "bound_seconds": state.bound, "termination": state.termination})


def _abandoned_at_its_start(result: SolveResult, problem: MatrixProblem,
                            start: np.ndarray | None) -> bool:
    """Whether an abandoned solve's last solution is no better than the start it was given,
    a held plan's: it is not decoded again, in the grace after the deadline (the
    Llama-7B-shaped step at 4:1, load 3-7: its whole model reported only its start)."""
    if (result.termination is not TerminationCondition.ABANDONED or start is None
            or result.objective is None):
        return False
    held = float(np.asarray(problem.cost) @ start + problem.offset)
    return result.objective >= held - 1e-9 * max(1.0, abs(held))


APPROXIMATE_STEPS = (Baseline(), StaticStart(), Build(), Windows(), Stretches(),
                     WholeRelaxAndFix(), Revisit(), LagrangianBound(), WholeModel())
"""The approximate planner's steps, in order (see the module docstring)."""


def plan_approximate(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    time_budget_seconds: float | None = None,
    budget: Budget | None = None,
    relative_gap: float = 0.01,
    costs: KernelCosts | None = None,
    options: FormulationOptions | None = None,
    solver: Solver | None = None,
    reduce: bool = True,
    threads: int | None = None,
    strategy: Strategy = DEFAULT_STRATEGY,
    start_plans: Sequence[Plan] = (),
    pool: IncumbentPool | None = None,
    listener: Listener = ignore,
) -> ApproximatePlanResult:
    """Plan ``graph`` within ``budget`` (else ``time_budget_seconds``, else the strategy's
    :attr:`~Strategy.approximate_seconds`) end to end (see the module docstring).

    The solves, by ``solver`` (the default plugin's when ``None``), get what is left of
    the budget after building, and stop earlier at ``relative_gap``. ``pool`` holds the
    plans to beat (made when not given); ``start_plans`` are offered to it, and the
    fastest plan the formulation allows starts the whole-model solve when the stretches
    fail. Raises :class:`~autotm_core.errors.UsageError` at once when the solver lacks
    integer variables or row duals, :class:`~autotm_core.errors.CapacityError` when no
    plan fits, and :class:`~autotm_core.errors.SolverError` when no plan was found in the
    budget.
    """
    from autotm_core.costs import resolve_costs
    from autotm_core.ilp.infeasible import check_lower_bounds
    from autotm_core.ilp.options import resolve_capacities
    from autotm_core.ilp.solve import require
    from autotm_core.plugins import get_solver

    backend = solver if solver is not None else get_solver(DEFAULT_SOLVER)
    require(backend, "mip", "duals", purpose="plan approximately",
            instead="--solver highs (its LP row duals start the Lagrangian bound), "
                    "or --mode exact")
    started = time.perf_counter()
    if budget is None:
        seconds = (strategy.approximate_seconds if time_budget_seconds is None
                   else time_budget_seconds)
        budget = Budget.of(seconds, min_solve_seconds=strategy.min_solve_seconds,
                           grace_seconds=strategy.grace_seconds(seconds),
                           answer_seconds=strategy.answer_seconds, started=started)
    if fast_capacity_nbytes is not None:
        system = system.with_capacity(system.fast.name, int(fast_capacity_nbytes))
    options = options or FormulationOptions()
    costs = costs if costs is not None else resolve_costs(graph, system)
    check_lower_bounds(graph, system, resolve_capacities(graph, system, options.capacities),
                       options)
    if pool is None:
        pool = IncumbentPool(graph, system, costs, listener=listener,
                             recompute=options.recompute)
    pool.offer_all((p, Source(Origin.WARM_START, name=p.planner)) for p in start_plans)
    state = ApproximateSearch(graph=graph, system=system, costs=costs, options=options,
                              solver=backend, relative_gap=relative_gap, strategy=strategy,
                              budget=budget, listener=listener, pool=pool, reduce=reduce,
                              threads=threads, started=started)
    run_steps(APPROXIMATE_STEPS, state, budget=budget, listener=listener)
    return _result(state)


def _result(state: ApproximateSearch) -> ApproximatePlanResult:
    """The pool's best plan the formulation allows, with the best bound that bounds it."""
    from autotm_core.plans.verify import check_plan

    graph, system, costs, pool = state.graph, state.system, state.costs, state.pool
    best = pool.best(state.formulation)
    if best is None:
        raise SolverError(
            f"no plan of graph {graph.name!r} was found within the time budget, and the "
            f"{state.baseline} baseline has none",
            hint="give the planner more time (--time-limit), more fast memory, or plan exactly "
                 "(--mode exact)")
    check_plan(best.plan, graph, system)
    step = best.step_seconds
    if state.index is None:  # no model was built: every kernel at its fastest
        from autotm_core.costs.model import least_kernel_seconds

        state.kernel_bound = float(least_kernel_seconds(costs, len(graph.kernels)).sum())
        state.bound, state.bound_source = state.kernel_bound, "kernels"
    bound, bound_source = state.bound, state.bound_source
    if bound > step * (1 + 1e-9) and best.source.origin not in (Origin.SOLVE, Origin.STRETCHES):
        # a plan from outside the model (page rounding, pinning) beats the model's bound,
        # which then bounds nothing about it: only every kernel at its fastest does
        bound, bound_source = min(state.kernel_bound, bound), "kernels"
    # a bound above a feasible plan's time can only come from tolerances now: clip it
    bound = min(bound, step)
    lp = state.index.lp if state.index is not None else None
    return ApproximatePlanResult(
        plan=best.plan, simulation=best.simulation, source=best.source,
        baseline=state.baseline, baseline_step_seconds=state.baseline_step,
        bound_seconds=bound, bound_source=bound_source, termination=state.termination,
        reductions=state.reductions, n_variables=0 if lp is None else lp.n_vars,
        n_binaries=0 if lp is None else lp.n_binaries,
        n_nonzeros=0 if state.problem is None else state.problem.n_nonzeros,
        build_seconds=state.build_seconds, baseline_seconds=state.baseline_seconds,
        solve_seconds=state.solve_seconds, total_seconds=time.perf_counter() - state.started,
        system=system, solver_name=state.solver.name, solver_version=state.version,
        interrupted=state.interrupted)


__all__ = ["APPROXIMATE_STEPS", "ApproximatePlanResult", "ApproximateSearch",
           "plan_approximate"]
