"""Plans whose tensors fit at real addresses: solve, pack, tighten where it overflows, re-solve.

The ILP bounds the bytes in each capacity-limited pool at each kernel; it does not
see addresses. :func:`plan_with_addresses` packs every solved plan with
:func:`autotm_core.addresses.assign_offsets` (the :class:`Packing` test of the
search's :class:`~autotm_core.ilp.search.pool.IncumbentPool`). When a pool's
packing overflows, it lowers that pool's per-kernel limit around each overflowing
kernel (+- the strategy's
:attr:`~autotm_core.ilp.search.strategy.Strategy.tighten_kernels`, as AutoTM did)
by at least the bytes the packing ran over there, and solves again. Where the overflow
is a tensor held in the pool at the step's start and again at its end whose two stays
found no common address (the next step finds it where this one leaves it), the next round
has that tensor begin the step outside the pool instead, and keeps the limits. The plan it
returns carries an offset for every residency of every bounded pool and passes the
verifier: it fits by construction.

It is never slower than a plan that fits which the pool already holds (a start
plan, a baseline, a simpler formulation's plan, fitted by the pool's test): the
fastest of them is returned instead of a round's plan that is slower, or when the
rounds give up or Ctrl-C stops them. Its :attr:`FittedPlan.bound_seconds` is the
first round's, whose limits are the real ones: a later round solves a tightened
model, whose bound says nothing about the problem.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence

import attrs
import numpy as np

from autotm_core.addresses import OffsetAssignment
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import (
    CapacityError,
    NoPlanFoundError,
    PlanError,
    SolveInterruptedError,
    UsageError,
)
from autotm_core.ilp.options import Formulation, FormulationOptions, options_of
from autotm_core.ilp.search.budget import Budget
from autotm_core.ilp.search.events import Listener, ignore
from autotm_core.ilp.search.model import PlanResult
from autotm_core.ilp.search.pool import Held, IncumbentPool, Origin, Source, gap_of
from autotm_core.ilp.search.state import SearchState
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import Solver
from autotm_core.units import PAGE_NBYTES, format_bytes, format_seconds, round_up

logger = logging.getLogger(__name__)

DEFAULT_MAX_ROUNDS = 8
"""Solves tried before :func:`plan_with_addresses` gives up."""


@attrs.frozen(kw_only=True)
class FitRound:
    """One solve of the address-fitting loop and how its plan packed."""

    round: int = attrs.field(validator=attrs.validators.ge(1))
    """Position of the round, from 1."""
    step_seconds: float
    """Predicted step time of the round's plan."""
    fits: bool
    """Whether the round's plan packed inside every bounded pool."""
    fragmentation_nbytes: int = attrs.field(validator=attrs.validators.ge(0))
    """Bytes the packing wasted over the lower bounds, summed over the bounded pools."""
    overflow_nbytes: int = attrs.field(validator=attrs.validators.ge(0))
    """Largest excess over a capacity (0 when it fits)."""
    overflow_kernels: int = attrs.field(validator=attrs.validators.ge(0))
    """Kernels at which some packing ran over its capacity."""
    split_tensors: tuple[str, ...] = ()
    """Tensors held in a bounded pool at the step's start and again at its end whose two stays
    found no common address (:attr:`autotm_core.addresses.Overflow.split_tensors`), over every
    pool: the next round has them begin the step outside that pool."""
    seconds: float = attrs.field(validator=attrs.validators.ge(0))
    """Model build, hand-off and solve seconds of the round."""
    room_copies: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """Copies of idle tensors out of a full pool and back that made the round's plan pack when
    it overflowed (:func:`~autotm_core.addresses.room.make_room`; 0: none did)."""
    room_step_seconds: float | None = None
    """Predicted step time of the round's plan with those copies (``None``: none)."""


@attrs.frozen(kw_only=True)
class FittedPlan:
    """What :func:`plan_with_addresses` produced."""

    plan: Plan
    """The final plan: with offsets in every bounded pool when :attr:`fits` (verified)."""
    result: PlanResult | None
    """The last round's result (solve, simulation, model size); ``None`` when Ctrl-C stopped
    the first round before it had one."""
    assignment: OffsetAssignment
    """The final plan's offsets and per-pool heights."""
    rounds: tuple[FitRound, ...]
    """Every round, in order."""
    limits: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)
    """Per-kernel limits the last round solved under, for the pools the loop tightened."""
    begin_outside: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    """Per pool, the tensors the loop had begin the step outside it (sorted names; see
    :attr:`FitRound.split_tensors`)."""
    bound_seconds: float | None = None
    """The first round's proven lower bound, in seconds: that model has the real limits, so
    it bounds every plan the model allows, every round's included (``None``: unknown, or
    the plan is a held plan faster than it, which lies outside the model)."""
    source: Source = attrs.field(factory=lambda: Source(Origin.SOLVE))
    """Where :attr:`plan` came from: a round (its :attr:`Source.round`) or a held plan."""
    interrupted: bool = False
    """Whether Ctrl-C ended the loop (the plan is the best that fits found before)."""

    @property
    def fits(self) -> bool:
        """Whether the plan carries addresses inside every bounded pool's capacity."""
        return bool(self.assignment.fits)

    @property
    def fragmentation_nbytes(self) -> int:
        """Bytes the final packing wastes over the lower bounds (all bounded pools)."""
        return int(self.assignment.fragmentation_nbytes)


class Packing:
    """The address-packing test of a pool: a plan with offsets that fit, or ``None``.

    Each packing is kept with the plan it packed (and the plan with offsets), so the
    fitting loop reads a round's overflows without packing it again."""

    def __init__(self, graph: Graph, system: MemorySystem, *,
                 alignment_nbytes: int = PAGE_NBYTES) -> None:
        self.graph, self.system, self.alignment_nbytes = graph, system, alignment_nbytes
        self._packed: list[tuple[Plan, OffsetAssignment]] = []

    def assignment(self, plan: Plan) -> OffsetAssignment:
        """``plan`` packed (once: a plan packed before, or packed into, is not packed again)."""
        from autotm_core.addresses import assign_offsets

        for known, assignment in self._packed:
            if known is plan or assignment.plan is plan:
                return assignment
        assignment = assign_offsets(plan, self.graph, self.system,
                                    alignment_nbytes=self.alignment_nbytes)
        self._packed = [*self._packed[-15:], (plan, assignment)]
        return assignment

    def __call__(self, plan: Plan) -> Plan | None:
        from autotm_core.errors import AutotmError

        try:
            assignment = self.assignment(plan)
        except AutotmError as exc:
            logger.info("plan %r cannot be packed: %s", plan.planner, exc.message)
            return None
        return assignment.plan if assignment.fits else None

    def fits(self, plan: Plan) -> bool:
        """Whether ``plan``'s tensors pack at addresses."""
        return self(plan) is not None


def tighten(limits: np.ndarray, used_nbytes: np.ndarray, kernels: tuple[int, ...],
            excess_nbytes: tuple[int, ...], *, floor_nbytes: np.ndarray | None = None,
            window_kernels: int = 10, page_nbytes: int = PAGE_NBYTES) -> np.ndarray:
    """Per-kernel limits lowered around each overflowing kernel by at least its excess.

    Every kernel within ``window_kernels`` of an overflowing kernel ``k`` loses at least
    ``excess_nbytes`` of ``k`` (rounded up to pages), counted from the smaller of its limit
    and what the plan held there (``used_nbytes``), so that the last plan is cut off; no
    limit drops under ``floor_nbytes`` (what must stay in the pool whatever the plan).
    """
    n = len(limits)
    cut = np.zeros(n, dtype=np.int64)
    for k, excess in zip(kernels, excess_nbytes, strict=True):
        lo, hi = max(0, int(k) - window_kernels), min(n, int(k) + window_kernels + 1)
        cut[lo:hi] = np.maximum(cut[lo:hi], round_up(int(excess), page_nbytes))
    touched = cut > 0
    out = np.asarray(limits, dtype=np.int64).copy()
    start = np.minimum(out, np.asarray(used_nbytes, dtype=np.int64))
    lowered = np.maximum(start - cut, 0)
    if floor_nbytes is not None:
        lowered = np.maximum(lowered, np.asarray(floor_nbytes, dtype=np.int64))
    out[touched] = np.minimum(out[touched], lowered[touched])
    return out


def plan_with_addresses(
    graph: Graph,
    system: MemorySystem,
    *,
    costs: KernelCosts | None = None,
    options: FormulationOptions | None = None,
    formulation: Formulation | str | None = None,
    solver: Solver | None = None,
    relative_gap: float = 0.01,
    time_limit_seconds: float | None = None,
    budget: Budget | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    alignment_nbytes: int = PAGE_NBYTES,
    strategy: Strategy = DEFAULT_STRATEGY,
    on_round: Callable[[FitRound], None] | None = None,
    start_plans: Sequence[Plan] = (),
    pool: IncumbentPool | None = None,
    listener: Listener = ignore,
    fast_capacity_nbytes: int | None = None,
) -> FittedPlan:
    """Plan ``graph`` by ILP (:func:`~autotm_core.ilp.planner.plan_graph`) and give every
    tensor in a bounded pool an address that fits.

    ``pool`` holds the plans to start from and to beat, tested by its :class:`Packing`
    (made from ``start_plans`` when not given; ``start_plans`` are offered to a given pool
    too). The first round starts from the held plans the formulation allows; each later
    round from the previous round's plan too, where it fits the tightened limits. The
    loop ends when a round's plan packs, after ``max_rounds`` rounds, at the deadline of
    ``budget`` (or ``time_limit_seconds``: no round starts after it), or on Ctrl-C; the
    fastest plan that packs — a round's or a held one — is returned (on Ctrl-C without
    one, :class:`SolveInterruptedError`: a plan without addresses is never the answer).
    ``on_round`` is called after each round. Raises :class:`CapacityError` when the first
    round finds no plan, or when nothing that packs is held and the rounds gave none.
    """
    from autotm_core.costs import resolve_costs
    from autotm_core.plugins import get_solver
    from autotm_core.solvers.base import DEFAULT_SOLVER

    if max_rounds < 1:
        raise UsageError(f"max_rounds is {max_rounds}", hint="give at least 1 round")
    options = options_of(options, formulation)
    if fast_capacity_nbytes is not None:
        system = system.with_capacity(system.fast.name, int(fast_capacity_nbytes))
    costs = costs if costs is not None else resolve_costs(graph, system)
    budget = budget if budget is not None else Budget.of(
        time_limit_seconds, min_solve_seconds=strategy.min_solve_seconds,
        grace_seconds=strategy.grace_seconds(time_limit_seconds),
        answer_seconds=strategy.answer_seconds)
    if pool is None:
        pool = IncumbentPool(graph, system, costs,
                             test=Packing(graph, system, alignment_nbytes=alignment_nbytes),
                             recompute=options.recompute)
    with budget.phase("packing"):
        pool.offer_all((p, Source(Origin.WARM_START, name=p.planner)) for p in start_plans)
    fitting = _Fitting(
        graph=graph, system=system, costs=costs,
        options=options,
        solver=solver if solver is not None else get_solver(DEFAULT_SOLVER),
        relative_gap=relative_gap, budget=budget, strategy=strategy, pool=pool,
        listener=listener, on_round=on_round)
    for number in range(1, max_rounds + 1):
        done = fitting.round(number, last=number == max_rounds)
        if done is not None:
            return done
    kept = fitting.answer()
    if kept is not None:
        logger.info("address fitting: no round's plan packed; a held plan is kept")
        return kept
    rounds = fitting.rounds
    timed_out = " (the time limit ended the rounds)" if len(rounds) < max_rounds else ""
    raise _gave_up(graph, rounds, "the packing still overflows after "
                   f"{len(rounds)} round{'s' if len(rounds) != 1 else ''}{timed_out}",
                   fitting.last)


@attrs.define
class _Fitting(SearchState):
    """The state of the fitting loop: the pool, the limits tightened so far, every round."""

    pool: IncumbentPool
    on_round: Callable[[FitRound], None] | None
    limits: dict[str, np.ndarray] = attrs.field(factory=dict)
    begin_outside: dict[str, frozenset[str]] = attrs.field(factory=dict)
    """Per pool, the tensors barred from it at the step's start so far (see :meth:`_tighten`)."""
    rounds: list[FitRound] = attrs.field(factory=list)
    bound: float | None = None
    """The first round's bound (its limits are the real ones)."""
    result: PlanResult | None = None
    """The last round's result."""
    last: OffsetAssignment | None = None
    """The last round's packing."""
    stopped: bool = False
    """Whether the rounds are over (the time limit)."""

    @property
    def packing(self) -> Packing:
        test = self.pool.test
        assert isinstance(test, Packing), "address fitting holds plans to a packing"
        return test

    def answer(self, interrupted: bool = False) -> FittedPlan | None:
        """The fastest plan that packs, as the loop's answer (``None``: none packs)."""
        best = self.pool.best(self.options.formulation)
        if best is None:
            return None
        return _fitted(best, self.packing, self.result, self.rounds, self.limits,
                       self.begin_outside, self.bound, interrupted)

    def round(self, number: int, *, last: bool) -> FittedPlan | None:
        """Round ``number``: solve under the limits so far, pack, offer; the loop's answer when
        it ends here (a plan packs, Ctrl-C, tightening left no plan), else ``None`` after
        tightening the limits for the next round (unless ``last`` or out of time)."""
        from autotm_core.ilp.planner import plan_graph
        from autotm_core.ilp.search.runner import SearchInterrupted
        from autotm_core.plans.verify import check_plan
        from autotm_core.solvers import TerminationCondition

        if self.stopped:
            return None
        capacities = {**self.options.capacities,
                      **{p: tuple(int(v) for v in a) for p, a in self.limits.items()}}
        previous = tuple(h.plan for h in self.pool.starts(self.options.formulation))
        try:
            result = plan_graph(
                self.graph, self.system,
                options=attrs.evolve(self.options, capacities=capacities,
                                     begin_outside=self._begin_outside()),
                start_plans=previous, budget=self.budget, fits=self._packs, costs=self.costs,
                solver=self.solver, relative_gap=self.relative_gap, strategy=self.strategy,
                listener=self.listener, make_greedy=False)
        except SearchInterrupted:
            return _interrupted(self.answer(interrupted=True), number)
        except (CapacityError, NoPlanFoundError) as exc:  # NoPlanFound: out of time
            if not self.limits:
                raise
            kept = self.answer()
            if kept is not None:
                logger.info("address fitting: tightening left no plan; a held plan is kept")
                return kept
            raise _gave_up(self.graph, self.rounds,
                           f"tightening left no plan ({exc.message})") from exc
        self.result = result
        if number == 1:
            self.bound = result.bound_seconds
        honest = _honest(result.plan, self.bound, number)
        source = Source(Origin.SOLVE, self.options.formulation, round=number)
        with self.budget.phase("packing"):
            assignment = self.last = self.packing.assignment(honest)
            held = self.pool.offer(honest, source, simulation=result.simulation)
        if assignment.fits and held is None:  # a plan that packs and fails the verifier
            check_plan(assignment.plan, self.graph, self.system)
        interrupted = result.solve.termination is TerminationCondition.INTERRUPTED
        roomy = None
        if not assignment.fits and not interrupted:
            with self.budget.phase("packing"):
                roomy = self._make_room(honest, assignment, source)
        self._record(number, result, assignment, roomy)
        if roomy is not None and roomy.step_seconds <= result.step_seconds * (
                1 + self.relative_gap):
            # the round's plan, with room made, packs within the gap of it: another round
            # would solve a narrower model for no more than that
            return self.answer()
        if assignment.fits or interrupted:
            done = self.answer(interrupted=interrupted)
            if done is None:  # interrupted before any plan with addresses was found
                return _interrupted(None, number)
            return done
        if last or self.budget.expired:
            if not last:
                logger.info("address fitting: the time limit ends the rounds after round %d",
                            number)
            self.stopped = True
            return None
        self._tighten(result, assignment)
        return None

    def _packs(self, plan: Plan) -> bool:
        with self.budget.phase("packing"):
            return self.packing.fits(plan)

    def _make_room(self, plan: Plan, assignment: OffsetAssignment,
                   source: Source) -> Held | None:
        """``plan``, which overflows its packing (``assignment``), with idle tensors copied out
        of each overflowing pool and back (:func:`~autotm_core.addresses.room.make_room`) until
        it packs, within :attr:`~Strategy.room_attempts`; held in the pool when it does
        (``None``: it did not, or the formulation allows no copies)."""
        from autotm_core.addresses.room import make_room
        from autotm_core.simulation import simulate

        if self.options.formulation is Formulation.STATIC:
            return None
        excess = {o.pool: 0 for o in assignment.overflows}
        for _ in range(self.strategy.room_attempts):
            for o in assignment.overflows:
                excess[o.pool] += o.overflow_nbytes
            roomy = plan
            for pool, nbytes in excess.items():
                made = make_room(roomy, self.graph, self.system, pool, nbytes,
                                 alignment_nbytes=self.packing.alignment_nbytes)
                if made is None:
                    return None
                roomy = made
            try:
                simulation = simulate(roomy, self.graph, self.system, self.costs)
            except PlanError as exc:  # a configuration its cost table lacks
                logger.info("address fitting: the plan with room made cannot be priced: %s",
                            exc.message)
                return None
            step = float(simulation.step_seconds)
            bound = plan.attributes.get("bound_seconds")
            roomy = attrs.evolve(roomy, attributes={
                **roomy.attributes, "objective_seconds": step,
                "gap": gap_of(step, bound if isinstance(bound, float) else None)})
            assignment = self.packing.assignment(roomy)
            if assignment.fits:
                held = self.pool.offer(roomy, source, simulation=simulation)
                if held is None or not held.passes:
                    return None
                logger.info("address fitting: the round's plan packs with %d copies of idle "
                            "tensors out of the full pool and back (%s -> %s)",
                            roomy.attributes.get("room_copies", 0),
                            format_seconds(float(plan.attributes.get("objective_seconds", 0))),
                            format_seconds(step))
                return held
        return None

    def _record(self, number: int, result: PlanResult, assignment: OffsetAssignment,
                roomy: Held | None = None) -> None:
        fit = FitRound(
            round=number, step_seconds=result.step_seconds, fits=assignment.fits,
            fragmentation_nbytes=int(assignment.fragmentation_nbytes),
            overflow_nbytes=max((o.overflow_nbytes for o in assignment.overflows), default=0),
            overflow_kernels=len({k for o in assignment.overflows for k in o.kernels}),
            split_tensors=tuple(sorted({t for o in assignment.overflows
                                        for t in o.split_tensors})),
            seconds=result.solve.build_seconds + result.solve.handoff_seconds
            + result.solve.solve_seconds,
            room_copies=0 if roomy is None else int(roomy.plan.attributes.get("room_copies", 0)),
            room_step_seconds=None if roomy is None else roomy.step_seconds)
        self.rounds.append(fit)
        logger.info("address fitting, round %d: %s", number,
                    "fits" if fit.fits else f"overflows by {format_bytes(fit.overflow_nbytes)} "
                    f"at {fit.overflow_kernels} kernels")
        if self.on_round is not None:
            self.on_round(fit)

    def _begin_outside(self) -> dict[str, frozenset[str]]:
        return joined_begin_outside(self.options.begin_outside, self.begin_outside)

    def _tighten(self, result: PlanResult, assignment: OffsetAssignment) -> None:
        """Lower the limits around every overflow of ``assignment`` (see :func:`tighten`).

        A pool whose overflow lies in tensors held there at the step's start and again at
        its end, whose two stays found no common address (:attr:`Overflow.split_tensors`),
        keeps its limits this round: those tensors begin the step outside it instead. The
        bytes did fit at every kernel; the overflow is the two stays' shared offset, and
        lowering every limit would cut good plans off (GPT-2 b256 on ``gpu-h200`` 1:1:
        the tied embedding left HBM around the loss, which its logits and their gradient
        filled to 60 MiB of the limit). Where those tensors hold fewer bytes than the overflow,
        barring them cannot be enough, and the limits are cut as well."""
        from autotm_core.ilp.infeasible import forced_fast_nbytes
        from autotm_core.ilp.options import resolve_capacities

        base = resolve_capacities(self.graph, self.system, self.options.capacities)
        floor = forced_fast_nbytes(self.graph, self.system, self.options)
        for overflow in assignment.overflows:
            barred = self._begin_outside().get(overflow.pool, frozenset())
            split = frozenset(overflow.split_tensors) - barred
            if split:
                logger.info("address fitting: %d tensor(s) begin the step outside pool %r "
                            "next round (their stays at the step's start and end found no "
                            "common address): %s", len(split), overflow.pool,
                            ", ".join(sorted(split)[:5]) + (", ..." if len(split) > 5 else ""))
                self.begin_outside[overflow.pool] = (
                    self.begin_outside.get(overflow.pool, frozenset()) | split)
                held = sum(round_up(self.graph.tensor(name).nbytes, self.packing.alignment_nbytes)
                           for name in split)
                if held >= overflow.overflow_nbytes:
                    continue
                # barring them cannot take the whole overflow away (Hugging Face GPT-2 on
                # gpu-h200 at 0.92 GiB: three biases of 3 KiB, 906 KiB over): cut the limits too
                logger.info("address fitting: they hold %s of the %s pool %r overflows by: its "
                            "limits are cut too", format_bytes(held),
                            format_bytes(overflow.overflow_nbytes), overflow.pool)
            p = self.system.pool_index(overflow.pool)
            current = self.limits.get(overflow.pool, base[p])
            if current is None:  # only a pool with a capacity can overflow
                continue
            self.limits[overflow.pool] = tighten(
                current, result.simulation.pool_nbytes[p], overflow.kernels,
                overflow.excess_nbytes, floor_nbytes=floor if p == 0 else None,
                window_kernels=self.strategy.tighten_kernels,
                page_nbytes=self.options.page_nbytes)


def _interrupted(kept: FittedPlan | None, number: int) -> FittedPlan:
    """``kept`` after Ctrl-C in round ``number``; without it, the error saying so."""
    if kept is not None:
        logger.warning("interrupted: the fastest plan that fits is kept")
        return kept
    # an unfitted plan is not what was asked for, and its time is not one a fitting plan
    # can have: never present it as the answer
    raise SolveInterruptedError(
        f"interrupted (Ctrl-C) in round {number} of address fitting, before any plan with "
        "addresses that fit was found", hint="let it run longer, or plan with --no-addresses")


def _frozen(limits: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {p: tuple(int(v) for v in a) for p, a in limits.items()}


def _honest(plan: Plan, bound: float | None, number: int) -> Plan:
    """``plan`` (round ``number``'s) saying the first round's bound and the gap from it."""
    if number == 1:
        return plan
    objective = plan.attributes.get("objective_seconds")
    gap = None
    if bound is not None and isinstance(objective, float) and objective > 0:
        gap = gap_of(objective, bound) if bound <= objective else 0.0
    return attrs.evolve(plan, attributes={**plan.attributes, "bound_seconds": bound, "gap": gap,
                                          "fitting_round": number})


def joined_begin_outside(given: Mapping[str, Collection[str]],
                         added: Mapping[str, Collection[str]]) -> dict[str, frozenset[str]]:
    """Per pool, the tensors barred from beginning the step there by either mapping (the
    options' :attr:`~autotm_core.ilp.options.FormulationOptions.begin_outside` and what the
    fitting loop added, :attr:`FittedPlan.begin_outside`)."""
    return {p: frozenset(given.get(p, ())) | frozenset(added.get(p, ()))
            for p in set(given) | set(added)}


def _fitted(best: Held, packing: Packing, result: PlanResult | None, rounds: list[FitRound],
            limits: Mapping[str, np.ndarray], begin_outside: Mapping[str, frozenset[str]],
            bound: float | None, interrupted: bool) -> FittedPlan:
    """The loop's answer: ``best``, the fastest held plan that packs."""
    if (bound is not None and best.source.round == 0
            and best.step_seconds < bound * (1 - 1e-9)):
        # a held plan outside the model (see model_restrictions): no bound on it is known
        logger.info("the held plan of %s is faster than the model's bound: no bound is "
                    "reported", best.source.describe())
        bound = None
    return FittedPlan(plan=best.plan, result=result, assignment=packing.assignment(best.plan),
                      rounds=tuple(rounds), limits=_frozen(limits),
                      begin_outside={p: tuple(sorted(n)) for p, n in begin_outside.items()},
                      bound_seconds=bound,
                      source=best.source, interrupted=interrupted)


def _gave_up(graph: Graph, rounds: list[FitRound], why: str,
             assignment: OffsetAssignment | None = None) -> CapacityError:
    where = ""
    if assignment is not None and assignment.overflows:
        o = max(assignment.overflows, key=lambda o: o.overflow_nbytes)
        k = o.kernels[int(np.argmax(o.excess_nbytes))]
        where = (f"; pool {o.pool!r} runs {format_bytes(o.overflow_nbytes)} "
                 f"({o.overflow_nbytes} bytes) over at kernel {graph.kernels[k].name!r} (#{k})")
    return CapacityError(
        f"no plan of graph {graph.name!r} could be given addresses that fit: {why}{where}",
        hint="raise the fast capacity by the fragmentation overhead, allow more rounds, "
             "or plan without addresses (--no-addresses)",
    )


__all__ = ["DEFAULT_MAX_ROUNDS", "FitRound", "FittedPlan", "Packing", "plan_with_addresses",
           "tighten"]
