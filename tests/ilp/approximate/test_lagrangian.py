"""The Lagrangian bound: the LP relaxation's value from its duals, none for table costs."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from autotm_core.examples.networks import training_chain
from autotm_core.ilp.approximate.lagrangian import lagrangian_bound
from autotm_core.ilp.approximate.layout import model_layout
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import FormulationOptions
from autotm_core.solvers import SolverConfig

from .settings import HIGHS, setting


@pytest.mark.highs
def test_lagrangian_bound_from_the_lp_duals_is_the_lp_relaxation():
    graph = training_chain(10)
    _, _, index = setting(graph, 0.4, "synchronous")
    problem = to_matrix_problem(index.lp)
    relaxed, _ = HIGHS.solve(attrs.evolve(problem, is_integer=np.zeros(problem.n_columns, bool)),
                             SolverConfig(duals=True))
    assert relaxed.row_duals is not None
    bound = lagrangian_bound(model_layout(index, problem), problem,
                             target=relaxed.objective * 2, row_duals=relaxed.row_duals,
                             max_iterations=1)
    assert bound.iterations == 1
    assert bound.objective == pytest.approx(relaxed.objective, rel=1e-7)


def test_table_costs_have_no_lagrangian_bound():
    from autotm_core.costs.model import TableCosts

    graph = training_chain(3)
    system, costs, _ = setting(graph, 0.5, "synchronous")
    separable = costs.separable()
    table = TableCosts(n_pools=2, kernel_ptr=graph.liveness.kernel_ptr,
                       tables=tuple(separable.table(k) for k in range(len(graph.kernels))))
    index = build_program(graph, table, system, None, FormulationOptions())
    problem = to_matrix_problem(index.lp)
    bound = lagrangian_bound(model_layout(index, problem), problem, target=1.0)
    assert bound.objective == -np.inf and bound.iterations == 0
