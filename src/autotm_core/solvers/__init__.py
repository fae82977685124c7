"""ILP solver plugins and the interface they share (see ``docs/solvers.md``).

The built-in backends (``highs``, ``cbc``, ``glpk``) are registered in the
``autotm_core.solvers`` entry-point group exactly as a third party's would be;
find them with :func:`autotm_core.plugins.get_solver`. Importing this package
imports no solver and no Pyomo.
"""

from autotm_core.solvers.base import (
    DEFAULT_SOLVER,
    SolutionStatus,
    Solver,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    relative_gap,
)

__all__ = [
    "DEFAULT_SOLVER",
    "SolutionStatus",
    "SolveResult",
    "Solver",
    "SolverConfig",
    "TerminationCondition",
    "relative_gap",
]
