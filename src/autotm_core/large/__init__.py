"""Plans for very large graphs: exact reductions, and a budgeted planner with a lower bound.

Importing this package imports neither Pyomo nor a solver.
"""

from autotm_core.large.planner import LargePlanResult, plan_large
from autotm_core.large.reductions import Reductions, find_reductions

__all__ = ["LargePlanResult", "Reductions", "find_reductions", "plan_large"]
