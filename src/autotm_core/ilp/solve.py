"""Hand one model to a solver: as matrices to a backend that takes them, else through Pyomo.

The formulation is written once, as a :class:`~autotm_core.ilp.lp.LinearProgram`.
A backend with a ``solve_matrix(problem, config, start)`` method (HiGHS) gets its
arrays directly, which costs a small fraction of building the Pyomo model; every
other backend gets the Pyomo model :func:`~autotm_core.ilp.lp.to_pyomo` makes from
the same arrays, through the :class:`~autotm_core.solvers.Solver` protocol.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np

from autotm_core.ilp.formulation import ModelIndex
from autotm_core.ilp.lp import pyomo_values, set_pyomo_values, to_matrix_problem, to_pyomo


def solve_program(index: ModelIndex, backend: Any, config: Any, *, start: np.ndarray | None,
                  name: str = "autotm") -> tuple[Any, np.ndarray | None]:
    """Solve ``index``'s model with ``backend``: the result and the values (``None`` if none).

    ``start`` (one value per variable) is offered when ``config.warm_start``. The result's
    ``build_seconds`` holds the time spent building the Pyomo model (0 on the matrix path);
    its ``handoff_seconds`` includes making the arrays.
    """
    matrix_solve = getattr(backend, "solve_matrix", None)
    if callable(matrix_solve):
        started = time.perf_counter()
        problem = to_matrix_problem(index.lp, name=name)
        arrays = time.perf_counter() - started
        result, values = matrix_solve(problem, config, start)
        return attrs.evolve(result, handoff_seconds=result.handoff_seconds + arrays), values
    started = time.perf_counter()
    model = to_pyomo(index.lp)
    if start is not None and config.warm_start:
        set_pyomo_values(model, start)
    built = time.perf_counter() - started
    result = backend.solve(model, config)
    values = pyomo_values(model, index.lp.n_vars) if result.has_solution else None
    return attrs.evolve(result, build_seconds=built), values
