"""Each built-in solver on small MILPs with known optima, limits and failures."""

from __future__ import annotations

import signal
import threading

import pyomo.environ as pyo
import pytest

from autotm_core.errors import SolverError
from autotm_core.plugins import get_solver
from autotm_core.solvers import SolutionStatus, SolverConfig, TerminationCondition

from .models import (
    assignment,
    assignment_optimum,
    facility_location,
    infeasible,
    knapsack,
    knapsack_optimum,
)

SOLVERS = [pytest.param(name, marks=getattr(pytest.mark, name))
           for name in ("highs", "cbc", "glpk")]
EXACT = SolverConfig(relative_gap=0.0)


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize(("build", "optimum"), [(knapsack, knapsack_optimum),
                                                 (assignment, assignment_optimum)])
def test_solvers_agree_on_the_optimum(name: str, build, optimum) -> None:
    model = build()
    result = get_solver(name).solve(model, EXACT)
    assert result.termination is TerminationCondition.OPTIMAL
    assert result.status is SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(optimum())
    assert pyo.value(next(model.component_data_objects(pyo.Objective))) == pytest.approx(
        optimum())
    assert result.gap == pytest.approx(0.0, abs=1e-9)
    assert result.solver_name == name and result.solver_version
    assert result.n_binaries == result.n_variables > 0 and result.n_constraints > 0
    assert result.log


@pytest.mark.parametrize("name", SOLVERS)
def test_assignment_solution_is_loaded_into_the_model(name: str) -> None:
    model = assignment()
    get_solver(name).solve(model, EXACT)
    chosen = [[round(model.x[i, j].value) for j in range(4)] for i in range(4)]
    assert all(sum(row) == 1 for row in chosen)
    assert all(sum(chosen[i][j] for i in range(4)) == 1 for j in range(4))


@pytest.mark.parametrize("name", SOLVERS)
def test_infeasible_model_is_reported_not_raised(name: str) -> None:
    result = get_solver(name).solve(infeasible(), EXACT)
    assert result.termination in (TerminationCondition.INFEASIBLE,
                                  TerminationCondition.INFEASIBLE_OR_UNBOUNDED)
    assert not result.has_solution and result.objective is None


@pytest.mark.parametrize("name", SOLVERS)
def test_tiny_time_limit_returns_time_limit(name: str) -> None:
    model = facility_location(30, 60)
    result = get_solver(name).solve(model, SolverConfig(time_limit_seconds=0.2, relative_gap=0))
    assert result.termination is TerminationCondition.TIME_LIMIT
    assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.NO_SOLUTION)
    if result.has_solution:
        assert result.objective is not None
        assert result.objective == pytest.approx(pyo.value(model.obj))


@pytest.mark.highs
def test_highs_ctrl_c_keeps_the_best_solution_or_says_none_was_found() -> None:
    model = facility_location(40, 80)
    # a shell that started us in the background may have left SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(2.0, signal.raise_signal, args=(signal.SIGINT,))
    timer.start()
    try:
        result = get_solver("highs").solve(model, SolverConfig(time_limit_seconds=60,
                                                                relative_gap=0))
    except SolverError as exc:
        assert "interrupted" in str(exc)
    else:
        assert result.termination is TerminationCondition.INTERRUPTED
        assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.OPTIMAL)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


@pytest.mark.highs
@pytest.mark.parametrize("warm_start", [True, False])
def test_highs_warm_start_uses_values_on_the_model(warm_start: bool) -> None:
    model = assignment()
    for i in range(4):
        for j in range(4):
            model.x[i, j].set_value(1.0 if i == j else 0.0)  # feasible, cost 10 + 28
    result = get_solver("highs").solve(model, SolverConfig(warm_start=warm_start))
    assert ("MIP start solution is feasible: objective value is 28" in result.log) is warm_start
    assert result.objective == pytest.approx(assignment_optimum())


@pytest.mark.glpk
def test_glpk_refuses_models_above_its_size_limit() -> None:
    from autotm_core.solvers.glpk import GlpkSolver

    with pytest.raises(SolverError, match="16 binaries, more than GLPK's limit of 10") as info:
        GlpkSolver(max_binaries=10).solve(assignment())
    assert "highs" in info.value.hint


@pytest.mark.parametrize("name", [p for p in SOLVERS if p.values[0] != "cbc"])
def test_unknown_native_option_is_a_clear_error(name: str) -> None:
    """HiGHS and GLPK check option names; CBC only warns in its log."""
    with pytest.raises(SolverError, match="no_such_option"):
        get_solver(name).solve(knapsack(), SolverConfig(options={"no_such_option": 1}))
