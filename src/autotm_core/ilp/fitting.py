"""Plans whose tensors fit at real addresses: solve, pack, tighten where it overflows, re-solve.

The ILP bounds the bytes in each capacity-limited pool at each kernel; it does not
see addresses. :func:`plan_with_addresses` packs every solved plan with
:func:`autotm_core.addresses.assign_offsets`. When a pool's packing overflows, it
lowers that pool's per-kernel limit around each overflowing kernel (+-
:data:`WINDOW_KERNELS` kernels, as AutoTM did) by at least the bytes the packing
ran over there, and solves again. The plan it returns carries an offset for every
residency of every bounded pool and passes the verifier: it fits by construction.

It is never slower than a plan that fits which it already holds: a start plan
offered to it that packs and verifies is kept as the incumbent, and returned
instead of a round's plan that is slower (or when the rounds give up). Its
:attr:`FittedPlan.bound_seconds` is the first round's, whose limits are the real
ones: a later round solves a tightened model, whose bound says nothing about the
problem.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from autotm_core.errors import (
    CapacityError,
    NoPlanFoundError,
    SolveInterruptedError,
    UsageError,
)
from autotm_core.ilp.budget import Budget
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.units import PAGE_NBYTES, format_bytes, round_up

logger = logging.getLogger(__name__)

WINDOW_KERNELS = 10
"""Kernels on each side of an overflowing kernel whose limit is lowered too (AutoTM's +-10)."""

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
    seconds: float = attrs.field(validator=attrs.validators.ge(0))
    """Model build, hand-off and solve seconds of the round."""


@attrs.frozen(kw_only=True)
class FittedPlan:
    """What :func:`plan_with_addresses` produced."""

    plan: Plan
    """The final plan: with offsets in every bounded pool when :attr:`fits` (verified)."""
    result: Any
    """The last round's :class:`~autotm_core.ilp.planner.PlanResult` (solve, simulation, model
    size)."""
    assignment: Any
    """The last round's :class:`~autotm_core.addresses.OffsetAssignment`."""
    rounds: tuple[FitRound, ...]
    """Every round, in order."""
    limits: Mapping[str, tuple[int, ...]] = attrs.field(factory=dict)
    """Per-kernel limits the last round solved under, for the pools the loop tightened."""
    bound_seconds: float | None = None
    """The first round's proven lower bound, in seconds: that model has the real limits, so
    it bounds every plan the model allows, every round's included (``None``: unknown, or
    the plan is a start plan faster than it, which lies outside the model)."""
    source: str = ""
    """Which plan :attr:`plan` is: ``"round N"`` (the N-th round's), or the planner name of
    the start plan kept (``"a start plan"`` when it has none)."""

    @property
    def fits(self) -> bool:
        """Whether the plan carries addresses inside every bounded pool's capacity."""
        return bool(self.assignment.fits)

    @property
    def fragmentation_nbytes(self) -> int:
        """Bytes the final packing wastes over the lower bounds (all bounded pools)."""
        return int(self.assignment.fragmentation_nbytes)

    @property
    def interrupted(self) -> bool:
        """Whether the last solve was interrupted (Ctrl-C), which ended the loop."""
        from autotm_core.solvers import TerminationCondition

        return self.result.solve.termination is TerminationCondition.INTERRUPTED


def tighten(limits: np.ndarray, used_nbytes: np.ndarray, kernels: tuple[int, ...],
            excess_nbytes: tuple[int, ...], *, floor_nbytes: np.ndarray | None = None,
            window_kernels: int = WINDOW_KERNELS, page_nbytes: int = PAGE_NBYTES) -> np.ndarray:
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
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    alignment_nbytes: int = PAGE_NBYTES,
    window_kernels: int = WINDOW_KERNELS,
    on_round: Callable[[FitRound], None] | None = None,
    start_plans: Sequence[Plan] = (),
    **plan_graph_kwargs: Any,
) -> FittedPlan:
    """Plan ``graph`` by ILP (see :func:`~autotm_core.ilp.planner.plan_graph`, which gets
    ``plan_graph_kwargs``) and give every tensor in a bounded pool an address that fits.

    ``on_round`` is called after each round (for progress). The first round is offered
    ``start_plans`` as starting solutions (with greedy's); each later round the previous
    round's plan too, where it fits the tightened limits. The fastest of ``start_plans``
    that packs and passes the verifier is the incumbent: returned instead of a slower
    round's plan, or when the rounds fail. The loop ends when the packing fits, or
    after an interrupted solve (Ctrl-C: the round's plan when it fits, else the
    incumbent, else :class:`SolveInterruptedError`: a plan without addresses is never
    returned). ``time_limit_seconds`` (or ``budget``, a
    :class:`~autotm_core.ilp.budget.Budget`) bounds every round together: no round starts
    after the deadline. Raises :class:`CapacityError` when the first round finds no
    plan, or when there is no incumbent and ``max_rounds`` solves did not give a plan
    that packs, or tightening left no plan at all.
    """
    from autotm_core.addresses import assign_offsets
    from autotm_core.ilp.infeasible import forced_fast_nbytes
    from autotm_core.ilp.options import resolve_capacities
    from autotm_core.ilp.planner import plan_graph
    from autotm_core.plans.verify import check_plan

    if max_rounds < 1:
        raise UsageError(f"max_rounds is {max_rounds}", hint="give at least 1 round")
    limit = plan_graph_kwargs.pop("time_limit_seconds", None)
    budget = plan_graph_kwargs.pop("budget", None) or Budget.of(limit)  # one for every round
    formulation = plan_graph_kwargs.pop("formulation", Formulation.SYNCHRONOUS)
    options = plan_graph_kwargs.pop("options", None) or FormulationOptions(formulation=formulation)
    fast = plan_graph_kwargs.pop("fast_capacity_nbytes", None)
    if fast is not None:
        system = system.with_capacity(system.fast.name, int(fast))
    base = resolve_capacities(graph, system, options.capacities)
    limits: dict[str, np.ndarray] = {}
    rounds: list[FitRound] = []
    floor = None
    previous = tuple(start_plans)
    with budget.phase("packing"):
        incumbent = _incumbent(start_plans, graph, system, alignment_nbytes,
                               plan_graph_kwargs.get("costs"))
    bound: float | None = None
    result: Any = None

    def packs(plan: Plan) -> bool:
        """Whether ``plan``'s tensors pack at addresses (lets a round fall back to an
        earlier plan of its search that does)."""
        with budget.phase("packing"):
            return bool(assign_offsets(plan, graph, system, alignment_nbytes=alignment_nbytes).fits)

    for number in range(1, max_rounds + 1):
        capacities = {**options.capacities, **{p: tuple(int(v) for v in a)
                                                for p, a in limits.items()}}
        try:
            result = plan_graph(graph, system, options=attrs.evolve(options, capacities=capacities),
                                start_plans=previous, budget=budget, fits=packs,
                                **plan_graph_kwargs)
        except (CapacityError, NoPlanFoundError) as exc:  # NoPlanFound: out of time
            if not limits:
                raise
            if incumbent is not None:
                logger.info("address fitting: tightening left no plan; the start plan is kept")
                return incumbent.fitted(result, rounds, limits, bound)
            raise _gave_up(graph, rounds, f"tightening left no plan ({exc.message})") from exc
        if number == 1:
            bound = result.bound_seconds
        with budget.phase("packing"):
            assignment = assign_offsets(result.plan, graph, result.system,
                                        alignment_nbytes=alignment_nbytes)
        solve = result.solve
        fit = FitRound(
            round=number, step_seconds=result.step_seconds, fits=assignment.fits,
            fragmentation_nbytes=int(assignment.fragmentation_nbytes),
            overflow_nbytes=max((o.overflow_nbytes for o in assignment.overflows), default=0),
            overflow_kernels=len({k for o in assignment.overflows for k in o.kernels}),
            seconds=solve.build_seconds + solve.handoff_seconds + solve.solve_seconds,
        )
        rounds.append(fit)
        logger.info("address fitting, round %d: %s", number,
                    "fits" if fit.fits else f"overflows by {format_bytes(fit.overflow_nbytes)} "
                    f"at {fit.overflow_kernels} kernels")
        if on_round is not None:
            on_round(fit)
        done = FittedPlan(plan=_honest(assignment.plan, bound, number), result=result,
                          assignment=assignment, rounds=tuple(rounds), limits=_frozen(limits),
                          bound_seconds=bound, source=f"round {number}")
        if assignment.fits:
            check_plan(assignment.plan, graph, result.system)
            if incumbent is not None and incumbent.step_seconds < result.step_seconds:
                logger.info("address fitting: the start plan %r is faster than round %d's plan",
                            incumbent.source, number)
                return incumbent.fitted(result, rounds, limits, bound)
            return done
        if done.interrupted:
            if incumbent is not None:
                logger.warning("interrupted: the start plan that fits is kept")
                return incumbent.fitted(result, rounds, limits, bound)
            # an unfitted plan is not what was asked for, and its time is not one a fitting
            # plan can have: never present it as the answer
            raise SolveInterruptedError(
                f"interrupted (Ctrl-C) in round {number} of address fitting, before any plan "
                "with addresses that fit was found",
                hint="let it run longer, or plan with --no-addresses")
        if number == max_rounds:
            break
        if budget.expired:
            logger.info("address fitting: the time limit ends the rounds after round %d", number)
            break
        previous = (result.plan, *start_plans)
        if floor is None:
            floor = forced_fast_nbytes(graph, system, options)
        for overflow in assignment.overflows:
            p = system.pool_index(overflow.pool)
            current = limits.get(overflow.pool, base[p])
            if current is None:  # only a pool with a capacity can overflow
                continue
            limits[overflow.pool] = tighten(
                current, result.simulation.pool_nbytes[p], overflow.kernels,
                overflow.excess_nbytes, floor_nbytes=floor if p == 0 else None,
                window_kernels=window_kernels, page_nbytes=options.page_nbytes)
    if incumbent is not None:
        logger.info("address fitting: no round's plan packed; the start plan is kept")
        return incumbent.fitted(result, rounds, limits, bound)
    timed_out = " (the time limit ended the rounds)" if len(rounds) < max_rounds else ""
    raise _gave_up(graph, rounds, "the packing still overflows after "
                   f"{len(rounds)} round{'s' if len(rounds) != 1 else ''}{timed_out}",
                   assignment)


def _frozen(limits: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    return {p: tuple(int(v) for v in a) for p, a in limits.items()}


def _honest(plan: Plan, bound: float | None, number: int) -> Plan:
    """``plan`` (round ``number``'s) saying the first round's bound and the gap from it."""
    if number == 1:
        return plan
    objective = plan.attributes.get("objective_seconds")
    gap = None
    if bound is not None and isinstance(objective, float) and objective > 0:
        gap = max(0.0, (objective - bound) / objective)
    return attrs.evolve(plan, attributes={**plan.attributes, "bound_seconds": bound, "gap": gap,
                                          "fitting_round": number})


@attrs.frozen(kw_only=True)
class _Incumbent:
    """A start plan that packs and verifies, with its addresses and simulated step time."""

    assignment: Any
    step_seconds: float
    source: str

    def fitted(self, result: Any, rounds: list[FitRound], limits: Mapping[str, np.ndarray],
               bound: float | None) -> FittedPlan:
        if bound is not None and self.step_seconds < bound * (1 - 1e-9):
            # the plan lies outside the model (see model_restrictions): no bound on it is known
            logger.info("start plan %r is faster than the model's bound: no bound is reported",
                        self.source)
            bound = None
        return FittedPlan(plan=self.assignment.plan, result=result, assignment=self.assignment,
                          rounds=tuple(rounds), limits=_frozen(limits), bound_seconds=bound,
                          source=self.source)


def _incumbent(start_plans: Sequence[Plan], graph: Graph, system: MemorySystem,
               alignment_nbytes: int, costs: Any) -> _Incumbent | None:
    """The fastest of ``start_plans`` that packs at ``alignment_nbytes`` and verifies."""
    from autotm_core.addresses import assign_offsets
    from autotm_core.costs import resolve_costs
    from autotm_core.errors import AutotmError
    from autotm_core.plans.verify import verify_plan
    from autotm_core.simulation import simulate

    best: _Incumbent | None = None
    for plan in start_plans:
        try:
            assignment = assign_offsets(plan, graph, system, alignment_nbytes=alignment_nbytes)
        except AutotmError as exc:
            logger.info("start plan %r cannot be packed: %s", plan.planner, exc.message)
            continue
        if not assignment.fits or verify_plan(assignment.plan, graph, system):
            continue
        if costs is None:
            costs = resolve_costs(graph, system)
        step = float(simulate(assignment.plan, graph, system, costs).step_seconds)
        if best is None or step < best.step_seconds:
            best = _Incumbent(assignment=assignment, step_seconds=step,
                              source=plan.planner or "a start plan")
    return best


def _gave_up(graph: Graph, rounds: list[FitRound], why: str,
             assignment: Any = None) -> CapacityError:
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


__all__ = ["DEFAULT_MAX_ROUNDS", "WINDOW_KERNELS", "FitRound", "FittedPlan",
           "plan_with_addresses", "tighten"]
