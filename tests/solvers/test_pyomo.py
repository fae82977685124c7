"""The Pyomo bridge: a matrix to a model and back, and a user's own model solved by any backend."""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo
import pytest

from autotm_core.errors import SolverError
from autotm_core.plugins import get_solver
from autotm_core.solvers import MatrixProblem, SolverConfig, TerminationCondition
from autotm_core.solvers.pyomo import from_pyomo, solve_pyomo, to_pyomo

from .models import assignment, assignment_optimum, knapsack, knapsack_optimum

SOLVERS = [pytest.param(name, marks=getattr(pytest.mark, name))
           for name in ("highs", "cbc", "glpk")]


def mixed_problem() -> MatrixProblem:
    """Every kind of column (binary, general integer, real; free, bounded) and row."""
    return MatrixProblem(
        cost=np.array([2.0, 0.0, -1.0, 0.5]), col_lower=np.array([0.0, -3.0, -math.inf, 0.0]),
        col_upper=np.array([1.0, 7.0, 5.0, math.inf]),
        is_integer=np.array([True, True, False, False]), start=np.array([0, 2, 4, 5, 7]),
        index=np.array([0, 1, 2, 3, 3, 0, 2]), value=np.array([1.0, -2.5, 3.0, 1.0, 1.0, 2.0,
                                                                  1.0]),
        row_lower=np.array([1.0, -4.0, -math.inf, -1.0]),
        row_upper=np.array([1.0, math.inf, math.inf, 2.0]), offset=3.0, maximize=True,
        name="mixed")


def test_to_pyomo_then_from_pyomo_gives_the_problem_back() -> None:
    problem = mixed_problem()
    model = to_pyomo(problem)
    assert model.name == "mixed" and len(model.x) == 4
    assert [v.domain.name for v in model.x.values()] == ["Binary", "Integers", "Reals", "Reals"]
    assert [(v.lb, v.ub) for v in model.x.values()] == [(0, 1), (-3, 7), (None, 5), (0, None)]
    assert list(model.rows) == [0, 1, 3]  # row 2 is free on both sides: left out
    assert model.objective.is_minimizing() is False
    compiled = from_pyomo(model)
    back = compiled.problem
    assert [v.index() for v in compiled.columns] == [0, 1, 2, 3]
    assert back.maximize and back.offset == 3.0 and back.name == "mixed"
    assert back.cost.tolist() == problem.cost.tolist()
    assert back.is_integer.tolist() == problem.is_integer.tolist()
    assert back.col_lower.tolist() == problem.col_lower.tolist()
    assert back.col_upper.tolist() == problem.col_upper.tolist()
    # Pyomo's mixed standard form splits the ranged row 3 into its upper and lower sides
    assert np.array_equal(dense_rows(back), dense_rows(problem)[[0, 1, 3, 3]])
    assert back.row_lower.tolist() == [1.0, -4.0, -math.inf, -1.0]
    assert back.row_upper.tolist() == [1.0, math.inf, 2.0, math.inf]


def dense_rows(problem: MatrixProblem) -> np.ndarray:
    out = np.zeros((problem.n_rows, problem.n_columns))
    for r in range(problem.n_rows):
        for k in range(problem.start[r], problem.start[r + 1]):
            out[r, problem.index[k]] += problem.value[k]
    return out


def test_start_values_and_load_round_trip() -> None:
    model = knapsack()
    compiled = from_pyomo(model)
    assert np.isnan(compiled.start_values()).all()
    compiled.load([1.0, 0.0, 1.0, 0.0, 1.0])
    assert [model.take[i].value for i in range(5)] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert compiled.start_values().tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("name", SOLVERS)
def test_solve_pyomo_loads_the_solution_into_a_users_model(name: str) -> None:
    model = knapsack()
    model.extra = pyo.Constraint(expr=model.take[1] == 0)  # a user's own row
    result = solve_pyomo(model, solver=get_solver(name), config=SolverConfig(relative_gap=0))
    assert result.termination is TerminationCondition.OPTIMAL
    assert model.take[1].value == pytest.approx(0.0)
    assert pyo.value(model.value) == pytest.approx(result.objective)
    assert result.objective < knapsack_optimum()  # the extra row binds


@pytest.mark.highs
def test_solve_pyomo_offers_the_models_values_as_a_start() -> None:
    model = assignment()
    for i in range(4):
        for j in range(4):
            model.x[i, j].set_value(1.0 if i == j else 0.0)
    result = solve_pyomo(model, solver=get_solver("highs"))
    assert "MIP start solution is feasible" in result.log
    assert result.objective == pytest.approx(assignment_optimum())


def test_nonlinear_or_objectiveless_models_are_clear_errors() -> None:
    model = pyo.ConcreteModel(name="square")
    model.x = pyo.Var(bounds=(0, 1))
    model.obj = pyo.Objective(expr=model.x * model.x)
    with pytest.raises(SolverError, match="cannot be written as a linear program"):
        from_pyomo(model)
    model.obj.deactivate()
    with pytest.raises(SolverError, match="0 active objectives, expected 1") as info:
        from_pyomo(model)
    assert info.value.hint
