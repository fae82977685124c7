"""The bridge between Pyomo models and the matrix form every backend takes.

- :func:`to_pyomo`: a :class:`~autotm_core.solvers.base.MatrixProblem` as a Pyomo
  ``ConcreteModel`` (what CBC runs on, and what
  :func:`~autotm_core.ilp.formulation.build_model` returns);
- :func:`from_pyomo`: a linear Pyomo model, built or extended by a user, as a
  :class:`MatrixProblem` with its variables, so any backend can solve it;
- :func:`solve_pyomo`: both ways around a solve: compile, solve with any backend,
  load the values back into the model's variables.

Pyomo, NumPy and SciPy are imported inside the functions, never by ``import
autotm_core``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from autotm_core.errors import SolverError
from autotm_core.solvers.base import (
    MatrixProblem,
    Solver,
    SolverConfig,
    SolveResult,
    paused_gc,
)

if TYPE_CHECKING:
    import numpy as np


def to_pyomo(problem: MatrixProblem) -> Any:
    """A Pyomo ``ConcreteModel`` with variables ``model.x[0..n-1]``, rows ``model.rows[0..m-1]``.

    Column ``j`` has ``problem``'s bounds (``None`` where infinite) and is binary
    (integer within [0, 1]), integer or real; row ``r`` is ``body == lb`` when its
    bounds are equal, else ``lb <= body``, ``body <= ub`` or ``lb <= body <= ub`` (a
    row free on both sides is left out); ``body`` is a ``LinearExpression`` of ``coef
    * x[j]`` terms in the order of ``problem``'s row. The objective ``model.objective``
    has the nonzero costs in column order, plus the offset when there is one.

    The variables are made from one template and their domains and bounds set after
    (no rule call per variable), the expressions are built directly (no operator
    dispatch), all with the garbage collector paused (:func:`paused_gc`).
    """
    import numpy as np
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression
    from pyomo.core.expr.relational_expr import (
        EqualityExpression,
        InequalityExpression,
        RangedExpression,
    )

    with paused_gc():
        model = pyo.ConcreteModel(name=problem.name)
        model.x = pyo.Var(range(problem.n_columns), domain=pyo.Reals, dense=True)
        x = list(model.x.values())
        lower, upper = np.asarray(problem.col_lower), np.asarray(problem.col_upper)
        binary = np.asarray(problem.is_integer, dtype=bool) & (lower >= 0) & (upper <= 1)
        for var, low, high, integer, bit in zip(x, lower.tolist(), upper.tolist(),
                                                np.asarray(problem.is_integer).tolist(),
                                                binary.tolist(), strict=True):
            if integer:
                var.domain = pyo.Binary if bit else pyo.Integers
            if low != -math.inf:
                var.lower = low
            if high != math.inf:
                var.upper = high

        def linear(cols: list[int], coefs: list[float]) -> Any:
            return LinearExpression(list(map(MonomialTermExpression,
                                             zip(coefs, map(x.__getitem__, cols), strict=True))))

        def relation(r: int, low: float, high: float) -> Any:
            begin, end = starts[r], starts[r + 1]
            body = linear(cols[begin:end], coefs[begin:end])
            if low == high:
                return EqualityExpression((body, low))
            if high == math.inf:
                if low == -math.inf:
                    return pyo.Constraint.Skip
                return InequalityExpression((low, body), False)
            if low == -math.inf:
                return InequalityExpression((body, high), False)
            return RangedExpression((low, body, high), (False, False))

        starts = np.asarray(problem.start).tolist()
        cols = np.asarray(problem.index).tolist()
        coefs = np.asarray(problem.value, dtype=np.float64).tolist()
        rows = list(map(relation, range(problem.n_rows),
                        np.asarray(problem.row_lower, dtype=np.float64).tolist(),
                        np.asarray(problem.row_upper, dtype=np.float64).tolist()))
        model.rows = pyo.Constraint(range(problem.n_rows), rule=lambda _m, r: rows[r])
        cost = np.asarray(problem.cost, dtype=np.float64)
        priced = np.flatnonzero(cost)
        expr = linear(priced.tolist(), cost[priced].tolist())
        if problem.offset:
            expr = expr + float(problem.offset)
        model.objective = pyo.Objective(expr=expr,
                                        sense=pyo.maximize if problem.maximize else pyo.minimize)
    return model


@attrs.frozen(kw_only=True, eq=False)
class CompiledModel:
    """A Pyomo model as a :class:`MatrixProblem`, with the variable of each column."""

    problem: MatrixProblem
    """The model in matrix form."""
    columns: Sequence[Any]
    """The Pyomo variables, one per column, in column order."""

    def start_values(self) -> np.ndarray:
        """Values already set on the columns (NaN where none), for a warm start."""
        import numpy as np

        return np.array([math.nan if v.value is None else float(v.value) for v in self.columns])

    def load(self, values: np.ndarray | Sequence[float]) -> None:
        """Write ``values`` into the Pyomo variables, column by column."""
        for var, value in zip(self.columns, values, strict=True):
            var.set_value(float(value), skip_validation=True)


def from_pyomo(model: Any) -> CompiledModel:
    """Compile the linear ``model`` with exactly one active objective (Pyomo's standard-form
    compiler, one walk over the model); raises :class:`SolverError` when it is not linear."""
    import numpy as np
    from pyomo.common.errors import InfeasibleConstraintException
    from pyomo.core.expr.numvalue import value
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    try:
        info = LinearStandardFormCompiler().write(
            model, mixed_form=True, set_sense=None, file_determinism=0
        )
    except InfeasibleConstraintException as exc:
        raise SolverError(
            f"model {model.name!r} has a constraint that no value can satisfy: {exc}",
            hint="check the bounds and constant terms of its constraints",
        ) from exc
    except (ValueError, TypeError) as exc:  # nonlinear or unsupported components
        raise SolverError(
            f"model {model.name!r} cannot be written as a linear program: {exc}",
            hint="solver plugins take linear models with one objective",
        ) from exc
    if len(info.objectives) != 1:
        raise SolverError(
            f"model {model.name!r} has {len(info.objectives)} active objectives, expected 1",
            hint="deactivate all but one objective before solving",
        )
    n = len(info.columns)
    inf = math.inf
    cost = np.asarray(info.c.toarray()).ravel() if n else np.zeros(0)
    multiplier = np.array([row[1] for row in info.rows], dtype=float)
    rhs = np.asarray(info.rhs, dtype=float)
    # mixed form: multiplier 0 is an equality, +1 an upper bound, -1 a lower bound
    columns = list(info.columns)
    matrix = info.A.tocsr()
    problem = MatrixProblem(
        cost=cost,
        col_lower=np.array([-inf if v.lb is None else value(v.lb) for v in columns], dtype=float),
        col_upper=np.array([inf if v.ub is None else value(v.ub) for v in columns], dtype=float),
        is_integer=np.array([v.is_integer() for v in columns], dtype=bool),
        start=matrix.indptr, index=matrix.indices, value=matrix.data,
        row_lower=np.where(multiplier <= 0, rhs, -inf),
        row_upper=np.where(multiplier >= 0, rhs, inf),
        offset=float(info.c_offset[0]) if len(info.c_offset) else 0.0,
        maximize=not info.objectives[0].is_minimizing(), name=model.name,
    )
    return CompiledModel(problem=problem, columns=columns)


def solve_pyomo(model: Any, *, solver: Solver,
                config: SolverConfig | None = None) -> SolveResult:
    """Solve the linear Pyomo ``model`` with ``solver``; its values are loaded into the model.

    Values already set on the model's variables are offered as a starting solution
    when ``config.warm_start`` (and the backend takes one). The result's
    ``handoff_seconds`` includes compiling the model and loading the values back.
    """
    config = SolverConfig() if config is None else config
    started = time.perf_counter()
    compiled = from_pyomo(model)
    start = compiled.start_values() if config.warm_start else None
    compiling = time.perf_counter() - started
    result, values = solver.solve(compiled.problem, config, start)
    loading = time.perf_counter()
    if values is not None:
        compiled.load(values)
    loaded = time.perf_counter() - loading
    return attrs.evolve(result, handoff_seconds=result.handoff_seconds + compiling + loaded)


__all__ = ["CompiledModel", "from_pyomo", "solve_pyomo", "to_pyomo"]
