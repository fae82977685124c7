"""The solver interface: one problem form, one config, one result, one protocol for every backend.

A formulation writes its model as a :class:`MatrixProblem` (arrays; a pure
function that imports no solver); a :class:`Solver` plugin solves it and returns
the result with one value per column. Each backend declares what it can do in
its :class:`SolverCapabilities`, so callers ask instead of sniffing attributes.
Pyomo models reach the same backends through :mod:`autotm_core.solvers.pyomo`.
Why a solver stopped (:class:`TerminationCondition`) is kept apart from what
kind of solution exists (:class:`SolutionStatus`): a time limit may leave a
feasible plan or none. Backends map their native statuses to these enums
through a table with an ``UNKNOWN`` fallback, and nothing here imports Pyomo or
a native library.
"""

from __future__ import annotations

import contextlib
import enum
import gc
import math
import types
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    import numpy as np

DEFAULT_SOLVER = "highs"
"""Name of the solver plugin used when none is asked for."""


class TerminationCondition(enum.Enum):
    """Why a solver stopped."""

    OPTIMAL = "optimal"
    """It proved the solution optimal (within its default tolerances)."""
    GAP_REACHED = "gap_reached"
    """It stopped because the relative gap fell under ``SolverConfig.relative_gap``."""
    TIME_LIMIT = "time_limit"
    """It ran out of ``SolverConfig.time_limit_seconds``; a feasible solution may exist."""
    ITERATION_LIMIT = "iteration_limit"
    """It hit an iteration, node or solution-count limit set through native options."""
    INFEASIBLE = "infeasible"
    """It proved that no solution satisfies the constraints."""
    UNBOUNDED = "unbounded"
    """It proved that the objective can improve without limit."""
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    """It proved one of the two without saying which (typically from presolve)."""
    INTERRUPTED = "interrupted"
    """The user interrupted it (Ctrl-C); the best solution so far, if any, is kept."""
    ABANDONED = "abandoned"
    """It had not stopped when the caller stopped waiting
    (:attr:`SolverConfig.abandon_after_seconds`: past its time limit, cancelled, in a phase
    that checks neither): it was left to end on its own; the best solution it reported
    before, if any, is kept."""
    ERROR = "error"
    """The solver failed (crash, numerical trouble, bad input); see the log."""
    UNKNOWN = "unknown"
    """The backend reported a status with no mapping here; see the log."""


class SolutionStatus(enum.Enum):
    """What kind of solution a solve left in the model."""

    OPTIMAL = "optimal"
    """A solution proven optimal (within the gap asked for, when it stopped on the gap)."""
    FEASIBLE = "feasible"
    """A solution that satisfies the constraints but is not proven optimal."""
    INFEASIBLE = "infeasible"
    """No solution exists: the model was proven infeasible."""
    NO_SOLUTION = "no_solution"
    """No solution was found (time limit, interruption, error); none was loaded."""


def _non_negative_or_none(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not (isinstance(value, int | float) and value >= 0):
        raise ValueError(f"{attribute.name} must be None or a number >= 0, got {value!r}")


def _positive_int_or_none(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not (isinstance(value, int) and value >= 1):
        raise ValueError(f"{attribute.name} must be None or an integer >= 1, got {value!r}")


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(value or {}))


@attrs.frozen(kw_only=True)
class SolverConfig:
    """How to solve, shared by every backend; nothing about a solve is hard-coded elsewhere."""

    time_limit_seconds: float | None = attrs.field(default=None, validator=_non_negative_or_none)
    """Wall-clock limit of the solve (not of model building); ``None`` for none."""
    relative_gap: float = attrs.field(
        default=1e-2, validator=[attrs.validators.instance_of((int, float)),
                                 attrs.validators.ge(0)]
    )
    """Stop when ``|objective - bound| / |objective|`` falls under this (``0.01`` is 1%)."""
    threads: int | None = attrs.field(default=None, validator=_positive_int_or_none)
    """Threads the solver may use; ``None`` lets it choose."""
    log_to_terminal: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Echo the solver's log to standard output while it runs (Pyomo's ``tee``)."""
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    """Native options passed through to the backend unchanged (they override the above)."""
    warm_start: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Offer the starting values given to :meth:`Solver.solve` as a starting solution,
    when the backend supports it (:attr:`SolverCapabilities.warm_start`)."""
    duals: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Return the row duals of a continuous model in :attr:`SolveResult.row_duals`,
    when the backend gives them (:attr:`SolverCapabilities.duals`)."""
    abandon_after_seconds: float | None = attrs.field(default=None,
                                                      validator=_non_negative_or_none)
    """Wall-clock seconds from the call to :meth:`Solver.solve` (hand-off included) after
    which the caller stops waiting, whatever the solver is doing: a backend that can leave
    a solve behind (:attr:`SolverCapabilities.abandon`) cancels it before, and abandons it
    still running then, with termination ``ABANDONED`` and the best solution it had
    reported; ``None``: wait until it stops. Planning sets it from its deadline and grace
    (:meth:`autotm_core.ilp.search.Budget.abandon_at`)."""


def relative_gap(*, objective: float | None, best_bound: float | None) -> float | None:
    """``|objective - best_bound| / |objective|``, or ``None`` when either is missing.

    Zero when both are equal (including both zero); infinite when the objective
    is zero and the bound is not, as a gap relative to nothing is unbounded.
    """
    if objective is None or best_bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(best_bound)):
        return math.inf
    difference = abs(objective - best_bound)
    if difference == 0:
        return 0.0
    return difference / abs(objective) if objective != 0 else math.inf


def settle_status(
    termination: TerminationCondition, *, has_solution: bool,
    objective: float | None, best_bound: float | None,
) -> tuple[TerminationCondition, SolutionStatus]:
    """The termination and solution status every backend reports for a native outcome.

    An ``OPTIMAL`` stop with a bound still apart from the objective becomes
    ``GAP_REACHED`` (beyond a 1e-6 relative tolerance); the solution is
    ``OPTIMAL`` only after those two stops.
    """
    gap = relative_gap(objective=objective, best_bound=best_bound)
    if termination is TerminationCondition.OPTIMAL and gap is not None and gap > 1e-6:
        termination = TerminationCondition.GAP_REACHED
    if termination is TerminationCondition.INFEASIBLE:
        return termination, SolutionStatus.INFEASIBLE
    if not has_solution:
        return termination, SolutionStatus.NO_SOLUTION
    if termination in (TerminationCondition.OPTIMAL, TerminationCondition.GAP_REACHED):
        return termination, SolutionStatus.OPTIMAL
    return termination, SolutionStatus.FEASIBLE


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@attrs.frozen(kw_only=True)
class SolveResult:
    """What a solve produced; the solution values come with it (see :meth:`Solver.solve`)."""

    solver_name: str
    """Name of the solver plugin that ran (e.g. ``"highs"``)."""
    solver_version: str
    """Version of the native solver, as it reports it (``""`` when unknown)."""
    termination: TerminationCondition = attrs.field(
        validator=attrs.validators.instance_of(TerminationCondition))
    """Why the solver stopped."""
    status: SolutionStatus = attrs.field(validator=attrs.validators.instance_of(SolutionStatus))
    """What kind of solution the solve left."""
    objective: float | None = attrs.field(default=None, converter=_optional_float)
    """Objective value of the solution, in the model's units; ``None`` without one."""
    best_bound: float | None = attrs.field(default=None, converter=_optional_float)
    """Best proven bound on the optimum (a lower bound when minimising); ``None`` if unknown."""
    gap: float | None = attrs.field(init=False)
    """Relative gap between ``objective`` and ``best_bound`` (see :func:`relative_gap`)."""
    build_seconds: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    """Seconds spent building the model; filled by the caller, who built it."""
    handoff_seconds: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    """Seconds spent translating the problem for the solver and reading the solution back."""
    solve_seconds: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    """Seconds the solver itself ran."""
    n_variables: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """Variables in the model handed to the solver."""
    n_binaries: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """Binary variables among them."""
    n_constraints: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    """Constraints (rows) handed to the solver."""
    log: str = ""
    """The solver's log text (empty when the backend keeps none)."""
    row_duals: Any = attrs.field(default=None, repr=False, eq=False)
    """Dual value of each row of a continuous model (NumPy array), when asked for with
    :attr:`SolverConfig.duals` and the backend gives them; ``None`` otherwise. Signs as
    HiGHS's: ``cost - A^T row_duals`` are the reduced costs."""
    message: str = ""
    """The backend's own status words, for a human reading the result."""

    @gap.default
    def _gap_from_objective_and_bound(self) -> float | None:
        return relative_gap(objective=self.objective, best_bound=self.best_bound)

    @property
    def has_solution(self) -> bool:
        """Whether the solve left solution values."""
        return self.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE)

    @property
    def total_seconds(self) -> float:
        """Build, hand-off and solve together."""
        return self.build_seconds + self.handoff_seconds + self.solve_seconds


@attrs.frozen(kw_only=True)
class SolverCapabilities:
    """What a backend can do, declared as its class attribute ``capabilities``."""

    mip: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    """It handles integer columns (every plan needs this)."""
    warm_start: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    """It takes a starting solution (the ``start`` of :meth:`Solver.solve`)."""
    interrupt: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    """Ctrl-C stops it and keeps the best solution found so far."""
    duals: bool = attrs.field(validator=attrs.validators.instance_of(bool))
    """It gives the row duals of a continuous model (:attr:`SolverConfig.duals`)."""
    abandon: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """It returns by :attr:`SolverConfig.abandon_after_seconds`, leaving a solve that has not
    stopped behind (with the best solution it had reported)."""


@attrs.frozen(kw_only=True, eq=False)
class MatrixProblem:
    """``min/max cost @ x + offset`` subject to ``row_lower <= A @ x <= row_upper``, as arrays.

    What every :class:`Solver` takes; ``A`` is in compressed sparse row form
    (``start``, ``index``, ``value``; a column at most once per row, as HiGHS and GLPK
    require) and infinite bounds are ``+-inf``.
    """

    cost: Any
    """Objective coefficients (NumPy float array, one per column)."""
    col_lower: Any
    """Lower bound of each column."""
    col_upper: Any
    """Upper bound of each column."""
    is_integer: Any
    """Boolean array: whether each column is integer."""
    start: Any
    """Row starts of ``A`` in compressed sparse row form (``n_rows + 1`` entries)."""
    index: Any
    """Column of each nonzero."""
    value: Any
    """Coefficient of each nonzero."""
    row_lower: Any
    """Lower bound of each row."""
    row_upper: Any
    """Upper bound of each row."""
    offset: float = 0.0
    """Constant term of the objective."""
    maximize: bool = False
    """Whether the objective is maximised."""
    name: str = "model"
    """Name used in messages."""

    @property
    def n_columns(self) -> int:
        """Columns (variables)."""
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        """Rows (constraints)."""
        return len(self.row_lower)

    @property
    def n_nonzeros(self) -> int:
        """Nonzero coefficients of ``A``."""
        return int(self.start[-1]) if len(self.start) else 0

    @property
    def n_binaries(self) -> int:
        """Integer columns bounded to [0, 1]."""
        binary = self.is_integer & (self.col_lower >= 0) & (self.col_upper <= 1)
        return int(binary.sum())


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector in the block (as Pyomo's ``PauseGC`` does).

    Building a model allocates hundreds of thousands of small containers that live on
    (lists, tuples, Pyomo components), and each allocation burst triggers a collection
    that walks them all again; they form no cycles, so the collections find nothing.
    At 5,000 kernels they took about half of ``build_program`` and four fifths of
    ``to_pyomo``. Nested blocks keep the outermost block's state.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def native_result(
    problem: MatrixProblem, *, solver_name: str, solver_version: str,
    termination: TerminationCondition, has_solution: bool, objective: float | None,
    best_bound: float | None, log: str, message: str,
) -> SolveResult:
    """The :class:`SolveResult` of a backend's native outcome on ``problem``: the status
    settled as every backend settles it (:func:`settle_status`), the problem's size."""
    termination, status = settle_status(termination, has_solution=has_solution,
                                        objective=objective, best_bound=best_bound)
    return SolveResult(
        solver_name=solver_name, solver_version=solver_version, termination=termination,
        status=status, objective=objective, best_bound=best_bound,
        n_variables=problem.n_columns, n_binaries=problem.n_binaries,
        n_constraints=problem.n_rows, log=log, message=message)


@runtime_checkable
class Solver(Protocol):
    """An ILP backend, found through the ``autotm_core.solvers`` entry-point group."""

    @property
    def name(self) -> str:
        """Short name, the entry point's (e.g. ``"highs"``)."""

    @property
    def description(self) -> str:
        """One line for ``python -m autotm_core plugins``."""

    @property
    def capabilities(self) -> SolverCapabilities:
        """What it can do (a class attribute of the backend)."""

    def unavailable_reason(self) -> str | None:
        """Why it cannot run here, naming what to install; ``None`` when it can.

        Cheap: it looks for modules and programs without importing or running them.
        """

    def solve(self, problem: MatrixProblem, config: SolverConfig | None = None,
              start: np.ndarray | None = None) -> tuple[SolveResult, np.ndarray | None]:
        """Solve ``problem`` under ``config`` (defaults when ``None``).

        Returns the result and the solution's value of every column (``None`` without
        a solution). ``start`` (one value per column, NaN where unknown) is offered as
        a starting solution when ``config.warm_start`` and the backend takes one.
        Returns a result for every outcome the solver reports (optimal, time limit,
        infeasible, interrupted, ...); raises :class:`~autotm_core.errors.SolverError`
        only when it cannot run at all or the problem is out of its reach.
        """
