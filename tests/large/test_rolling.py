"""Stretch by stretch: the rolling plan is feasible for the whole model, and the Lagrangian
bound started from its prices is below the optimum, on synchronous, asynchronous and
three-pool models."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from autotm_core.costs import resolve_costs
from autotm_core.examples.networks import mlp, training_chain
from autotm_core.ilp.decode import decode_plan
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import FormulationOptions
from autotm_core.large.lagrangian import lagrangian_bound
from autotm_core.large.layout import EDGE, SLOT, model_layout
from autotm_core.large.rolling import rolling_plan
from autotm_core.memory import MemorySystem, Pool, preset
from autotm_core.plans.verify import verify_plan
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig
from autotm_core.solvers.highs import solve_matrix

MiB = 1 << 20


def _three_pools(graph) -> MemorySystem:
    peak = graph.liveness.peak_nbytes
    return MemorySystem(name="three", pools=(
        Pool("hbm", int(peak * 0.3), 1e12, 1e12, 1e-7), Pool("dram", int(peak * 0.3), 1e11, 1e11),
        Pool("pmm", None, 3e10, 1e10, 3e-7)))


def _setting(graph, fraction: float, formulation: str, three: bool = False):
    if three:
        system = _three_pools(graph)
    else:
        system = preset("optane-2019")
        system = system.with_capacity(system.fast.name, int(graph.liveness.peak_nbytes * fraction))
    costs = resolve_costs(graph, system)
    index = build_program(graph, costs, system, None, FormulationOptions(formulation=formulation))
    return system, costs, index


SETTINGS = [
    ("chain-8 sync 0.3", lambda: training_chain(8), 0.3, "synchronous", False, 3, 2),
    ("chain-8 sync 0.6", lambda: training_chain(8), 0.6, "synchronous", False, 7, 0),
    ("chain-6 async 0.4", lambda: training_chain(6), 0.4, "asynchronous", False, 4, 2),
    ("mlp sync 0.4", lambda: mlp(batch=4, widths=(64, 128, 64, 10)), 0.4, "synchronous", False,
     3, 1),
    ("chain-6 three pools", lambda: training_chain(6), 0.0, "synchronous", True, 7, 0),
]


@pytest.mark.highs
@pytest.mark.parametrize(("name", "make", "fraction", "formulation", "three", "core", "margin"),
                         SETTINGS, ids=[s[0] for s in SETTINGS])
def test_rolling_plan_is_feasible_and_the_lagrangian_bound_is_below_the_optimum(
        name, make, fraction, formulation, three, core, margin):
    graph = make()
    system, costs, index = _setting(graph, fraction, formulation, three)
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    optimum, _ = solve_matrix(problem, config=SolverConfig(relative_gap=0.0))
    assert optimum.objective is not None

    rolled = rolling_plan(layout, problem, core_kernels=core, margin_kernels=margin,
                          relative_gap=0.0)
    assert rolled is not None
    assert index.lp.violations(rolled.values, tolerance=1e-6) == []
    plan = decode_plan(index, rolled.values, graph, system, planner="rolling")
    assert verify_plan(plan, graph, system) == []
    step = float(simulate(plan, graph, system, costs).step_seconds)
    assert step >= index.objective_seconds(optimum.objective) * (1 - 1e-7)

    objective = float(problem.cost @ rolled.values)
    for duals in (rolled.row_duals, None):  # started from the stretches' prices, or not
        bound = lagrangian_bound(layout, problem, target=objective, row_duals=duals,
                                 max_iterations=50)
        assert np.isfinite(bound.objective)
        assert bound.objective <= optimum.objective * (1 + 1e-7)


@pytest.mark.highs
def test_lagrangian_bound_from_the_lp_duals_is_the_lp_relaxation():
    graph = training_chain(10)
    _, _, index = _setting(graph, 0.4, "synchronous")
    problem = to_matrix_problem(index.lp)
    relaxed, _ = solve_matrix(attrs.evolve(problem, is_integer=np.zeros(problem.n_columns, bool)),
                              config=SolverConfig(), duals=True)
    assert relaxed.row_duals is not None
    bound = lagrangian_bound(model_layout(index, problem), problem,
                             target=relaxed.objective * 2, row_duals=relaxed.row_duals,
                             max_iterations=1)
    assert bound.iterations == 1
    assert bound.objective == pytest.approx(relaxed.objective, rel=1e-7)


def test_table_costs_have_no_lagrangian_bound():
    from autotm_core.costs.model import TableCosts

    graph = training_chain(3)
    system, costs, _ = _setting(graph, 0.5, "synchronous")
    separable = costs.separable()
    table = TableCosts(n_pools=2, kernel_ptr=graph.liveness.kernel_ptr,
                       tables=tuple(separable.table(k) for k in range(len(graph.kernels))))
    index = build_program(graph, table, system, None, FormulationOptions())
    problem = to_matrix_problem(index.lp)
    bound = lagrangian_bound(model_layout(index, problem), problem, target=1.0)
    assert bound.objective == -np.inf and bound.iterations == 0


def test_layout_anchors_follow_the_slots_and_the_least_state_fits():
    graph = training_chain(6)
    _, _, index = _setting(graph, 0.3, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            assert {int(layout.col_anchor[v]) for v in xs.values()} == {slot.first}
            assert all(layout.kind[v] == SLOT for v in xs.values())
            assert sum(layout.least[v] for v in xs.values()) == 1
        for transition, tr_edges in zip(ts.transitions, edges, strict=True):
            assert all(layout.kind[e.var] == EDGE and layout.col_anchor[e.var] == transition.kernel
                       for e in tr_edges)
    # every row is anchored no earlier than any slot or edge in it
    rows = layout.rows.tocoo()
    structural = (layout.kind == SLOT) | (layout.kind == EDGE)
    on = structural[rows.col]
    assert np.all(layout.row_anchor[rows.row[on]] >= layout.col_anchor[rows.col[on]])


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["synchronous", "asynchronous"])
def test_out_of_time_keeps_what_was_planned_and_joins_the_rest_in_the_slowest_pool(formulation):
    from autotm_core.large.rolling import _complete

    graph = training_chain(8)
    system, costs, index = _setting(graph, 0.4, formulation)
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    rolled = rolling_plan(layout, problem, core_kernels=5, margin_kernels=3, relative_gap=0.0)
    assert rolled is not None and rolled.planned_kernels == len(graph.kernels)
    steps = []
    for cut in (0, 10, 20):
        partial = _complete(layout, rolled.values, rolled.row_duals, cut)
        assert partial is not None and partial.planned_kernels == cut
        before = layout.col_anchor < cut
        binary = np.asarray(problem.is_integer, dtype=bool) & before
        assert np.array_equal(partial.values[binary], np.round(rolled.values[binary]))
        plan = decode_plan(index, partial.values, graph, system, planner="partial")
        assert verify_plan(plan, graph, system) == []
        steps.append(float(simulate(plan, graph, system, costs).step_seconds))
    # a deadline already past plans nothing and keeps everything in its least state
    late = rolling_plan(layout, problem, core_kernels=5, margin_kernels=3, relative_gap=0.0,
                        deadline=0.0)
    assert late is not None and late.planned_kernels == 0
    assert np.array_equal(late.values[layout.kind == SLOT], layout.least[layout.kind == SLOT])
    full = decode_plan(index, rolled.values, graph, system, planner="rolling")
    assert float(simulate(full, graph, system, costs).step_seconds) <= min(steps) * (1 + 1e-9)
