"""Planning one point: a problem (graph, memory system, costs, limit) and a planner -> a verified plan.

Importing this package imports neither Pyomo nor a solver.
"""

from autotm_core.planning.mode import AUTO_THRESHOLD_KERNELS, PlanMode, resolve_mode

__all__ = ["AUTO_THRESHOLD_KERNELS", "PlanMode", "resolve_mode"]
