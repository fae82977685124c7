"""A linear Pyomo model as sparse matrices, for backends that take a matrix.

Pyomo's standard-form compiler walks the model once (about 0.3 s for 5,000
binaries, several times faster than a persistent solver interface's hand-off)
and gives ``row_lower <= A x <= row_upper`` over the columns it lists. Pyomo,
NumPy and SciPy are imported inside the functions, never by ``import
autotm_core``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from autotm_core.errors import SolverError


@attrs.frozen(kw_only=True)
class MatrixForm:
    """``min/max cost @ x + offset`` subject to ``row_lower <= A @ x <= row_upper``."""

    columns: Sequence[Any]
    """The Pyomo variables, one per column, in column order."""
    cost: Any
    """Objective coefficients (NumPy array, one per column)."""
    offset: float
    """Constant term of the objective."""
    maximize: bool
    """Whether the objective is maximised."""
    matrix: Any
    """Constraint coefficients (SciPy CSR array, rows by columns)."""
    row_lower: Any
    """Lower bound of each row (``-inf`` when none)."""
    row_upper: Any
    """Upper bound of each row (``+inf`` when none)."""
    col_lower: Any
    """Lower bound of each column (``-inf`` when none)."""
    col_upper: Any
    """Upper bound of each column (``+inf`` when none)."""
    is_integer: Any
    """Boolean array: whether each column is integer (binaries included)."""

    @property
    def n_binaries(self) -> int:
        """Integer columns bounded to [0, 1]."""
        binary = self.is_integer & (self.col_lower >= 0) & (self.col_upper <= 1)
        return int(binary.sum())

    def start_values(self) -> Any:
        """Values already set on the columns (NaN where none), for a warm start."""
        import numpy as np

        return np.array([math.nan if v.value is None else float(v.value) for v in self.columns])

    def load(self, values: Sequence[float]) -> None:
        """Write ``values`` into the Pyomo variables, column by column."""
        for var, value in zip(self.columns, values, strict=True):
            var.set_value(float(value), skip_validation=True)


def to_matrix(model: Any) -> MatrixForm:
    """Compile the linear ``model`` with exactly one active objective into a :class:`MatrixForm`."""
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
            hint="check the capacity limits and pinned tensors that produced it",
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
    row_lower = np.where(multiplier <= 0, rhs, -inf)
    row_upper = np.where(multiplier >= 0, rhs, inf)
    columns = list(info.columns)
    col_lower = np.array([-inf if v.lb is None else value(v.lb) for v in columns], dtype=float)
    col_upper = np.array([inf if v.ub is None else value(v.ub) for v in columns], dtype=float)
    is_integer = np.array([v.is_integer() for v in columns], dtype=bool)
    objective = info.objectives[0]
    return MatrixForm(
        columns=columns,
        cost=cost,
        offset=float(info.c_offset[0]) if len(info.c_offset) else 0.0,
        maximize=not objective.is_minimizing(),
        matrix=info.A.tocsr(),
        row_lower=row_lower,
        row_upper=row_upper,
        col_lower=col_lower,
        col_upper=col_upper,
        is_integer=is_integer,
    )


def count_model(model: Any) -> tuple[int, int, int]:
    """Unfixed variables, unfixed binaries and active constraints of ``model``, cheaply."""
    from pyomo.core import Constraint, Var

    n_variables = n_binaries = 0
    for var in model.component_data_objects(Var, active=True, descend_into=True):
        if not var.fixed:
            n_variables += 1
            n_binaries += var.is_binary()
    n_constraints = sum(
        1 for _ in model.component_data_objects(Constraint, active=True, descend_into=True))
    return n_variables, n_binaries, n_constraints
