"""``to_pyomo`` gives a model with exactly the rows, bounds and objective of its program."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from pyomo.repn import generate_standard_repn

from autotm_core.costs import roofline_costs
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import (
    LinearProgram,
    paused_gc,
    pyomo_values,
    set_pyomo_values,
    to_pyomo,
)
from autotm_core.ilp.options import FormulationOptions

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
    assert_same(to_pyomo(index.lp), index.lp)


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
    model = to_pyomo(lp)
    assert_same(model, lp)
    assert 4 not in model.rows


def test_values_round_trip():
    lp = LinearProgram()
    for _ in range(3):
        lp.add_var(binary=True)
    model = to_pyomo(lp)
    assert np.isnan(pyomo_values(model, lp.n_vars)).all()
    set_pyomo_values(model, np.array([1.0, 0.0, 1.0]))
    assert pyomo_values(model, lp.n_vars).tolist() == [1.0, 0.0, 1.0]


def test_paused_gc_restores_the_collector_state():
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
