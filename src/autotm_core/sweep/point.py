"""One point of a sweep: a graph, a memory system, a planner and a limit, named by text.

A :class:`SweepPoint` names everything by text (graph source, system preset or
file, planner, limit), so it can be pickled to another process or a Dask worker,
which loads what it needs itself (once per process, see
:func:`~autotm_core.planning.load_problem`). :func:`plan_point` plans it through
:func:`autotm_core.planning.plan` — the same planning as ``solve`` and
``baseline`` — and reports a :class:`PointResult`; a point without any plan
(too little memory, the solver found none in time) is a result with status
``no-plan``, not an error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import attrs

from autotm_core.errors import CapacityError, PlanError, SolveInterruptedError, SolverError
from autotm_core.ilp.search.pool import Source, WarmStart
from autotm_core.planning import PlanMode, PlanSettings, get_planner
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import DEFAULT_SOLVER

logger = logging.getLogger(__name__)


def _planner_name(_instance: object, _attribute: object, value: str) -> None:
    get_planner(value)


def _mode_value(value: PlanMode | str) -> str:
    return PlanMode.parse(value).value


@attrs.frozen(kw_only=True)
class SweepPoint:
    """What to plan at one point of a sweep."""

    graph: str
    """Graph source, as the command line takes it (a file, ``example:mlp``, ``zoo:resnet50``)."""
    system: str
    """Memory-system preset name or file."""
    planner: str = attrs.field(validator=_planner_name)
    """A planner of :data:`autotm_core.planning.PLANNERS`."""
    limit: str
    """Capacity limit as written (:class:`~autotm_core.capacity.Limit`): ``4:1``, ``64MiB``,
    ``hbm=4:1,dram=4:1``."""
    solver: str = DEFAULT_SOLVER
    """ILP solver plugin."""
    time_limit_seconds: float | None = None
    """ILP time limit (``None``: none)."""
    relative_gap: float = 0.01
    """ILP relative gap at which the solver stops."""
    mode: str = attrs.field(default=PlanMode.AUTO.value, converter=_mode_value)
    """ILP planning mode: ``exact``, ``approximate`` or ``auto``."""
    addresses: bool = True
    """Whether ILP plans get addresses that fit (as ``solve`` gives them)."""
    recompute: bool = True
    """Whether ILP plans may recompute activations (off: ``--no-recompute``)."""

    @property
    def settings(self) -> PlanSettings:
        """How the point is planned."""
        return PlanSettings(mode=self.mode, addresses=self.addresses, solver=self.solver,
                            time_limit_seconds=self.time_limit_seconds,
                            relative_gap=self.relative_gap, recompute=self.recompute)

    @property
    def key(self) -> str:
        """Identity of the point in a results file (everything that changes its answer; a
        baseline's does not depend on recomputation, and an ILP point that keeps and moves
        only is not the one that may recompute)."""
        keeps_and_moves = not self.recompute and get_planner(self.planner).formulation is not None
        return "|".join([self.graph, self.system, self.planner, self.limit, self.solver,
                         str(self.time_limit_seconds), str(self.relative_gap), self.mode,
                         "addresses" if self.addresses else "no-addresses",
                         *(["no-recompute"] if keeps_and_moves else [])])

    def to_json(self) -> dict[str, Any]:
        """The point as JSON values."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class PointResult:
    """What planning one point gave."""

    point: SweepPoint
    """The point."""
    status: str
    """``ok``, or ``no-plan`` when no plan exists or none was found (see :attr:`message`)."""
    fast_capacity_nbytes: int
    """The fast pool's limit at the point."""
    peak_nbytes: int
    """Peak live bytes of the graph (tensors and workspace)."""
    all_fast_seconds: float | None
    """Step time with every tensor in the fastest pool and no limit: the ideal (``None`` when
    the costs cannot price it)."""
    n_kernels: int = 0
    """Kernels of the graph."""
    step_seconds: float | None = None
    """Predicted step time of the plan."""
    moved_nbytes: int = 0
    """Bytes copied between pools by the plan per step."""
    n_moves: int = 0
    """Number of moves of the plan."""
    n_reruns: int = 0
    """Number of kernels the plan runs again (recomputing what it drops)."""
    rerun_seconds: float = 0.0
    """Time of those reruns in the step."""
    plan_seconds: float = 0.0
    """Wall time to plan, verify and simulate."""
    source: str = ""
    """Where the plan came from (``ilp``, ``ilp by stretches``, ``greedy``, a baseline)."""
    gap: float | None = None
    """Relative gap the ILP proved (``None`` for baselines)."""
    termination: str = ""
    """Why the ILP stopped (empty for baselines)."""
    build_seconds: float | None = None
    """ILP only: seconds to build the model."""
    solve_seconds: float | None = None
    """ILP only: seconds in the solver."""
    n_variables: int | None = None
    """ILP only: variables of the model."""
    n_binaries: int | None = None
    """ILP only: binary variables."""
    n_constraints: int | None = None
    """ILP only: rows (``None`` when not counted)."""
    n_nonzeros: int | None = None
    """ILP only: nonzeros."""
    message: str = ""
    """Why there is no plan, when there is none."""

    @property
    def slowdown(self) -> float | None:
        """Step time over all-fast time (``None`` without a plan)."""
        if self.step_seconds is None or not self.all_fast_seconds:
            return None
        return self.step_seconds / self.all_fast_seconds

    def to_json(self) -> dict[str, Any]:
        """The result as JSON values (the point inlined, slowdown included)."""
        data = attrs.asdict(self, recurse=False)
        data["point"] = self.point.to_json()
        data["slowdown"] = self.slowdown
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PointResult:
        """The inverse of :meth:`to_json` (raises TypeError/KeyError on malformed data)."""
        fields = {k: v for k, v in data.items() if k != "slowdown"}
        fields["point"] = SweepPoint(**fields["point"])
        return cls(**fields)


def run_point(point: SweepPoint) -> PointResult:
    """Plan ``point`` (see :func:`plan_point`)."""
    return plan_point(point)[0]


def plan_point(point: SweepPoint, *,
               start_plans: Sequence[Plan | WarmStart] = ()) -> tuple[PointResult, Plan | None]:
    """Plan ``point``; also return the plan (``None`` without one).

    An ILP point is warm-started from ``start_plans`` too (a neighbouring point's
    plan, the plans of other planners at the same point). Raises KeyboardInterrupt when the
    solver was interrupted (the point is then not finished); a point where no plan fits or
    none was found gives a ``no-plan`` result.
    """
    from autotm_core.planning import load_problem, plan
    from autotm_core.solvers.highs import wait_for_abandoned_solves

    problem = load_problem(point.graph, point.system, limit=point.limit)
    # an earlier point's abandoned solve, still running, would hold HiGHS within this
    # point's time limit: its time is its own
    wait_for_abandoned_solves(f" before planning {point.key}")
    base = PointResult(point=point, status="no-plan",
                       fast_capacity_nbytes=int(problem.fast_capacity_nbytes or 0),
                       peak_nbytes=problem.peak_nbytes, all_fast_seconds=problem.all_fast_seconds,
                       n_kernels=len(problem.graph.kernels))
    started = time.perf_counter()
    try:
        outcome = plan(problem, point.planner, point.settings, warm_starts=start_plans)
    except SolveInterruptedError:
        raise KeyboardInterrupt from None  # Ctrl-C: the point is not finished
    except (CapacityError, SolverError, PlanError) as exc:
        logger.info("no plan for %s: %s", point.key, exc.message)
        return attrs.evolve(base, message=exc.message,
                            plan_seconds=time.perf_counter() - started), None
    if outcome.interrupted:
        raise KeyboardInterrupt
    solve, model = outcome.solve, outcome.model
    result = attrs.evolve(
        base, status="ok", plan_seconds=outcome.plan_seconds, step_seconds=outcome.step_seconds,
        moved_nbytes=outcome.moved_nbytes, n_moves=outcome.n_moves, n_reruns=outcome.n_reruns,
        rerun_seconds=outcome.rerun_seconds, source=outcome.source,
        gap=None if solve is None else solve.gap,
        termination="" if solve is None else solve.termination,
        build_seconds=None if solve is None else solve.build_seconds,
        solve_seconds=None if solve is None else solve.solve_seconds,
        n_variables=None if model is None else model.variables,
        n_binaries=None if model is None else model.binaries,
        n_constraints=None if model is None else model.constraints,
        n_nonzeros=None if model is None else model.nonzeros)
    return result, outcome.plan


def held_source(point: SweepPoint) -> Source:
    """Where a plan made at ``point`` came from, as the other planners at the same point are
    offered it."""
    from autotm_core.ilp.search import Origin

    formulation = get_planner(point.planner).formulation
    if formulation is None:
        return Source(Origin.BASELINE, name=point.planner)
    return Source(Origin.SOLVE, formulation)


def run_same_point(points: Sequence[SweepPoint]) -> list[PointResult]:
    """Plan ``points`` (every planner at one graph, system and limit) one after another, the
    simplest first, each offered the plans already made: on a worker (process or Dask) the
    order static >= synchronous >= asynchronous >= the held baselines holds as in one
    process."""
    made: list[WarmStart] = []
    results = []
    for point in simplest_first(points):
        result, plan_ = plan_point(point, start_plans=tuple(made))
        if plan_ is not None:
            made.append(WarmStart(plan_, held_source(point)))
        results.append(result)
    return results


def simplest_first(points: Sequence[SweepPoint]) -> list[SweepPoint]:
    """``points`` with each graph's baselines first, then its ILP formulations from the
    simplest; otherwise in the order given (limits keep theirs)."""
    from autotm_core.planning.ilp import CHAIN

    graphs: dict[tuple[str, str], int] = {}
    for p in points:
        graphs.setdefault((p.graph, p.system), len(graphs))

    def rank(p: SweepPoint) -> tuple[int, int]:
        formulation = get_planner(p.planner).formulation
        return graphs[p.graph, p.system], 0 if formulation is None else 1 + CHAIN.index(
            formulation)

    return sorted(points, key=rank)
