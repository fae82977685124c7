"""The program's matrix form, and the Pyomo model made from it (``build_model``), have
exactly the rows, bounds and objective of the program."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pyomo.repn import generate_standard_repn

from autotm_core.costs import roofline_costs
from autotm_core.ilp.formulation import build_model, build_program
from autotm_core.ilp.lp import LinearProgram, to_matrix_problem
from autotm_core.ilp.options import FormulationOptions
from autotm_core.solvers.pyomo import to_pyomo

from .test_optimum import MiB, system_with, tiny_graph


def finite(bound: float) -> float | None:
    return None if math.isinf(bound) else bound


def assert_same(model, lp: LinearProgram) -> None:
    """``model`` has ``lp``'s variables, rows (in order, term by term) and objective."""
    assert len(model.x) == lp.n_vars
    for j, var in model.x.items():
        assert var.is_binary() == lp.var_binary[j], j
        assert (var.lb, var.ub) == (finite(lp.var_lb[j]), finite(lp.var_ub[j])), j
    kept = [r for r in range(lp.n_rows) if (lp.row_lb[r], lp.row_ub[r]) != (-math.inf, math.inf)]
    assert list(model.rows.keys()) == kept
    for r in kept:
        row = model.rows[r]
        repn = generate_standard_repn(row.body, compute_values=False)
        assert repn.is_linear() and repn.constant == 0, r
        assert [v.index() for v in repn.linear_vars] == lp.row_cols[r], r
        assert list(repn.linear_coefs) == lp.row_coefs[r], r
        assert (row.lb, row.ub) == (finite(lp.row_lb[r]), finite(lp.row_ub[r])), r
        assert row.equality == (lp.row_lb[r] == lp.row_ub[r]), r
    repn = generate_standard_repn(model.objective.expr, compute_values=False)
    assert repn.is_linear() and repn.constant == 0
    got = {v.index(): c for v, c in zip(repn.linear_vars, repn.linear_coefs, strict=True)}
    assert got == lp.objective
    assert model.objective.is_minimizing()


@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
def test_pyomo_model_matches_program(formulation):
    graph, system = tiny_graph(), system_with(10 * MiB)
    index = build_program(graph, roofline_costs(graph, system), system,
                          options=FormulationOptions(formulation=formulation))
    assert index.lp.n_rows and index.lp.n_binaries
    assert_same(to_pyomo(to_matrix_problem(index.lp)), index.lp)
    model, built = build_model(graph, roofline_costs(graph, system), system,
                               options=FormulationOptions(formulation=formulation))
    assert_same(model, built.lp)
    assert built.lp.row_cols == index.lp.row_cols and built.lp.var_ub == index.lp.var_ub


def test_every_kind_of_row_and_bound():
    lp = LinearProgram()
    a = lp.add_var(binary=True, cost=2.0)
    b = lp.add_var(lb=-math.inf, ub=5.0, cost=-1.0)
    c = lp.add_var(lb=-3.0)
    lp.add_row([a, b], [1.0, -2.5], lb=1.0, ub=1.0)
    lp.add_row([b, c], [3.0, 1.0], lb=-4.0)
    lp.add_row([a, c], [-1.0, 0.5], ub=7.0)
    lp.add_row([a, b, c], [1.0, 1.0, 1.0], lb=-1.0, ub=2.0)
    lp.add_row([c], [1.0])  # free on both sides: constrains nothing, left out
    model = to_pyomo(to_matrix_problem(lp))
    assert_same(model, lp)
    assert 4 not in model.rows


def test_matrix_problem_has_the_programs_arrays():
    lp = LinearProgram()
    a = lp.add_var(binary=True, cost=2.0)
    b = lp.add_var(lb=-math.inf, ub=5.0)
    lp.add_row([a, b], [1.0, -2.5], lb=1.0, ub=1.0)
    lp.add_row([b], [3.0], lb=-4.0)
    problem = to_matrix_problem(lp, name="tiny")
    assert problem.name == "tiny" and (problem.n_rows, problem.n_columns) == (2, 2)
    assert problem.cost.tolist() == [2.0, 0.0] and problem.is_integer.tolist() == [True, False]
    assert problem.start.tolist() == [0, 2, 3] and problem.index.tolist() == [0, 1, 1]
    assert problem.value.tolist() == [1.0, -2.5, 3.0] and problem.n_nonzeros == 3
    assert problem.row_upper.tolist() == [1.0, math.inf] and problem.n_binaries == 1
    values = np.array([1.0, 0.0])
    assert lp.violations(values, tolerance=1e-9) == []
    assert lp.violations(np.array([0.5, 0.0]), tolerance=1e-9) == [0, 2]


def test_capacity_rows_count_in_units_that_keep_limits_under_2_to_the_25():
    """GPT-2 at batch 256 holds 98 GiB of HBM at 1:1: counted in bytes (no pages) the limit
    was 1e11, and HiGHS called a plan optimal in its presolve that the same model beat by
    23%; in units of 4 KiB it is 2.6e7, and tensor sizes stay whole pages of the options.
    Smaller limits keep their units, so their models do not change."""
    from autotm_core.ilp.formulation import (
        MAX_OCCUPANCY_UNIT_NBYTES,
        MAX_OCCUPANCY_UNITS,
        occupancy_unit,
    )
    from autotm_core.ilp.model_index import OCCUPANCY
    from autotm_core.ilp.options import Formulation
    from autotm_core.planning import load_problem

    assert occupancy_unit([None, np.array([32 * MiB, 16 * MiB])], 1) == 1
    assert occupancy_unit([np.array([64 * MiB])], 1) == 2
    assert occupancy_unit([None, np.array([64 * 2**30, 32 * MiB])], 1) == 2048
    assert occupancy_unit([np.array([3 * MiB])], 4096) == 4096  # the page when it fits
    assert occupancy_unit([None], 1) == 1
    assert occupancy_unit([np.array([2.0**60])], 1) == MAX_OCCUPANCY_UNIT_NBYTES
    problem = load_problem("zoo:gpt2:batch=256,seq=1024,layers=1", "gpu-h200", limit="1:1")
    for page in (1, 4096):
        index = build_program(problem.graph, problem.costs, problem.limited_system,
                              options=FormulationOptions(formulation=Formulation.SYNCHRONOUS,
                                                         page_nbytes=page))
        unit = index.nbytes_per_unit
        assert unit % page == 0 and unit <= MAX_OCCUPANCY_UNIT_NBYTES
        occupancy = np.flatnonzero(np.asarray(index.columns.kind) == OCCUPANCY)
        assert len(occupancy) and max(index.lp.var_ub[v] for v in occupancy) <= MAX_OCCUPANCY_UNITS
        assert max(index.lp.var_ub[v] for v in occupancy) * unit == pytest.approx(
            problem.fast_capacity_nbytes - problem.graph.liveness.workspace_nbytes.max(),
            abs=page, rel=0.01)
        coefficients = [abs(c) for r in index.occupancy_rows[0][1:] for c in index.lp.row_coefs[r]]
        assert max(coefficients) <= MAX_OCCUPANCY_UNITS
