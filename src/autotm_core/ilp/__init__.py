"""The ILP planner: AutoTM's static, synchronous and asynchronous formulations, generalised.

The formulation (:mod:`~autotm_core.ilp.formulation`, a pure function) writes one
linear program (:mod:`~autotm_core.ilp.lp`) with an index of its decisions
(:mod:`~autotm_core.ilp.model_index`); :mod:`~autotm_core.ilp.solve` hands its
arrays to any solver backend; :func:`plan_graph` (in
:mod:`autotm_core.ilp.planner`) solves, decodes and verifies exactly, with
:mod:`~autotm_core.ilp.reductions` and relax-and-fix
(:mod:`~autotm_core.ilp.incumbent`) on the way; :mod:`autotm_core.ilp.approximate`
plans very large graphs within a budget. Importing this package imports neither
Pyomo nor a solver; the planners do, when called.
"""

from autotm_core.ilp.options import Formulation, FormulationOptions

__all__ = ["Formulation", "FormulationOptions"]
