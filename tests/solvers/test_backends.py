"""Each built-in solver on small MILPs with known optima, limits and failures: Pyomo models
through ``solve_pyomo``, and the matrix form directly."""

from __future__ import annotations

import signal
import threading

import attrs
import numpy as np
import pyomo.environ as pyo
import pytest

from autotm_core.errors import SolverError
from autotm_core.plugins import get_solver
from autotm_core.solvers import (
    MatrixProblem,
    SolutionStatus,
    SolverConfig,
    TerminationCondition,
)
from autotm_core.solvers.pyomo import solve_pyomo

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


def solve(name: str, model, config: SolverConfig | None = None):
    return solve_pyomo(model, solver=get_solver(name), config=config)


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize(("build", "optimum"), [(knapsack, knapsack_optimum),
                                                 (assignment, assignment_optimum)])
def test_solvers_agree_on_the_optimum(name: str, build, optimum) -> None:
    model = build()
    result = solve(name, model, EXACT)
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
    solve(name, model, EXACT)
    chosen = [[round(model.x[i, j].value) for j in range(4)] for i in range(4)]
    assert all(sum(row) == 1 for row in chosen)
    assert all(sum(chosen[i][j] for i in range(4)) == 1 for j in range(4))


@pytest.mark.parametrize("name", SOLVERS)
def test_infeasible_model_is_reported_not_raised(name: str) -> None:
    result = solve(name, infeasible(), EXACT)
    assert result.termination in (TerminationCondition.INFEASIBLE,
                                  TerminationCondition.INFEASIBLE_OR_UNBOUNDED)
    assert not result.has_solution and result.objective is None


@pytest.mark.parametrize("name", SOLVERS)
def test_tiny_time_limit_returns_time_limit(name: str) -> None:
    model = facility_location(30, 60)
    result = solve(name, model, SolverConfig(time_limit_seconds=0.2, relative_gap=0))
    assert result.termination is TerminationCondition.TIME_LIMIT
    assert result.status in (SolutionStatus.FEASIBLE, SolutionStatus.NO_SOLUTION)
    if result.has_solution:
        assert result.objective is not None
        assert result.objective == pytest.approx(pyo.value(model.obj))


@pytest.mark.slow
@pytest.mark.highs
def test_highs_ctrl_c_keeps_the_best_solution_or_says_none_was_found() -> None:
    model = facility_location(40, 80)
    # a shell that started us in the background may have left SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(2.0, signal.raise_signal, args=(signal.SIGINT,))
    timer.start()
    try:
        result = solve("highs", model, SolverConfig(time_limit_seconds=60, relative_gap=0))
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
    result = solve("highs", model, SolverConfig(warm_start=warm_start))
    assert ("MIP start solution is feasible: objective value is 28" in result.log) is warm_start
    assert result.objective == pytest.approx(assignment_optimum())


@pytest.mark.glpk
def test_glpk_refuses_models_above_its_size_limit() -> None:
    from autotm_core.solvers.glpk import GlpkSolver

    with pytest.raises(SolverError, match="16 binaries, more than GLPK's limit of 10") as info:
        solve_pyomo(assignment(), solver=GlpkSolver(max_binaries=10))
    assert "highs" in info.value.hint


@pytest.mark.parametrize("name", [p for p in SOLVERS if p.values[0] != "cbc"])
def test_unknown_native_option_is_a_clear_error(name: str) -> None:
    """HiGHS and GLPK check option names; CBC only warns in its log."""
    with pytest.raises(SolverError, match="no_such_option"):
        solve(name, knapsack(), SolverConfig(options={"no_such_option": 1}))


def small_problem(**changes) -> MatrixProblem:
    """``max 5a + 4b + 3c + 1`` s.t. ``2a + 3b + c <= 5``, ``a + b >= 1``, binaries: 10 at
    (a, b, c) = (1, 1, 0); a third row is free."""
    problem = MatrixProblem(
        cost=np.array([5.0, 4.0, 3.0]), col_lower=np.zeros(3), col_upper=np.ones(3),
        is_integer=np.ones(3, dtype=bool), start=np.array([0, 3, 5, 6]),
        index=np.array([1, 0, 2, 0, 1, 2]), value=np.array([3.0, 2.0, 1.0, 1.0, 1.0, 1.0]),
        row_lower=np.array([-np.inf, 1.0, -np.inf]), row_upper=np.array([5.0, np.inf, np.inf]),
        offset=1.0, maximize=True, name="small")
    return attrs.evolve(problem, **changes)


@pytest.mark.parametrize("name", SOLVERS)
def test_matrix_problem_is_solved_directly(name: str) -> None:
    result, values = get_solver(name).solve(small_problem(), EXACT)
    assert result.termination is TerminationCondition.OPTIMAL
    assert result.objective == pytest.approx(10.0)
    assert values is not None and np.round(values).tolist() == [1.0, 1.0, 0.0]
    assert (result.n_variables, result.n_binaries, result.n_constraints) == (3, 3, 3)
    result, values = get_solver(name).solve(small_problem(row_lower=np.array([-np.inf, 3.0,
                                                                              -np.inf])), EXACT)
    assert values is None and not result.has_solution


@pytest.mark.highs
def test_highs_gives_row_duals_of_a_continuous_problem_when_asked() -> None:
    problem = small_problem(is_integer=np.zeros(3, dtype=bool))
    highs = get_solver("highs")
    result, values = highs.solve(problem, SolverConfig(duals=True))
    assert values is not None and values.tolist() == pytest.approx([1.0, 2 / 3, 1.0])
    assert result.objective == pytest.approx(1 + 5 + 4 * 2 / 3 + 3)
    assert result.row_duals is not None and result.row_duals.shape == (3,)
    assert result.row_duals[1] == pytest.approx(0.0)  # a + b >= 1 is slack
    assert highs.solve(problem, SolverConfig())[0].row_duals is None
    assert highs.solve(small_problem(), SolverConfig(duals=True))[0].row_duals is None


@pytest.mark.parametrize("name", SOLVERS)
def test_capabilities_are_declared_on_the_class(name: str) -> None:
    solver = get_solver(name)
    assert type(solver).capabilities is solver.capabilities and solver.capabilities.mip
    assert solver.capabilities.duals is (name == "highs")
    assert solver.capabilities.interrupt is (name == "highs")
    assert solver.capabilities.warm_start is (name != "glpk")


def test_ctrl_c_while_pyomo_gives_the_streams_back_is_an_interrupt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pyomo's capture_output reports a Ctrl-C on its way out as a RuntimeError naming it
    (seen as an 'internal error' from sweep in the suite); creating HiGHS re-raises it as
    KeyboardInterrupt, and any other error as it was."""
    import contextlib

    import pyomo.common.tee

    from autotm_core.solvers import highs

    def failing(message: str):
        @contextlib.contextmanager
        def capture_output(**_: object):
            yield
            raise RuntimeError(message)
        return capture_output

    monkeypatch.setattr(pyomo.common.tee, "capture_output",
                        failing("KeyboardInterrupt:  (4: <TeeStream>@7f50)"))
    with pytest.raises(KeyboardInterrupt):
        highs._new_highs()
    monkeypatch.setattr(pyomo.common.tee, "capture_output", failing("deadlock"))
    with pytest.raises(RuntimeError, match="deadlock"):
        highs._new_highs()
