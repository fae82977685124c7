"""The ILP planner: AutoTM's static, synchronous and asynchronous formulations, generalised.

Importing this package imports neither Pyomo nor a solver; :func:`plan_graph`
(in :mod:`autotm_core.ilp.planner`) does, when called.
"""

from autotm_core.ilp.options import Formulation, FormulationOptions

__all__ = ["Formulation", "FormulationOptions"]
