"""ILP solver plugins and the interface they share (see ``docs/solvers.md``).

Every backend solves a :class:`MatrixProblem` (arrays) and declares what it can do
in its :class:`SolverCapabilities`; Pyomo models reach them through
:mod:`autotm_core.solvers.pyomo`. The built-in backends (``highs``, ``cbc``,
``glpk``) are registered in the ``autotm_core.solvers`` entry-point group exactly
as a third party's would be; find them with :func:`autotm_core.plugins.get_solver`.
Importing this package imports no solver and no Pyomo.
"""

from autotm_core.solvers.base import (
    DEFAULT_SOLVER,
    MatrixProblem,
    SolutionStatus,
    Solver,
    SolverCapabilities,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    relative_gap,
)

__all__ = [
    "DEFAULT_SOLVER",
    "MatrixProblem",
    "SolutionStatus",
    "SolveResult",
    "Solver",
    "SolverCapabilities",
    "SolverConfig",
    "TerminationCondition",
    "relative_gap",
]
