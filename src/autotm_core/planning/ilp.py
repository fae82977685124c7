"""ILP planning of a point, monotone in the formulation: richer never returns worse.

Every static plan is a synchronous plan, and every synchronous plan an
asynchronous one. So :func:`plan_ilp` runs a chain of steps: the held plans
(the caller's warm starts, first-touch's, and for a moving formulation greedy's),
then each formulation up to the one asked for (static, synchronous, asynchronous),
each started from the plans held so far. With recomputation each formulation runs three
times: keeping and moving only; then choosing among the held plans' reruns only (a model
about the size of the first, which improves what practitioners do by hand: checkpoint-layers'
reruns with every other tensor placed and moved by the solver); then recomputing with every
rerun option. Every plan goes into one
:class:`~autotm_core.ilp.search.pool.IncumbentPool`, which verifies, simulates and
(with addresses) packs it once; the answer is the pool's fastest plan the asked
formulation allows, saying where it came from: a formulation asked for never
reports a plan worse than one the planner already held, and with addresses every
plan compared carries addresses that fit. The bound reported is the richest
model's (a lower bound on every plan it allows); the gap is measured from it.

Approximate planning (very large graphs) plans the formulation asked for a
stretch at a time; asked for the asynchronous formulation it plans the
synchronous one first, whose plan it hands over (its static plan would be of no
use to either).

The time limit bounds the whole call (:class:`~autotm_core.ilp.search.budget.Budget`):
each formulation gets a share of what is left when it starts (the strategy's stage
weights; time a stage does not use passes on), a richer formulation is not started
without the time to build its model (estimated from its size before it is built, and
the strategy's setup factor), and the outcome lists the seconds of every phase.
Ctrl-C in any step stops the chain: the pool's best plan is returned, marked
interrupted.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

import attrs

from autotm_core.errors import CapacityError, NoPlanFoundError, SolveInterruptedError
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.restrictions import model_restrictions
from autotm_core.ilp.search.budget import Budget
from autotm_core.ilp.search.events import Listener
from autotm_core.ilp.search.pool import (
    Held,
    IncumbentPool,
    Origin,
    Source,
    WarmStart,
    gap_of,
)
from autotm_core.ilp.search.runner import SearchInterrupted, Step, interruptible, run_steps
from autotm_core.ilp.search.strategy import Strategy
from autotm_core.ir import Graph
from autotm_core.planning.mode import PlanMode, resolve_mode
from autotm_core.planning.outcome import Addresses, ModelSize, Outcome, SolveStats, model_name
from autotm_core.planning.planners import PLANNERS, Planner
from autotm_core.planning.problem import Problem
from autotm_core.planning.settings import PlanSettings
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import Solver, SolveResult, TerminationCondition
from autotm_core.units import PAGE_NBYTES, format_bytes

if TYPE_CHECKING:
    from autotm_core.ilp.fitting import FitRound

logger = logging.getLogger(__name__)

CHAIN = (Formulation.STATIC, Formulation.SYNCHRONOUS, Formulation.ASYNCHRONOUS)
"""The formulations from the simplest; each one's plans are plans of the next."""

_NOT_PROVEN = frozenset({TerminationCondition.TIME_LIMIT, TerminationCondition.INTERRUPTED,
                         TerminationCondition.ABANDONED, TerminationCondition.ITERATION_LIMIT,
                         TerminationCondition.UNKNOWN, TerminationCondition.ERROR})
"""Terminations after which a loaded plan is the best found, not a proven one."""


class StageKind(NamedTuple):
    """What one stage of the chain solves."""

    formulation: Formulation
    recompute: bool = False
    """Whether its model may recompute (reruns)."""
    held_reruns: bool = False
    """With :attr:`recompute`: its only rerun options are the held plans' reruns
    (:attr:`~autotm_core.ilp.options.FormulationOptions.rerun_seeds_only`)."""

    @property
    def name(self) -> str:
        """The stage's name in phases and notes."""
        return model_name(self.formulation.value, recomputes=self.recompute,
                          held_reruns=self.held_reruns)


@attrs.frozen(kw_only=True)
class IlpSettings:
    """How the ILP planner plans a point: :class:`PlanSettings` with the mode resolved for
    the graph and the solver resolved to its backend."""

    mode: PlanMode
    """Exact or approximate (already resolved from ``auto``)."""
    addresses: bool
    """Whether plans get addresses that fit (exact planning only)."""
    solver: Solver
    """The solver backend every solve runs on."""
    time_limit_seconds: float | None
    """The whole call's time limit (every formulation, round and solve)."""
    relative_gap: float
    """Relative gap at which a solve stops."""
    max_rounds: int
    """Address-fitting rounds before giving up."""
    pin_to_fast: bool
    """Keep parameters, inputs and outputs in the fastest pool."""
    recompute: bool
    """Whether the models may recompute activations (reruns)."""
    page_nbytes: int
    """Sizes are rounded up to a multiple of this in the model's capacity rows."""
    async_window: int
    """Asynchronous models: the kernels from a use within which a copy is issued or done."""
    async_spans: bool
    """Asynchronous models: copies in flight over several kernels."""
    strategy: Strategy
    """Every knob of the search."""

    @classmethod
    def of(cls, settings: PlanSettings, graph: Graph, solver: Solver) -> IlpSettings:
        """``settings`` for ``graph``, solved by ``solver``."""
        return cls(
            mode=resolve_mode(graph, settings.mode,
                              threshold_kernels=settings.strategy.approximate_above_kernels),
            addresses=settings.addresses, solver=solver,
            time_limit_seconds=settings.time_limit_seconds,
            relative_gap=settings.relative_gap, max_rounds=settings.max_rounds,
            pin_to_fast=settings.pin_to_fast, recompute=settings.recompute,
            # pages are the allocator's: sizes round to them only when addresses are fitted
            page_nbytes=PAGE_NBYTES if settings.addresses else 1,
            async_window=settings.async_window, async_spans=settings.async_spans,
            strategy=settings.strategy)

    def options(self, formulation: Formulation, *, recompute: bool,
                depth: int | None = None) -> FormulationOptions:
        """The formulation options of ``formulation``'s model (recomputing or not, with rerun
        chains of at most ``depth`` producers; ``None``: the options' default)."""
        options = FormulationOptions(formulation=formulation, pin_to_fast=self.pin_to_fast,
                                     page_nbytes=self.page_nbytes, recompute=recompute,
                                     async_window=self.async_window,
                                     async_spans=self.async_spans)
        return options if depth is None else attrs.evolve(options, recompute_depth=depth)

    @property
    def fits_addresses(self) -> bool:
        """Whether plans are held to an address packing (exact planning with addresses)."""
        return self.addresses and self.mode is PlanMode.EXACT


@attrs.define
class _Chain:
    """The state of one point's search: the pool, and what the last stage reported."""

    problem: Problem
    target: Planner
    settings: IlpSettings
    pool: IncumbentPool
    budget: Budget
    listener: Listener
    warm_starts: tuple[WarmStart, ...]
    report: Outcome | None = None
    """The last stage's own outcome (its solve, model, fitting, reductions)."""
    notes: list[str] = attrs.field(factory=list)
    interrupted: bool = False
    stopped: bool = False

    @property
    def formulation(self) -> Formulation:
        assert self.target.formulation is not None  # every ILP planner has one
        return self.target.formulation

    @functools.cached_property
    def recompute_depth(self) -> int | None:
        """How many producers back the recomputing models' rerun chains reach: the deepest
        (up to the formulation options' default) whose options number at most the strategy's
        :attr:`~Strategy.rerun_options_per_kernel` per kernel; ``None`` when the chain has no
        recomputing stage: recomputation is off, planning is approximate (a stretch cannot
        see a value's forward and backward uses together: approximate planning holds the
        practitioners' recomputing plans only), or the graph has nothing the model may
        recompute."""
        from autotm_core.ilp.reruns import rerun_options

        settings = self.settings
        if not settings.recompute or settings.mode is not PlanMode.EXACT:
            return None
        problem = self.problem
        cap = settings.strategy.rerun_options_per_kernel * len(problem.graph.kernels)
        deepest = settings.options(self.formulation, recompute=True).recompute_depth
        chosen = None
        for depth in sorted({0, 1, 2, 4, deepest} & set(range(deepest + 1))):
            found = len(rerun_options(problem.graph, problem.costs, problem.limited_system,
                                      settings.options(self.formulation, recompute=True,
                                                       depth=depth)).options)
            if not found:
                continue  # every option needs a longer chain
            if chosen is not None and found > cap:
                break
            chosen = depth
            if found > cap:
                break  # the shallowest that has options is over: it is still offered
        return chosen

    @functools.cached_property
    def least_seconds(self) -> float:
        """The step with every kernel at its least time: no plan, recomputing or not, is
        faster (the physical bound's compute term, without its traffic LP)."""
        from autotm_core.planning.bound_rates import least_seconds

        problem = self.problem
        return float(least_seconds(problem.costs, problem.graph.liveness,
                                   problem.fast_capacity_nbytes).sum())

    @property
    def recomputes(self) -> bool:
        """Whether the chain has recomputing stages (see :attr:`recompute_depth`)."""
        return self.recompute_depth is not None

    def options(self, formulation: Formulation, *, recompute: bool) -> FormulationOptions:
        """The formulation options of one stage's model."""
        return self.settings.options(formulation, recompute=recompute,
                                     depth=self.recompute_depth if recompute else None)

    @property
    def stages(self) -> tuple[StageKind, ...]:
        """The stages. With recomputation, each formulation of the chain keeps and moves
        only, then chooses among the held plans' reruns, then recomputes with every option,
        each started from the plans held so far: the recomputing model is larger and slower
        to solve (Hugging Face GPT-2 at 0.92 GiB: 30.8 ms after 120 s, 20% from its bound,
        where the model of checkpoint-layers' 68 reruns reached 24.9 ms, 0.2% from its own
        bound, in 15 s), and so never answers worse than the smaller models did."""
        chain = CHAIN[:CHAIN.index(self.formulation) + 1]
        if self.settings.mode is PlanMode.APPROXIMATE:
            # a stretch at a time: a moving plan to hand over, not the static one
            chain = chain[-2:] if self.formulation is Formulation.ASYNCHRONOUS else chain[-1:]
        if self.recomputes:
            return tuple(kind for f in chain for kind in (
                StageKind(f), StageKind(f, recompute=True, held_reruns=True),
                StageKind(f, recompute=True)))
        return tuple(StageKind(f) for f in chain)

    def held_reruns(self, formulation: Formulation) -> frozenset[tuple[int, int]]:
        """The reruns ``(kernel, before)`` of the plans held to start ``formulation``'s
        models from."""
        return frozenset((r.kernel, r.before) for held in self.pool.starts(formulation)
                         for r in held.plan.reruns)


def plan_ilp(problem: Problem, planner: Planner, settings: IlpSettings, *,
             warm_starts: Sequence[Plan | WarmStart], listener: Listener,
             started: float | None = None) -> Outcome:
    """The ILP's plan of ``problem`` for ``planner``'s formulation (see the module docstring);
    its time limit counts from ``started`` (a :func:`time.perf_counter` reading; ``None``:
    now)."""
    from autotm_core.ilp.fitting import Packing

    started = time.perf_counter() if started is None else started
    strategy = settings.strategy
    limit = settings.time_limit_seconds
    if limit is None and settings.mode is PlanMode.APPROXIMATE:
        limit = strategy.approximate_seconds
    budget = Budget.of(limit, min_solve_seconds=strategy.min_solve_seconds,
                       grace_seconds=strategy.grace_seconds(limit),
                       answer_seconds=strategy.answer_seconds, started=started)
    graph, system = problem.graph, problem.limited_system
    packing = Packing(graph, system) if settings.fits_addresses else None
    chain = _Chain(problem=problem, target=planner, settings=settings,
                   pool=IncumbentPool(graph, system, problem.costs, test=packing,
                                      listener=listener, recompute=settings.recompute),
                   budget=budget, listener=listener,
                   warm_starts=tuple(WarmStart.of(w) for w in warm_starts))
    steps: list[Step[_Chain]] = [_HeldPlans(),
                                 *(_Stage(kind, i) for i, kind in enumerate(chain.stages))]
    try:
        run_steps(steps, chain, budget=budget, listener=listener)
    except (SearchInterrupted, SolveInterruptedError) as exc:
        chain.interrupted = True
        logger.warning("interrupted (Ctrl-C) in %s: the best plan held is kept",
                       getattr(exc, "step", "a solve"))
    outcome = _answer(chain)
    return attrs.evolve(outcome, planner=planner, plan_seconds=time.perf_counter() - started,
                        phases=budget.phases())


@attrs.frozen
class _HeldPlans:
    """The plans to start from and to beat: the warm starts, first-touch's and (for a moving
    formulation) greedy's, offered to the pool; with recomputation also what practitioners
    do: checkpoint-layers', recompute-only's (exact planning only: its greedy took 42 s on
    example:chain-3000, and 2.8 s on the 1,627 kernels of zoo:inception_v4) and, for the
    asynchronous formulation, offload-activations'."""

    name = "held plans"

    def says(self, chain: _Chain) -> str:
        return ("planning first-touch's, greedy's" + (" and the practitioners' recomputing"
                                                      if chain.settings.recompute else "")
                + " plans to start from and to beat")

    def wanted(self, chain: _Chain) -> bool:
        return True

    def run(self, chain: _Chain) -> None:
        from autotm_core.baselines import (
            checkpoint_layers,
            first_touch,
            greedy,
            offload_activations,
            recompute_only,
        )
        from autotm_core.baselines.checkpoint_layers import has_layers
        from autotm_core.errors import AutotmError

        problem = chain.problem
        for warm in chain.warm_starts:
            chain.pool.offer(warm.plan, warm.source)
        baselines: list[tuple[str, Callable[..., Plan]]] = [("first-touch", first_touch)]
        if chain.formulation is not Formulation.STATIC:
            baselines.append(("greedy", greedy))
        if chain.settings.recompute and has_layers(problem.graph):
            # without layers it reruns nothing (4.5 s for a first-touch-like plan on
            # example:chain-20000, a 60 s point)
            baselines.append(("checkpoint-layers", checkpoint_layers))
        if chain.settings.recompute:
            if chain.settings.mode is PlanMode.EXACT:
                baselines.append(("recompute-only", recompute_only))
            if chain.formulation is Formulation.ASYNCHRONOUS:
                baselines.append(("offload-activations", offload_activations))
        for name, baseline in baselines:
            try:
                made = baseline(problem.graph, problem.limited_system, costs=problem.costs)
            except AutotmError as exc:
                logger.info("no %s plan to hold: %s", name, exc.message)
                continue
            chain.pool.offer(made, Source(Origin.BASELINE, name=name))


@attrs.frozen
class _Stage:
    """One formulation of the chain, within its share of the time left."""

    kind: StageKind
    position: int

    name = None  # its phases are recorded under the stage's name

    @property
    def formulation(self) -> Formulation:
        return self.kind.formulation

    @property
    def recompute(self) -> bool:
        return self.kind.recompute

    @property
    def stage(self) -> str:
        """The stage's name in phases and notes."""
        return self.kind.name

    def says(self, chain: _Chain) -> str:
        return f"planning the {self.stage} formulation"

    def wanted(self, chain: _Chain) -> bool:
        return not chain.stopped

    def run(self, chain: _Chain) -> None:
        settings = chain.settings
        strategy = settings.strategy
        # a held-reruns stage takes its time out of its recomputing stage's share
        later = sum(strategy.stage_weight(k.formulation, recompute=k.recompute)
                    for k in chain.stages[self.position:] if not k.held_reruns)
        share = strategy.stage_weight(self.formulation, recompute=self.recompute) / later
        if self.kind.held_reruns:
            share *= strategy.held_reruns_share
        # a held plan within the gap of every kernel at its least time leaves the recomputing
        # model nothing to win, once a model has answered; before, its own answer (a plan,
        # or that none fits its restrictions, such as pinning) is the one to give
        if (self.recompute and chain.report is not None
                and not _recomputing_can_pay(chain, self.formulation)):
            return  # its share passes on
        if self.kind.held_reruns and not chain.held_reruns(self.formulation):
            return  # no held plan reruns anything: its share passes on
        if chain.report is not None and not _time_for(chain, self.formulation):
            chain.notes.append(
                f"too little of the time limit was left to plan the {self.stage} "
                "formulation; the best plan held is returned")
            chain.stopped = True
            return
        following = chain.stages[self.position + 1:self.position + 2]
        if share < 1.0 and following and not _time_after(chain, share, following[0]):
            logger.info("the %s stage takes all the time left: after its share, too little "
                        "would be left to plan the %s formulation", self.stage,
                        following[0].name)
            share = 1.0
        budget = chain.budget.part(share, stage=self.stage)
        if self.recompute and budget.deadline is None:
            seconds = strategy.untimed_recompute_seconds
            budget = attrs.evolve(budget, deadline=time.perf_counter() + seconds,
                                  grace_seconds=strategy.grace_seconds(seconds))
        stage = _approximate if settings.mode is PlanMode.APPROXIMATE else _exact
        try:
            with interruptible(self.stage):
                report = stage(chain, PLANNERS[self.formulation.value], budget, self.kind)
        except (CapacityError, NoPlanFoundError) as exc:  # e.g. out of time
            self._no_plan(chain, exc)
            return
        chain.report = report
        if (report.solve is not None
                and report.solve.termination == TerminationCondition.ABANDONED.value):
            chain.notes.append(
                f"the {self.formulation.value} solve did not stop at its time limit and was "
                "abandoned, so that planning ends within the time limit and its grace; the "
                "best plan held is returned")
        if report.interrupted:  # Ctrl-C: stop the chain, keep the best verified plan
            chain.interrupted = chain.stopped = True

    def _no_plan(self, chain: _Chain, exc: CapacityError | NoPlanFoundError) -> None:
        """After the stage gave no plan: the chain goes on to its recomputing stage (which may
        fit where keeping and moving cannot), or stops with the best plan held; before any
        stage reported, a model that no plan fits (:class:`CapacityError`: within its
        restrictions, such as pinning, that the held plans need not honour) is the answer."""
        held = chain.pool.best(chain.formulation)
        following = chain.stages[self.position + 1:self.position + 2]
        goes_on = (bool(following) and following[0].formulation is self.formulation
                   and following[0].recompute)
        # address fitting that ran out of time (its tightened solve found nothing) says
        # CapacityError too, but proves nothing about the capacity: a held plan is the answer
        out_of_time = isinstance(exc.__cause__, NoPlanFoundError)
        if chain.report is None and not goes_on and (
                held is None or (isinstance(exc, CapacityError) and not out_of_time)):
            raise exc
        then = ("its recomputing model is tried" if goes_on else
                "the best plan held is returned" if held is None else
                f"the best plan held ({held.source.describe(chain.formulation)}) is returned")
        chain.notes.append(f"the {self.stage} formulation gave no plan that fits "
                           f"({exc.message}); {then}")
        chain.stopped = not goes_on


def _recomputing_can_pay(chain: _Chain, formulation: Formulation) -> bool:
    """Whether a recomputing model of ``formulation`` could beat the best plan held by more
    than the relative gap: no plan, recomputing or not, takes less than every kernel at its
    least time (the physical bound's compute term; its traffic term is an LP that took 26 s
    on zoo:inception_v4:batch=64, too long to ask inside a time limit)."""
    best = chain.pool.best(formulation)
    if best is None:
        return True
    compute = chain.least_seconds
    if best.step_seconds > compute * (1 + chain.settings.relative_gap):
        return True
    logger.info("the %s recomputing model is not solved: the %s plan held (%.6g s) is within "
                "the gap of every kernel at its least time (%.6g s)", formulation.value,
                best.source.describe(formulation), best.step_seconds, compute)
    return False


def _time_for(chain: _Chain, formulation: Formulation) -> bool:
    """Whether the time left allows ``formulation``'s stage after the last one: at least its
    model's estimated build, and (exact) the setup factor times the last model's build."""
    remaining = chain.budget.remaining()
    return remaining is None or remaining > _setup_seconds(chain, formulation)


def _setup_seconds(chain: _Chain, formulation: Formulation) -> float:
    """The least time :func:`_time_for` asks for ``formulation``'s stage after the last
    stage that reported."""
    budget, report = chain.budget, chain.report
    estimate = budget.build_estimate(len(chain.problem.graph.kernels), formulation)
    if chain.settings.mode is PlanMode.APPROXIMATE or report is None or report.solve is None:
        return estimate
    return max(chain.settings.strategy.setup_factor * report.solve.build_seconds, estimate)


def _time_after(chain: _Chain, share: float, following: StageKind) -> bool:
    """Whether, once a stage has used ``share`` of the time left, enough would be left to
    start the ``following`` stage (:func:`_time_for`, the last model's build standing for
    the stage's own): when not, the stage takes all of it rather than leave time that no
    stage uses (Hugging Face GPT-2 at 0.92 GiB, asynchronous, 120 s: the stage of the held
    plans' reruns improved four of five windows in 16.6 s, and the 19.5 s left after it
    were refused to the recomputing stage, whose model takes 1.4 s to build)."""
    remaining = chain.budget.remaining()
    if remaining is None:
        return True
    return remaining * (1.0 - share) > _setup_seconds(chain, following.formulation)


def _exact(chain: _Chain, planner: Planner, budget: Budget, kind: StageKind) -> Outcome:
    """One exact search of ``planner``'s formulation (as ``kind`` says: recomputing or not,
    with the held plans' reruns only or every option), with addresses when asked."""
    from autotm_core.ilp.planner import plan_graph

    problem, settings, pool = chain.problem, chain.settings, chain.pool
    assert planner.formulation is not None
    options = chain.options(planner.formulation, recompute=kind.recompute)
    graph, system = problem.graph, problem.limited_system
    starts = tuple(h.plan for h in pool.starts(planner.formulation))
    if kind.recompute:
        # the held plans' reruns (checkpoint-layers' chains run deeper than the depth kept)
        options = attrs.evolve(options, rerun_seeds=chain.held_reruns(planner.formulation),
                               rerun_seeds_only=kind.held_reruns)
    fitting = None
    if settings.fits_addresses:
        from autotm_core.ilp.fitting import joined_begin_outside, plan_with_addresses

        fitted = plan_with_addresses(
            graph, system, costs=problem.costs, options=options, solver=settings.solver,
            relative_gap=settings.relative_gap, budget=budget, max_rounds=settings.max_rounds,
            strategy=settings.strategy, pool=pool, listener=chain.listener)
        if fitted.result is None:  # Ctrl-C before the first round had a plan
            raise SolveInterruptedError("interrupted (Ctrl-C) before the first round's plan")
        result, bound, source = fitted.result, fitted.bound_seconds, fitted.source
        fitting = Addresses(fits=fitted.fits, rounds=fitted.rounds, assignment=fitted.assignment)
        if fitted.begin_outside:  # the last round's model, which the restrictions describe
            options = attrs.evolve(options, begin_outside=joined_begin_outside(
                options.begin_outside, fitted.begin_outside))
        plan, interrupted = fitted.plan, fitted.interrupted
        with budget.phase("check"):
            held = pool.best(planner.formulation)
            assert held is not None and held.plan is plan
            simulation = held.simulation
    else:
        result = plan_graph(graph, system, costs=problem.costs, options=options,
                            solver=settings.solver, relative_gap=settings.relative_gap,
                            budget=budget, start_plans=starts, strategy=settings.strategy,
                            listener=chain.listener, make_greedy=False)
        source = Source(Origin.SOLVE, planner.formulation)
        pool.offer(result.plan, source, simulation=result.simulation)
        plan, bound, simulation = result.plan, result.bound_seconds, result.simulation
        interrupted = result.solve.termination is TerminationCondition.INTERRUPTED
    restrictions = model_restrictions(graph, system, costs=problem.costs, options=options)
    stats = _stats(result.solve, objective=result.objective_seconds,
                   build_seconds=result.build_seconds, warm_started=result.warm_started,
                   bound=bound, step_seconds=float(simulation.step_seconds),
                   restrictions=restrictions, interrupted=interrupted,
                   relative_gap=settings.relative_gap)
    size = ModelSize(formulation=planner.name, recomputes=options.recompute,
                     held_reruns=options.rerun_seeds_only,
                     variables=result.n_variables,
                     binaries=result.n_binaries, constraints=result.n_constraints,
                     nonzeros=result.n_nonzeros)
    step = float(simulation.step_seconds)
    note = "" if fitting is None else _held_over_rounds(fitting.rounds, step, kind.name,
                                                       source.describe(planner.formulation),
                                                       result.objective_seconds)
    return Outcome(problem=problem, planner=planner, plan=plan, simulation=simulation,
                   step_seconds=step, source=source.describe(planner.formulation), solve=stats,
                   model=size, addresses=fitting, plan_seconds=0.0, note=note)


def _held_over_rounds(rounds: Sequence[FitRound], step: float, stage: str, source: str,
                      objective: float | None) -> str:
    """What to say when none of a stage's address-fitting rounds made the plan returned (a
    plan held from before packs faster): the head's objective and termination are the last
    round's, not this plan's."""
    if any((r.fits and r.step_seconds == step) or r.room_step_seconds == step for r in rounds):
        return ""
    last = "" if objective is None else f"; the last round's objective {objective:.6g} s"
    return (f"none of the {stage} stage's {len(rounds)} address-fitting round(s) made a plan "
            f"that packs faster than the held {source} plan ({step:.6g} s{last}), which is "
            "returned")


def _within(gap: float | None, relative_gap: float) -> bool:
    """Whether the plan's own gap (its simulated step against the bound) is within the gap
    asked for: a solver's "optimal" is not taken on its word (HiGHS 1.16 has returned a warm
    start's values while reporting a 2.5% better objective)."""
    return gap is not None and gap <= relative_gap + 1e-9


def _stats(solve: SolveResult, *, objective: float | None, build_seconds: float,
           warm_started: bool, bound: float | None, step_seconds: float,
           restrictions: tuple[str, ...], interrupted: bool, relative_gap: float) -> SolveStats:
    gap = gap_of(step_seconds, bound)
    in_model = (solve.status.value == "optimal" and solve.termination not in _NOT_PROVEN
                and _within(gap, relative_gap))
    return SolveStats(
        solver=solve.solver_name, solver_version=solve.solver_version, mode=PlanMode.EXACT,
        termination="interrupted" if interrupted else solve.termination.value,
        status=solve.status.value, optimal_in_model=in_model and not interrupted,
        proven_optimal=in_model and not interrupted and not restrictions,
        restrictions=restrictions, interrupted=interrupted, objective_seconds=objective,
        bound_seconds=bound, bound_source="" if bound is None else "solver", gap=gap,
        build_seconds=build_seconds, handoff_seconds=solve.handoff_seconds,
        solve_seconds=solve.solve_seconds, warm_started=warm_started)


def _approximate(chain: _Chain, planner: Planner, budget: Budget, kind: StageKind) -> Outcome:
    from autotm_core.ilp.approximate import plan_approximate

    problem, settings = chain.problem, chain.settings
    graph = problem.graph
    assert planner.formulation is not None
    options = chain.options(planner.formulation, recompute=kind.recompute)
    with budget.phase("approximate"):
        result = plan_approximate(
            graph, problem.limited_system, costs=problem.costs, solver=settings.solver,
            options=options, relative_gap=settings.relative_gap, budget=budget,
            strategy=settings.strategy, pool=chain.pool, listener=chain.listener)
    restrictions = model_restrictions(graph, problem.limited_system, costs=problem.costs,
                                      options=options)
    stats = SolveStats(
        solver=result.solver_name, solver_version=result.solver_version,
        mode=PlanMode.APPROXIMATE, termination=result.termination, status="feasible",
        proven_optimal=False, optimal_in_model=False, restrictions=restrictions,
        interrupted=result.interrupted, objective_seconds=result.step_seconds,
        bound_seconds=result.bound_seconds, bound_source=result.bound_source, gap=result.gap,
        build_seconds=result.build_seconds + result.baseline_seconds, handoff_seconds=0.0,
        solve_seconds=result.solve_seconds, warm_started=True)
    size = ModelSize(formulation=planner.name, recomputes=options.recompute,
                     held_reruns=options.rerun_seeds_only,
                     variables=result.n_variables,
                     binaries=result.n_binaries, constraints=None, nonzeros=result.n_nonzeros)
    return Outcome(problem=problem, planner=planner, plan=result.plan,
                   simulation=result.simulation, step_seconds=result.step_seconds,
                   source=result.source.describe(planner.formulation), solve=stats, model=size,
                   reductions=result.reductions, plan_seconds=0.0)


def _answer(chain: _Chain) -> Outcome:
    """The outcome of the chain: the pool's fastest plan the asked formulation allows, told
    with the last stage's solve, model and bound."""
    formulation = chain.formulation
    best = chain.pool.best(formulation)
    report = chain.report
    if best is None or (report is None and not chain.interrupted and not chain.notes):
        if chain.interrupted:
            raise SolveInterruptedError(
                "interrupted (Ctrl-C) before any plan " + (
                    "with addresses that fit " if chain.pool.test is not None else "")
                + "was found", hint="let it run longer, or plan with --no-addresses")
        raise NoPlanFoundError(f"no plan of graph {chain.problem.graph.name!r} was found",
                               hint="give it more time (--time-limit) or more fast memory")
    if report is None:  # Ctrl-C, or no stage's solve, before any stage reported: a held plan
        return _held_outcome(chain, best)
    outcome = report
    last = report.planner.formulation
    if (not (best.source.is_search and best.source.formulation is last)
            or best.step_seconds < report.step_seconds):
        # a simpler plan, or an earlier stage's of this formulation that the last stage's
        # model could not start from (a recomputing model's restrictions)
        outcome = _kept(chain, report, best)
    notes = [n for n in (outcome.note, *chain.notes) if n]
    solve = outcome.solve
    if chain.interrupted and solve is not None and not solve.interrupted:
        solve = attrs.evolve(solve, interrupted=True, termination="interrupted",
                             optimal_in_model=False, proven_optimal=False)
        notes.append(f"interrupted (Ctrl-C) during the {formulation.value} search; the best "
                     f"plan held is kept")
    return attrs.evolve(outcome, solve=solve, note="; ".join(notes))


def _kept(chain: _Chain, report: Outcome, best: Held) -> Outcome:
    """``best``, a held plan faster than the last stage's own, told with that stage's bound
    (it bounds every plan of the simpler formulations too)."""
    asked = chain.formulation
    source = best.source.describe(asked)
    stage = report.planner.name
    if best.source.is_search and best.source.formulation is asked:
        note = (f"the {stage} search's plan ({report.step_seconds:.6g} s) is slower than "
                f"the plan an earlier {asked.value} stage found ({best.step_seconds:.6g} s), "
                "which is returned")
    elif best.source.is_search:
        simpler = best.source.formulation.value if best.source.formulation else stage
        own = report.solve.objective_seconds if report.solve is not None else None
        against = ("" if own is None or own == best.step_seconds
                   else f" ({own:.6g} s against {best.step_seconds:.6g} s)")
        rounds = report.addresses.rounds if report.addresses is not None else ()
        if rounds and not any(r.fits for r in rounds) and own is not None \
                and own < best.step_seconds:  # its own plans never packed
            overflow = min(r.overflow_nbytes for r in rounds)
            note = (f"the {stage} search's plan ({own:.6g} s) did not fit addresses within "
                    f"the time limit (its packing ran {format_bytes(overflow)} over after "
                    f"{len(rounds)} round(s)), so the {simpler} plan it "
                    f"started from ({best.step_seconds:.6g} s), which fits, is returned; "
                    "with more time (--time-limit) a round with tightened limits may find "
                    "one that packs")
        else:
            note = (f"the {stage} search found no plan better than the {simpler} plan it "
                    f"started from{against}; every {simpler} plan is {_a(stage)} plan, so "
                    "that one is returned")
    else:
        note = (f"the {stage} search found no plan faster than the {source} plan it was "
                f"offered, so that plan is returned (every such plan is {_a(stage)} plan)")
    logger.info(note)
    assert report.solve is not None
    gap = gap_of(best.step_seconds, report.solve.bound_seconds)
    in_model = report.solve.optimal_in_model and _within(gap, chain.settings.relative_gap)
    stats = attrs.evolve(report.solve, gap=gap, optimal_in_model=in_model,
                         proven_optimal=in_model and not report.solve.restrictions)
    addresses = report.addresses
    if addresses is not None and chain.pool.test is not None:
        from autotm_core.ilp.fitting import Packing

        assert isinstance(chain.pool.test, Packing)
        addresses = attrs.evolve(addresses, fits=True,
                                 assignment=chain.pool.test.assignment(best.plan))
    return attrs.evolve(report, plan=best.plan, simulation=best.simulation,
                        step_seconds=best.step_seconds, source=source, solve=stats,
                        addresses=addresses, note=note)


def _a(word: str) -> str:
    """``word`` with its indefinite article."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _held_outcome(chain: _Chain, best: Held) -> Outcome:
    """``best`` after Ctrl-C, or a first stage that gave no plan, stopped the search before
    any formulation reported: a held plan, with no solve behind it."""
    formulation = chain.formulation
    interrupted = chain.interrupted
    stats = SolveStats(
        solver=chain.settings.solver.name, solver_version="", mode=chain.settings.mode,
        termination="interrupted" if interrupted else "no_solution", status="feasible",
        proven_optimal=False, optimal_in_model=False, restrictions=(),
        interrupted=interrupted, objective_seconds=None,
        bound_seconds=None, bound_source="", gap=None, build_seconds=0.0, handoff_seconds=0.0,
        solve_seconds=0.0, warm_started=False)
    addresses = None
    if chain.pool.test is not None:
        from autotm_core.ilp.fitting import Packing

        assert isinstance(chain.pool.test, Packing)
        addresses = Addresses(fits=True, rounds=(),
                              assignment=chain.pool.test.assignment(best.plan))
    return Outcome(problem=chain.problem, planner=chain.target, plan=best.plan,
                   simulation=best.simulation, step_seconds=best.step_seconds,
                   source=best.source.describe(formulation), solve=stats, addresses=addresses,
                   plan_seconds=0.0,
                   note=(f"interrupted (Ctrl-C) before the {formulation.value} search found a "
                         f"plan; the {best.source.describe(formulation)} plan is kept"
                         if interrupted else "; ".join(chain.notes)))
