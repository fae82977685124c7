"""Approximate plans of very large graphs within a time budget, with a proven bound.

Stretch by stretch (:mod:`~autotm_core.ilp.approximate.rolling`) on the model's
time layout (:mod:`~autotm_core.ilp.approximate.layout`), a Lagrangian lower bound
(:mod:`~autotm_core.ilp.approximate.lagrangian`), and the budgeted planner combining
them (:func:`plan_approximate`). Importing this package imports neither Pyomo nor
a solver.
"""

from autotm_core.ilp.approximate.planner import ApproximatePlanResult, plan_approximate

__all__ = ["ApproximatePlanResult", "plan_approximate"]
