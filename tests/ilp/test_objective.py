"""The objective check never fails a valid plan: slack a solver leaves in the kernel times
is settled first, and only a simulator pricing a plan above its model objective raises."""

from __future__ import annotations

import numpy as np
import pytest

from autotm_core.costs import roofline_costs
from autotm_core.errors import SolverError
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.decode import decode_plan, objective_of, settled_values
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.planner import check_objective, plan_graph
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig
from autotm_core.solvers.highs import HighsSolver


def _solved():
    graph = training_chain(3)
    system = preset("optane-2019").with_capacity("dram", graph.liveness.peak_nbytes // 3)
    costs = roofline_costs(graph, system)
    index = build_program(graph, costs, system)
    result, values = HighsSolver().solve(to_matrix_problem(index.lp),
                                       SolverConfig(relative_gap=0.05))
    assert values is not None and result.objective is not None
    return graph, system, costs, index, values


@pytest.mark.highs
def test_slack_in_kernel_times_is_settled_and_the_plan_passes():
    graph, system, costs, index, values = _solved()
    exact = objective_of(index, settled_values(index, values))
    slack = values.copy()
    slack[index.kernel_time_vars[2]] += 50.0  # 50 us above every row of kernel 2
    slack[index.kernel_time_vars[5]] += 7.5
    slack[index.columns.kind == 0] += 1e-7  # binaries a tolerance off 0 and 1
    assert objective_of(index, slack) > exact + 57e-6 * 0.99
    settled = settled_values(index, slack)
    assert objective_of(index, settled) == pytest.approx(exact, rel=1e-12)
    assert index.lp.violations(settled, tolerance=1e-6) == []
    plan = decode_plan(index, settled, graph, system, planner="test")
    simulated = float(simulate(plan, graph, system, costs).step_seconds)
    check_objective(objective_seconds=objective_of(index, settled),
                    simulated_seconds=simulated, graph=graph)  # no error
    # the unsettled objective is above the simulation: valid, only logged
    check_objective(objective_seconds=objective_of(index, slack),
                    simulated_seconds=simulated, graph=graph)


@pytest.mark.highs
def test_a_simulation_above_the_objective_still_raises():
    graph, system, costs, index, values = _solved()
    settled = settled_values(index, values)
    plan = decode_plan(index, settled, graph, system, planner="test")
    simulated = float(simulate(plan, graph, system, costs).step_seconds)
    with pytest.raises(SolverError, match="simulator predicts") as caught:
        check_objective(objective_seconds=simulated * 0.99, simulated_seconds=simulated,
                        graph=graph)
    assert "bug in the formulation" in caught.value.hint


def test_settled_occupancy_is_the_running_sum():
    *_, index, values = _solved()
    settled = settled_values(index, values)
    for q, occupancy in index.occupancy_vars.items():
        assert np.all(settled[occupancy[1:]] >= -1e-9)
        rows = index.occupancy_rows[q][1:]
        assert all(abs(index.lp.row_lb[r] - float(np.dot(
            index.lp.row_coefs[r], settled[index.lp.row_cols[r]]))) < 1e-9 for r in rows)


@pytest.mark.highs
def test_the_reported_objective_is_the_settled_one():
    graph = training_chain(3)
    system = preset("optane-2019")
    result = plan_graph(graph, system, fast_capacity_nbytes=graph.liveness.peak_nbytes // 3,
                        relative_gap=0.05)
    assert result.objective_seconds == pytest.approx(result.step_seconds, rel=1e-6)
    assert result.plan.attributes["objective_seconds"] == result.objective_seconds
    assert result.bound_seconds is not None
    assert result.plan.attributes["gap"] == pytest.approx(
        max(0.0, (result.objective_seconds - result.bound_seconds) / result.objective_seconds))
