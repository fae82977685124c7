"""The formulation's linear program in matrix form, and its hand-over to the solvers.

The formulation writes rows here (flat typed arrays, no Pyomo objects), which keeps
model generation cheap and testable; :func:`to_matrix_problem` turns them into
the arrays of a :class:`~autotm_core.solvers.MatrixProblem`, which every solver
backend takes (and :func:`~autotm_core.solvers.pyomo.to_pyomo` makes a Pyomo
model of).
"""

from __future__ import annotations

import array
import math
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import numpy as np

from autotm_core.solvers.base import MatrixProblem


@attrs.define(eq=False)
class Rows:
    """Every row's variables and coefficients, one after the other in flat arrays: 12 bytes
    a nonzero (a list of ints and one of floats per row took about five times as much:
    building chain:20000's synchronous model peaked at 687 MiB, now 550)."""

    starts: array.array = attrs.field(factory=lambda: array.array("q", [0]))
    """Where each row's entries begin (one more entry: where the last ends)."""
    cols: array.array = attrs.field(factory=lambda: array.array("i"))
    """The variable of each entry."""
    coefs: array.array = attrs.field(factory=lambda: array.array("d"))
    """The coefficient of each entry."""

    def append(self, cols: Sequence[int], coefs: Sequence[float]) -> None:
        """Add a row."""
        self.cols.extend(cols)
        self.coefs.extend(coefs)
        self.starts.append(len(self.cols))


class _RowView(Sequence):
    """Each row's variables (or coefficients) as a list, read from :class:`Rows`."""

    def __init__(self, rows: Rows, entries: array.array) -> None:
        self._rows, self._entries = rows, entries

    def __len__(self) -> int:
        return len(self._rows.starts) - 1

    def __getitem__(self, row: Any) -> Any:
        if isinstance(row, slice):
            return [self[r] for r in range(*row.indices(len(self)))]
        starts = self._rows.starts
        return self._entries[starts[row]:starts[row + 1]].tolist()

    def __iter__(self) -> Iterator[list]:
        return (self[r] for r in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other)  # type: ignore[call-overload]

    __hash__ = None  # type: ignore[assignment]


@attrs.define
class LinearProgram:
    """Minimise ``objective . x`` subject to ``row_lb <= A x <= row_ub`` and variable bounds."""

    var_lb: list[float] = attrs.field(factory=list)
    """Lower bound of each variable."""
    var_ub: list[float] = attrs.field(factory=list)
    """Upper bound of each variable (``math.inf`` when none)."""
    var_binary: list[bool] = attrs.field(factory=list)
    """Whether each variable is binary."""
    objective: dict[int, float] = attrs.field(factory=dict)
    """Objective coefficient of each variable that has one."""
    rows: Rows = attrs.field(factory=Rows)
    """Variables and coefficients of each row."""
    row_lb: list[float] = attrs.field(factory=list)
    """Lower bound of each row (``-math.inf`` when none)."""
    row_ub: list[float] = attrs.field(factory=list)
    """Upper bound of each row (``math.inf`` when none)."""

    @property
    def row_cols(self) -> Sequence[list[int]]:
        """Variables of each row."""
        return _RowView(self.rows, self.rows.cols)

    @property
    def row_coefs(self) -> Sequence[list[float]]:
        """Coefficients of each row, aligned with :attr:`row_cols`."""
        return _RowView(self.rows, self.rows.coefs)

    @property
    def n_vars(self) -> int:
        """Number of variables."""
        return len(self.var_lb)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return len(self.row_lb)

    @property
    def n_binaries(self) -> int:
        """Number of binary variables."""
        return sum(self.var_binary)

    @property
    def n_nonzeros(self) -> int:
        """Nonzero coefficients in the rows."""
        return len(self.rows.cols)

    def _objective_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.objective)
        return (np.fromiter(self.objective.keys(), dtype=np.int64, count=n),
                np.fromiter(self.objective.values(), dtype=np.float64, count=n))

    def cost_vector(self) -> np.ndarray:
        """The objective's coefficient of every variable (0 where it has none)."""
        cost = np.zeros(self.n_vars)
        columns, coefficients = self._objective_arrays()
        cost[columns] = coefficients
        return cost

    def objective_value(self, values: np.ndarray) -> float:
        """``objective . values``, over the variables with a cost only (a partial start's
        unknown values, NaN, do not count where those have no cost)."""
        columns, coefficients = self._objective_arrays()
        return float(coefficients @ np.asarray(values, dtype=np.float64)[columns])

    def add_var(self, *, lb: float = 0.0, ub: float = math.inf, binary: bool = False,
                cost: float = 0.0) -> int:
        """A new variable; returns its position."""
        self.var_lb.append(lb)
        self.var_ub.append(1.0 if binary else ub)
        self.var_binary.append(binary)
        index = len(self.var_lb) - 1
        if cost:
            self.objective[index] = self.objective.get(index, 0.0) + cost
        return index

    def add_row(self, cols: list[int], coefs: list[float], *, lb: float = -math.inf,
                ub: float = math.inf) -> int:
        """A new row ``lb <= sum coefs * x[cols] <= ub``; returns its position."""
        self.rows.append(cols, coefs)
        self.row_lb.append(lb)
        self.row_ub.append(ub)
        return len(self.row_lb) - 1

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows in compressed sparse row form: ``(start, column, coefficient)`` arrays."""
        rows = self.rows
        return (np.frombuffer(rows.starts, dtype=np.int64).copy(),
                np.frombuffer(rows.cols, dtype=np.int32).copy(),
                np.frombuffer(rows.coefs, dtype=np.float64).copy())

    def violations(self, values: np.ndarray, *, tolerance: float) -> list[int]:
        """Rows (then ``n_rows + j`` for variable ``j``'s bounds) that ``values`` break."""
        start, index, value = self.csr()
        rows_of = np.repeat(np.arange(self.n_rows), np.diff(start))
        activity = np.bincount(rows_of, weights=value * values[index], minlength=self.n_rows)
        rows = np.flatnonzero((activity < np.asarray(self.row_lb) - tolerance)
                              | (activity > np.asarray(self.row_ub) + tolerance))
        binary = np.asarray(self.var_binary, dtype=bool)
        columns = np.flatnonzero((values < np.asarray(self.var_lb) - tolerance)
                                 | (values > np.asarray(self.var_ub) + tolerance)
                                 | (binary & (np.abs(values - np.round(values)) > tolerance)))
        return rows.tolist() + (columns + self.n_rows).tolist()


def to_matrix_problem(lp: LinearProgram, *, name: str = "autotm") -> MatrixProblem:
    """``lp`` as a :class:`~autotm_core.solvers.MatrixProblem` (row-wise arrays)."""
    start, index, value = lp.csr()
    return MatrixProblem(
        cost=lp.cost_vector(), col_lower=np.asarray(lp.var_lb, dtype=np.float64),
        col_upper=np.asarray(lp.var_ub, dtype=np.float64),
        is_integer=np.asarray(lp.var_binary, dtype=bool), start=start, index=index, value=value,
        row_lower=np.asarray(lp.row_lb, dtype=np.float64),
        row_upper=np.asarray(lp.row_ub, dtype=np.float64), name=name,
    )
