"""The solver interface records: config validation, gap, result fields."""

from __future__ import annotations

import gc
import math

import attrs
import numpy as np
import pytest

from autotm_core.solvers import (
    MatrixProblem,
    SolutionStatus,
    SolverCapabilities,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    relative_gap,
)
from autotm_core.solvers.base import paused_gc


def test_every_enum_member_has_a_docstring() -> None:
    import ast
    import inspect

    from autotm_core.solvers import base

    tree = ast.parse(inspect.getsource(base))
    for cls in (TerminationCondition, SolutionStatus):
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
        documented = {
            stmt.targets[0].id
            for stmt, following in zip(node.body, node.body[1:], strict=False)
            if isinstance(stmt, ast.Assign)
            and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        }
        assert documented == set(cls.__members__)


@pytest.mark.parametrize("bad", [
    {"time_limit_seconds": -1.0}, {"relative_gap": -0.1}, {"threads": 0}, {"threads": 1.5},
    {"log_to_terminal": "yes"}, {"duals": 1},
])
def test_config_rejects_bad_values(bad: dict) -> None:
    with pytest.raises((ValueError, TypeError)):
        SolverConfig(**bad)


def test_config_options_are_read_only_copies() -> None:
    options = {"presolve": "on"}
    config = SolverConfig(options=options)
    options["presolve"] = "off"
    assert config.options["presolve"] == "on"
    with pytest.raises(TypeError):
        config.options["x"] = 1  # type: ignore[index]


@pytest.mark.parametrize(("objective", "bound", "gap"), [
    (100.0, 90.0, 0.1), (-100.0, -110.0, 0.1), (5.0, 5.0, 0.0), (0.0, 0.0, 0.0),
    (0.0, -1.0, math.inf), (None, 1.0, None), (1.0, None, None),
])
def test_relative_gap(objective: float | None, bound: float | None, gap: float | None) -> None:
    assert relative_gap(objective=objective, best_bound=bound) == pytest.approx(gap)


def test_result_gap_follows_objective_and_bound() -> None:
    result = SolveResult(solver_name="x", solver_version="1",
                         termination=TerminationCondition.TIME_LIMIT,
                         status=SolutionStatus.FEASIBLE, objective=200, best_bound=150)
    assert result.gap == pytest.approx(0.25)
    assert result.has_solution
    better = attrs.evolve(result, objective=160, build_seconds=1.5, solve_seconds=2.0)
    assert better.gap == pytest.approx(10 / 160)
    assert better.total_seconds == pytest.approx(3.5)
    empty = SolveResult(solver_name="x", solver_version="1",
                        termination=TerminationCondition.TIME_LIMIT,
                        status=SolutionStatus.NO_SOLUTION)
    assert empty.gap is None and not empty.has_solution


@pytest.mark.parametrize(("native", "has_solution", "objective", "bound", "expected"), [
    (TerminationCondition.OPTIMAL, True, 10.0, 10.0,
     (TerminationCondition.OPTIMAL, SolutionStatus.OPTIMAL)),
    (TerminationCondition.OPTIMAL, True, 10.0, 9.95,
     (TerminationCondition.GAP_REACHED, SolutionStatus.OPTIMAL)),
    (TerminationCondition.TIME_LIMIT, True, 10.0, 5.0,
     (TerminationCondition.TIME_LIMIT, SolutionStatus.FEASIBLE)),
    (TerminationCondition.TIME_LIMIT, False, None, 5.0,
     (TerminationCondition.TIME_LIMIT, SolutionStatus.NO_SOLUTION)),
    (TerminationCondition.INFEASIBLE, False, None, None,
     (TerminationCondition.INFEASIBLE, SolutionStatus.INFEASIBLE)),
    (TerminationCondition.INTERRUPTED, True, 3.0, None,
     (TerminationCondition.INTERRUPTED, SolutionStatus.FEASIBLE)),
])
def test_settle_status(native, has_solution, objective, bound, expected) -> None:
    from autotm_core.solvers.base import settle_status

    assert settle_status(native, has_solution=has_solution, objective=objective,
                         best_bound=bound) == expected


def test_config_asks_for_no_duals_by_default() -> None:
    assert SolverConfig().duals is False and SolverConfig(duals=True).duals is True


def test_capabilities_are_checked_booleans() -> None:
    capabilities = SolverCapabilities(mip=True, warm_start=False, interrupt=False, duals=True)
    assert attrs.asdict(capabilities) == {"mip": True, "warm_start": False, "interrupt": False,
                                          "duals": True, "abandon": False}
    with pytest.raises(TypeError):
        SolverCapabilities(mip=1, warm_start=False, interrupt=False, duals=False)
    with pytest.raises(TypeError):
        SolverCapabilities(mip=True, warm_start=False, interrupt=False, duals=False, abandon=1)


def test_config_waits_for_the_solver_unless_told_when_to_abandon_it() -> None:
    assert SolverConfig().abandon_after_seconds is None
    assert SolverConfig(abandon_after_seconds=2.5).abandon_after_seconds == 2.5
    with pytest.raises(ValueError):
        SolverConfig(abandon_after_seconds=-1.0)


def test_matrix_problem_counts() -> None:
    problem = MatrixProblem(
        cost=np.zeros(3), col_lower=np.array([0.0, 0.0, -1.0]), col_upper=np.array([1.0, 5, 1]),
        is_integer=np.array([True, True, True]), start=np.array([0, 2, 3]),
        index=np.array([0, 1, 2]), value=np.ones(3), row_lower=np.zeros(2),
        row_upper=np.ones(2))
    assert (problem.n_columns, problem.n_rows, problem.n_nonzeros, problem.n_binaries) == (
        3, 2, 3, 1)


def test_paused_gc_restores_the_collector_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves the outer one's pause alone
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()
