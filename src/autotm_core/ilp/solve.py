"""Hand the model to a solver backend: which backend, whether it can do the job, the solve.

The formulation is written once, as a :class:`~autotm_core.ilp.lp.LinearProgram`;
every backend gets its arrays (:func:`~autotm_core.ilp.lp.to_matrix_problem`)
through the :class:`~autotm_core.solvers.Solver` protocol, and a planner that needs
more than solving (row duals, warm starts) asks the backend's declared
:class:`~autotm_core.solvers.SolverCapabilities` first.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from autotm_core.errors import UsageError
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.model_index import ModelIndex
from autotm_core.solvers.base import Solver, SolverConfig, SolveResult

CAPABILITY_WORDS = {
    "mip": "integer variables",
    "warm_start": "starting solutions",
    "interrupt": "a best solution kept on Ctrl-C",
    "duals": "row duals of continuous models",
}
"""What each field of :class:`~autotm_core.solvers.SolverCapabilities` means, for messages."""


def require(backend: Solver, *needed: str, purpose: str, instead: str) -> None:
    """Raise one :class:`UsageError` when ``backend`` lacks any capability in ``needed``.

    ``needed`` are fields of :class:`~autotm_core.solvers.SolverCapabilities`;
    ``purpose`` says what they are needed for and ``instead`` what to use instead.
    """
    missing = [name for name in needed if not getattr(backend.capabilities, name)]
    if missing:
        lacks = ", ".join(f"{CAPABILITY_WORDS[name]} (capability {name!r})" for name in missing)
        raise UsageError(f"solver {backend.name!r} cannot {purpose}: it lacks {lacks}",
                         hint=f"use {instead}")


def solve_program(index: ModelIndex, backend: Solver, config: SolverConfig, *,
                  start: np.ndarray | None,
                  name: str = "autotm") -> tuple[SolveResult, np.ndarray | None]:
    """Solve ``index``'s model with ``backend``: the result and the values (``None`` if none).

    ``start`` (one value per variable) is offered when ``config.warm_start``. The
    result's ``handoff_seconds`` includes making the arrays.
    """
    started = time.perf_counter()
    problem = to_matrix_problem(index.lp, name=name)
    arrays = time.perf_counter() - started
    result, values = backend.solve(problem, config, start)
    return attrs.evolve(result, handoff_seconds=result.handoff_seconds + arrays), values
