"""What planning one point gave: the verified plan, its simulation and how it was found.

Every field is typed: the 2LM cache model's step time, the solver's statistics,
the model's size, the address-fitting rounds and the reductions are fields of
their own, not entries of a plan's attributes. Reports render these records;
they compute nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from autotm_core.planning.mode import PlanMode
from autotm_core.planning.planners import Planner
from autotm_core.planning.problem import Problem
from autotm_core.plans.model import Plan

if TYPE_CHECKING:
    from autotm_core.addresses import OffsetAssignment
    from autotm_core.baselines import CacheResult
    from autotm_core.ilp.fitting import FitRound
    from autotm_core.ilp.reductions import Reductions
    from autotm_core.ilp.search.budget import Phase
    from autotm_core.simulation import Simulation


@attrs.frozen(kw_only=True)
class SolveStats:
    """How the ILP planner found its plan."""

    solver: str
    """The solver plugin that ran (e.g. ``"highs"``)."""
    solver_version: str
    """Its version as it reports it (``""`` when unknown)."""
    mode: PlanMode
    """``EXACT`` (the whole model to its gap or time limit) or ``APPROXIMATE``."""
    termination: str
    """Why planning stopped (a :class:`~autotm_core.solvers.TerminationCondition` value for
    an exact solve; the approximate planner says it in words)."""
    status: str
    """What kind of solution the plan is: ``"optimal"`` (within the gap asked for) or
    ``"feasible"``."""
    proven_optimal: bool
    """Whether the plan is proven optimal within the gap asked for, among every plan the rules
    allow (false whenever :attr:`restrictions` is not empty)."""
    optimal_in_model: bool
    """Whether the plan is proven optimal within the gap among the plans the model can
    express (the solver's claim; :attr:`restrictions` says how the model is narrower)."""
    restrictions: tuple[str, ...]
    """One line per way the model is narrower than the plan rules for this problem
    (:func:`~autotm_core.ilp.restrictions.model_restrictions`)."""
    interrupted: bool
    """Whether Ctrl-C stopped the solver (the plan is the best found before)."""
    objective_seconds: float | None
    """The model's objective for the plan (exact) or the plan's step time (approximate)."""
    bound_seconds: float | None
    """A proven lower bound on the optimal step time (``None`` when unknown)."""
    bound_source: str
    """Where the bound comes from: ``"solver"``, ``"lp relaxation"``, ``"lagrangian"`` or
    ``"kernels"`` (every kernel at its fastest); ``""`` without a bound."""
    gap: float | None
    """Relative distance between the plan and the bound (``None`` when unknown)."""
    build_seconds: float
    """Seconds to build the model (and, approximate, to plan greedy's start and reduce)."""
    handoff_seconds: float
    """Seconds handing the model to the solver and reading the solution back."""
    solve_seconds: float
    """Seconds in the solver."""
    warm_started: bool
    """Whether the solver started from a plan (greedy's, a neighbour's, relax-and-fix's)."""

    @property
    def total_seconds(self) -> float:
        """Build, hand-off and solve together."""
        return self.build_seconds + self.handoff_seconds + self.solve_seconds


@attrs.frozen(kw_only=True)
class ModelSize:
    """The size of the ILP solved."""

    formulation: str
    """The formulation (``static``, ``synchronous``, ``asynchronous``)."""
    variables: int
    """Variables."""
    binaries: int
    """Binary variables among them."""
    constraints: int | None
    """Rows (``None`` when not counted)."""
    nonzeros: int
    """Nonzero coefficients of the rows."""
    recomputes: bool = False
    """Whether the model may recompute activations (reruns)."""
    held_reruns: bool = False
    """Whether its only rerun options were the held plans' reruns."""

    @property
    def name(self) -> str:
        """The model's name in reports: its formulation, and which reruns it may choose."""
        return model_name(self.formulation, recomputes=self.recomputes,
                          held_reruns=self.held_reruns)


def model_name(formulation: str, *, recomputes: bool, held_reruns: bool) -> str:
    """A model's (and its stage's) name: ``"synchronous"``, ``"synchronous, recomputing"``
    (every rerun option), ``"synchronous, the held plans' reruns"`` (only those)."""
    return formulation + (", the held plans' reruns" if held_reruns else
                          ", recomputing" if recomputes else "")


@attrs.frozen(kw_only=True, eq=False)
class Addresses:
    """How the plan's tensors were given addresses in every bounded pool."""

    fits: bool
    """Whether the plan carries offsets inside every bounded pool's capacity."""
    rounds: tuple[FitRound, ...]
    """Every solve of the address-fitting loop, in order (each with its seconds)."""
    assignment: OffsetAssignment
    """The last round's offsets and per-pool heights."""

    @property
    def fragmentation_nbytes(self) -> int:
        """Bytes the packing wastes over the lower bounds, all bounded pools."""
        return int(self.assignment.fragmentation_nbytes)


@attrs.frozen(kw_only=True, eq=False)
class Outcome:
    """One planned point: the verified plan, its simulation, its step time and its story."""

    problem: Problem
    """What was planned."""
    planner: Planner
    """Who planned it."""
    plan: Plan
    """The plan; it passed the verifier against the problem's limited system."""
    simulation: Simulation
    """The simulator's account of the plan (times, traffic, memory over time)."""
    step_seconds: float
    """Predicted step time: the simulator's, or for 2LM the cache model's."""
    source: str
    """Where the plan came from: ``"ilp"`` (the asked formulation's own solve), ``"ilp by
    stretches"``, ``"ilp, static formulation"`` (a simpler formulation's plan the richer
    solve did not beat), a baseline's name (a held baseline plan it did not beat, or the
    approximate planner's fallback; for a baseline planner, its own name)."""
    plan_seconds: float
    """Wall seconds to plan, verify and simulate."""
    solve: SolveStats | None = None
    """The solve (ILP planners only)."""
    model: ModelSize | None = None
    """The model's size (ILP planners only)."""
    addresses: Addresses | None = None
    """The address fitting (exact ILP with addresses only)."""
    reductions: Reductions | None = None
    """The exact reductions applied (approximate planning only)."""
    cache: CacheResult | None = None
    """The 2LM cache model's result (2LM only): its per-kernel times and hit rate."""
    note: str = ""
    """Why the plan returned is not the asked formulation's own solve's, when it is not (a
    simpler formulation's plan, or a held plan, the solve did not beat)."""
    phases: tuple[Phase, ...] = ()
    """Where the ILP planner's time went, step by step (``"synchronous: solve"``), in the
    order first run; summed over address-fitting rounds (ILP planners only)."""

    @property
    def all_fast_seconds(self) -> float | None:
        """Step time with every tensor in the fastest pool and no limit (``None``: unknown)."""
        return self.problem.all_fast_seconds

    @property
    def slowdown(self) -> float | None:
        """Step time over all-fast time (``None`` when that is unknown or zero)."""
        ideal = self.all_fast_seconds
        return self.step_seconds / ideal if ideal else None

    @property
    def moved_nbytes(self) -> int:
        """Bytes the plan copies between pools per step."""
        return int(self.simulation.pair_nbytes.sum())

    @property
    def n_moves(self) -> int:
        """Moves the plan makes per step."""
        return int(self.simulation.pair_counts.sum())

    @property
    def n_reruns(self) -> int:
        """Kernels the plan runs again per step (to recompute what it drops)."""
        return len(self.plan.reruns)

    @property
    def rerun_seconds(self) -> float:
        """Time of those reruns in the step (part of :attr:`step_seconds`)."""
        return float(self.simulation.rerun_seconds.sum())

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the solver before it finished."""
        return self.solve is not None and self.solve.interrupted
