"""The one place plans are held during a search: verified, simulated and tested once.

Every plan the search holds — the caller's warm starts, the baselines it should
beat, each formulation's and each fitting round's plan — is offered to an
:class:`IncumbentPool`. Offering verifies the plan, simulates it, and holds it to
the caller's test (address packing: the plan held is then the one with addresses),
once; a plan the verifier refuses or the costs cannot price is not held. The pool
answers which held plans a formulation allows (:func:`allowed`), the fastest of
them that passed the test (:meth:`IncumbentPool.best`), every one as a start
(:meth:`IncumbentPool.starts`); the gap has one formula (:func:`gap_of`), from the
bound each stage's solve reports. Where a plan came from is a typed :class:`Source`.

Offering is atomic: an interrupt during an offer leaves the pool as it was.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Iterable

import attrs

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import PlanError
from autotm_core.ilp.options import Formulation
from autotm_core.ilp.search.events import IncumbentFound, Listener, ignore
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import MoveKind, Plan
from autotm_core.simulation import Simulation

logger = logging.getLogger(__name__)


class Origin(enum.Enum):
    """Which kind of work made a plan."""

    WARM_START = "warm start"
    """The caller's plan (a neighbouring point's, another planner's at the same point)."""
    BASELINE = "baseline"
    """A baseline the formulation should beat (first-touch, greedy)."""
    SOLVE = "solve"
    """An exact search of a formulation's model (relax-and-fix, retiming, windows, full MIP),
    in an address-fitting round or not."""
    STRETCHES = "stretches"
    """The approximate planner's stretches (or its whole-model solve)."""
    WINDOWS = "windows"
    """The approximate planner's windows over a held plan."""


_WORDS = {Origin.SOLVE: "ilp", Origin.STRETCHES: "ilp by stretches",
          Origin.WINDOWS: "ilp by windows"}


@attrs.frozen
class Source:
    """Where a held plan came from."""

    origin: Origin
    """The kind of work that made it."""
    formulation: Formulation | None = None
    """The formulation whose search made it (``None`` for a warm start or a baseline)."""
    name: str = ""
    """A baseline's name, or a warm start's planner (``""``: unknown)."""
    round: int = 0
    """The address-fitting round that made it (0: none)."""

    def describe(self, asked: Formulation | None = None) -> str:
        """How an outcome names the plan, asked for ``asked``'s formulation: ``"ilp"`` (its own
        solve), ``"ilp by stretches"``, ``"ilp, static formulation"`` (a simpler one's solve),
        a baseline's name, a warm start's planner."""
        if self.origin is Origin.BASELINE:
            return self.name
        if self.origin is Origin.WARM_START:
            return self.name or "a warm start"
        words = _WORDS[self.origin]
        if asked is None or self.formulation is None or self.formulation is asked:
            return words
        if self.origin is Origin.SOLVE:
            return f"ilp, {self.formulation.value} formulation"
        return f"{words}, a simpler formulation"

    @property
    def is_search(self) -> bool:
        """Whether a formulation's search made the plan (not a warm start or a baseline)."""
        return self.origin not in (Origin.WARM_START, Origin.BASELINE)


@attrs.frozen(eq=False)
class Held:
    """A plan the pool holds, verified, with its simulation and where it came from."""

    plan: Plan
    """The plan (with its addresses when it passed a packing test)."""
    simulation: Simulation
    """The simulator's account of it under the problem's costs."""
    source: Source
    """Where it came from."""
    passes: bool
    """Whether it passed the caller's test (always, without one)."""

    @property
    def step_seconds(self) -> float:
        """Its simulated step time."""
        return float(self.simulation.step_seconds)


@attrs.frozen
class WarmStart:
    """A plan the caller offers (as a start and as a plan to beat), with where it came from."""

    plan: Plan
    """The plan."""
    source: Source
    """Where it came from (another planner at the same point, a neighbouring point)."""

    @classmethod
    def of(cls, offered: Plan | WarmStart) -> WarmStart:
        """``offered`` itself, or a bare plan as a warm start named by its planner."""
        if isinstance(offered, WarmStart):
            return offered
        return cls(offered, Source(Origin.WARM_START, name=offered.planner))


Test = Callable[[Plan], "Plan | None"]
"""The caller's test of a plan: the plan as it passes (e.g. with addresses), or ``None``."""


def allowed(plan: Plan, formulation: Formulation) -> bool:
    """Whether ``formulation`` allows ``plan``'s moves: none for static, no asynchronous ones
    for synchronous."""
    if formulation is Formulation.STATIC:
        return not plan.moves
    if formulation is Formulation.SYNCHRONOUS:
        return all(m.kind is MoveKind.SYNC for m in plan.moves)
    return True


def gap_of(step_seconds: float, bound_seconds: float | None) -> float | None:
    """``(step - bound) / step``, the one gap formula; ``None`` without a bound, or when the
    plan beats the bound (a plan the model cannot express: the bound does not bound it)."""
    if bound_seconds is None or step_seconds <= 0 or not math.isfinite(bound_seconds):
        return None
    if bound_seconds > step_seconds * (1 + 1e-9):
        return None
    return max(0.0, (step_seconds - bound_seconds) / step_seconds)


@attrs.define
class IncumbentPool:
    """Every plan a search holds (see the module docstring)."""

    graph: Graph
    """The graph planned."""
    system: MemorySystem
    """The memory system, with the limits applied: plans are verified against it."""
    costs: KernelCosts
    """The costs plans are simulated with."""
    test: Test | None = None
    """The caller's test (``None``: every plan passes)."""
    listener: Listener = ignore
    """Told of every faster plan that passes."""
    recompute: bool = False
    """Whether plans may recompute (have reruns); one that does is not held otherwise."""
    _held: tuple[Held, ...] = ()

    def offer(self, plan: Plan, source: Source, *,
              simulation: Simulation | None = None) -> Held | None:
        """Hold ``plan`` when it verifies and the costs price it (its ``simulation`` when
        already known); held to the caller's test. ``None`` when it is not held."""
        from autotm_core.plans.verify import verify_plan
        from autotm_core.simulation import simulate

        if plan.reruns and not self.recompute:
            logger.info("plan of %s not held: it recomputes, and recomputation is off",
                        source.describe())
            return None
        tested = self.test(plan) if self.test is not None else plan
        candidate = plan if tested is None else tested
        problems = verify_plan(candidate, self.graph, self.system)
        if problems:
            logger.info("plan of %s not held: %s", source.describe(), problems[0])
            return None
        if simulation is None:
            try:
                simulation = simulate(candidate, self.graph, self.system, self.costs)
            except PlanError as exc:  # a configuration its cost table lacks
                logger.info("plan of %s not held: %s", source.describe(), exc.message)
                return None
        held = Held(plan=candidate, simulation=simulation, source=source,
                    passes=tested is not None)
        before = self.best()
        self._held = (*self._held, held)
        if held.passes and (before is None or held.step_seconds < before.step_seconds):
            self.listener(IncumbentFound(held.step_seconds, source.describe()))
        return held

    def offer_all(self, plans: Iterable[tuple[Plan, Source]]) -> None:
        """Offer each of ``plans``."""
        for plan, source in plans:
            self.offer(plan, source)

    def starts(self, formulation: Formulation) -> list[Held]:
        """Every held plan ``formulation`` allows, passing the test or not, fastest first
        (starting solutions for its model)."""
        return sorted((h for h in self._held if allowed(h.plan, formulation)),
                      key=lambda h: h.step_seconds)

    def best(self, formulation: Formulation | None = None) -> Held | None:
        """The fastest held plan that passed the test (and that ``formulation`` allows);
        ``None`` when there is none. Ties go to the plan held last."""
        # newest first, so that a tie goes to the plan held last (a search's, over a start)
        candidates = [h for h in reversed(self._held) if h.passes
                      and (formulation is None or allowed(h.plan, formulation))]
        return min(candidates, key=lambda h: h.step_seconds, default=None)

    def held(self, source: Source) -> Held | None:
        """The plan held last from ``source``, if any."""
        return next((h for h in reversed(self._held) if h.source == source), None)


__all__ = ["Held", "IncumbentPool", "Origin", "Source", "Test", "WarmStart", "allowed",
           "gap_of"]
