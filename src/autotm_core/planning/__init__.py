"""Planning one point: a problem and a planner in, a verified, simulated outcome out.

- :class:`Problem` (:mod:`.problem`): graph, memory system, costs and a
  :class:`~autotm_core.capacity.Limit`; :func:`load_problem` from what a user writes.
- :data:`PLANNERS` (:mod:`.planners`): every planner by name, ILP and baseline.
- :func:`plan` (:mod:`.plan`): the one function that plans a point; it always verifies.
- :class:`PlanSettings` (:mod:`.settings`): how a point is planned, one typed record.
- :class:`Outcome` (:mod:`.outcome`): the plan, its simulation, its step time, the
  solve's statistics, the address fitting, the 2LM cache model's result.
- :func:`compare_baselines` (:mod:`.compare`): the baselines at the same point.
- :class:`PlanMode` (:mod:`.mode`): exact, approximate, or chosen by size.

Importing this package imports neither Pyomo nor a solver.
"""

from autotm_core.capacity import Limit, PoolLimit
from autotm_core.ilp.fitting import DEFAULT_MAX_ROUNDS
from autotm_core.ilp.search.pool import WarmStart
from autotm_core.planning.compare import Comparison, compare_baselines
from autotm_core.planning.mode import PlanMode, resolve_mode
from autotm_core.planning.outcome import Addresses, ModelSize, Outcome, SolveStats
from autotm_core.planning.plan import plan
from autotm_core.planning.planners import (
    BASELINE_PLANNERS,
    COMPARED_BASELINES,
    ILP_PLANNERS,
    PLANNERS,
    Planner,
    PlannerKind,
    get_planner,
)
from autotm_core.planning.problem import Problem, load_problem
from autotm_core.planning.settings import DEFAULT_RELATIVE_GAP, CacheOptions, PlanSettings

__all__ = [
    "BASELINE_PLANNERS",
    "COMPARED_BASELINES",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_RELATIVE_GAP",
    "ILP_PLANNERS",
    "PLANNERS",
    "Addresses",
    "CacheOptions",
    "Comparison",
    "Limit",
    "ModelSize",
    "Outcome",
    "PlanMode",
    "PlanSettings",
    "Planner",
    "PlannerKind",
    "PoolLimit",
    "Problem",
    "SolveStats",
    "WarmStart",
    "compare_baselines",
    "get_planner",
    "load_problem",
    "plan",
    "resolve_mode",
]
