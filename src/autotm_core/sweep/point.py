"""One point of a sweep: a graph, a memory system, a planner and a fast-memory limit.

A :class:`SweepPoint` names everything by text (graph source, system preset or
file, planner, limit), so it can be pickled to another process or a Dask worker,
which loads what it needs itself. :func:`run_point` plans it and reports a
:class:`PointResult`; a point without any plan (too little memory, the solver found
none in time) is a result with status ``no-plan``, not an error.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from typing import Any

import attrs

from autotm_core.errors import CapacityError, SolverError, UsageError
from autotm_core.plans.model import Plan

logger = logging.getLogger(__name__)

ILP_PLANNERS = ("static", "synchronous", "asynchronous")
"""Planner names that mean the ILP planner with that formulation."""

BASELINE_PLANNERS = ("first-touch", "2lm", "greedy", "all-slow", "all-fast")
"""Planner names that mean a baseline."""


def check_planner(name: str) -> str:
    """``name`` when it names an ILP formulation or a baseline; :class:`UsageError` if not."""
    if name not in ILP_PLANNERS + BASELINE_PLANNERS:
        raise UsageError(f"no planner called {name!r}",
                         hint=f"use ILP formulations ({', '.join(ILP_PLANNERS)}) or baselines "
                         f"({', '.join(BASELINE_PLANNERS)})")
    return name


@attrs.frozen(kw_only=True)
class SweepPoint:
    """What to plan at one point of a sweep."""

    graph: str
    """Graph source, as the command line takes it (a file, ``example:mlp``, ``zoo:resnet50``)."""
    system: str
    """Memory-system preset name or file."""
    planner: str = attrs.field(validator=lambda _i, _a, v: check_planner(v))
    """ILP formulation (``synchronous`` ...) or baseline (``first-touch`` ...)."""
    limit: str
    """Fast-memory limit as given: a PMM:DRAM ratio (``4:1``) or a size (``64MiB``)."""
    solver: str = "highs"
    """ILP solver plugin."""
    time_limit_seconds: float | None = None
    """ILP time limit (``None``: none)."""
    relative_gap: float = 0.01
    """ILP relative gap at which the solver stops."""

    @property
    def key(self) -> str:
        """Identity of the point in a results file (everything that changes its answer)."""
        return "|".join([self.graph, self.system, self.planner, self.limit, self.solver,
                         str(self.time_limit_seconds), str(self.relative_gap)])

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
    """The fast-pool limit the point stands for."""
    peak_nbytes: int
    """Peak live bytes of the graph (tensors and workspace)."""
    all_fast_seconds: float
    """Step time with every tensor in the fastest pool and no limit: the ideal."""
    step_seconds: float | None = None
    """Predicted step time of the plan."""
    moved_nbytes: int = 0
    """Bytes copied between pools by the plan."""
    n_moves: int = 0
    """Number of moves of the plan."""
    plan_seconds: float = 0.0
    """Wall time to make the plan (model build and solve for the ILP)."""
    gap: float | None = None
    """Relative gap the ILP solver proved (``None`` for baselines)."""
    termination: str = ""
    """Why the ILP solver stopped (empty for baselines)."""
    message: str = ""
    """Why there is no plan, when there is none."""

    @property
    def slowdown(self) -> float | None:
        """Step time over all-fast time (``None`` without a plan)."""
        if self.step_seconds is None or self.all_fast_seconds <= 0:
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


@attrs.frozen(kw_only=True)
class _PlanFacts:
    """What a planner's plan gave, before it becomes a :class:`PointResult`."""

    step_seconds: float
    """Predicted step time of the plan."""
    moved_nbytes: int
    """Bytes copied between pools by the plan."""
    n_moves: int
    """Number of moves of the plan."""
    gap: float | None = None
    """Relative gap the ILP solver proved (``None`` for baselines)."""
    termination: str = ""
    """Why the ILP solver stopped (empty for baselines)."""


@functools.lru_cache(maxsize=16)
def _context(graph_source: str, system_name: str) -> tuple[Any, Any, Any, float]:
    """(graph, system, costs, all-fast seconds), loaded once per process."""
    from autotm_core.baselines import all_fast
    from autotm_core.costs import resolve_costs
    from autotm_core.formats import resolve_system
    from autotm_core.simulation import simulate
    from autotm_core.sources import load_source

    graph = load_source(graph_source)
    system = resolve_system(system_name)
    costs = resolve_costs(graph, system)
    unbounded = system.with_capacity(system.fast.name, None)
    ideal = simulate(all_fast(graph, unbounded), graph, unbounded, costs).step_seconds
    return graph, system, costs, float(ideal)


def point_capacity(point: SweepPoint) -> int:
    """The fast-pool limit in bytes of ``point`` for its graph."""
    from autotm_core.capacity import fast_capacity

    graph = _context(point.graph, point.system)[0]
    if ":" in point.limit:
        return int(fast_capacity(graph, ratio=point.limit))  # type: ignore[arg-type]
    return int(fast_capacity(graph, nbytes=point.limit))  # type: ignore[arg-type]


def run_point(point: SweepPoint) -> PointResult:
    """Plan ``point`` and simulate the plan (see :func:`plan_point`)."""
    return plan_point(point)[0]


def plan_point(point: SweepPoint, *,
               start_plans: Sequence[Plan] = ()) -> tuple[PointResult, Plan | None]:
    """Plan ``point`` and simulate the plan; also return the plan (``None`` without one).

    An ILP point is warm-started from the best of the greedy plan and ``start_plans``
    (a neighbouring point's plan). Raises KeyboardInterrupt when the solver was
    interrupted (the point is then not finished); other planning failures give a
    ``no-plan`` result.
    """
    graph, system, costs, ideal = _context(point.graph, point.system)
    capacity = point_capacity(point)
    base = PointResult(point=point, status="no-plan", fast_capacity_nbytes=capacity,
                       peak_nbytes=int(graph.liveness.peak_nbytes), all_fast_seconds=ideal)
    started = time.perf_counter()
    try:
        if point.planner in ILP_PLANNERS:
            facts, plan = _plan_ilp(point, graph, system, costs, capacity, start_plans)
        else:
            facts, plan = _plan_baseline(point, graph, system, costs, capacity)
    except (CapacityError, SolverError) as exc:
        logger.info("no plan for %s: %s", point.key, exc.message)
        return attrs.evolve(base, message=exc.message,
                            plan_seconds=time.perf_counter() - started), None
    result = attrs.evolve(base, status="ok", plan_seconds=time.perf_counter() - started,
                          step_seconds=facts.step_seconds, moved_nbytes=facts.moved_nbytes,
                          n_moves=facts.n_moves, gap=facts.gap, termination=facts.termination)
    return result, plan


def _plan_ilp(point: SweepPoint, graph: Any, system: Any, costs: Any, capacity: int,
              start_plans: Sequence[Plan]) -> tuple[_PlanFacts, Plan]:
    from autotm_core.ilp.planner import plan_graph
    from autotm_core.solvers import TerminationCondition

    result = plan_graph(graph, system, fast_capacity_nbytes=capacity, formulation=point.planner,
                        solver=point.solver, time_limit_seconds=point.time_limit_seconds,
                        relative_gap=point.relative_gap, costs=costs, start_plans=start_plans)
    if result.solve.termination is TerminationCondition.INTERRUPTED:
        raise KeyboardInterrupt
    gap = result.plan.attributes.get("gap")
    facts = _facts(result.simulation, result.step_seconds,
                   gap=None if gap is None else float(gap),
                   termination=result.solve.termination.value)
    return facts, result.plan


def _plan_baseline(point: SweepPoint, graph: Any, system: Any, costs: Any,
                   capacity: int) -> tuple[_PlanFacts, Plan]:
    from autotm_core.baselines import run_baseline
    from autotm_core.baselines.two_level import two_level_plan
    from autotm_core.plans import check_plan
    from autotm_core.simulation import simulate

    cache = None
    if point.planner == "2lm":
        plan, cache = two_level_plan(graph, system, fast_capacity_nbytes=capacity)
    else:
        plan = run_baseline(point.planner, graph, system, fast_capacity_nbytes=capacity)
    check_plan(plan, graph, system)
    sim = simulate(plan, graph, system, costs)
    # 2LM moves nothing in the plan: its time is the cache model's, not the simulator's
    step = cache.predicted_seconds if cache is not None else sim.step_seconds
    return _facts(sim, float(step)), plan


def _facts(sim: Any, step_seconds: float, *, gap: float | None = None,
           termination: str = "") -> _PlanFacts:
    return _PlanFacts(step_seconds=step_seconds, moved_nbytes=int(sim.pair_nbytes.sum()),
                      n_moves=int(sim.pair_counts.sum()), gap=gap, termination=termination)
