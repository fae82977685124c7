"""Warm starts: every verified baseline plan maps onto a feasible start no slower than it."""

from __future__ import annotations

import numpy as np
import pytest

from autotm_core.baselines import all_slow, first_touch, greedy
from autotm_core.costs import roofline_costs
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.warm import FEASIBILITY_TOLERANCE, warm_start_from_plan
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig


def chain_setting():
    graph = training_chain(10)
    system = preset("optane-2019").with_capacity("dram", graph.liveness.peak_nbytes // 2)
    return graph, system, roofline_costs(graph, system)


@pytest.mark.parametrize("baseline", [greedy, first_touch, all_slow])
def test_baseline_plans_map_to_feasible_starts_no_slower(baseline):
    graph, system, costs = chain_setting()
    index = build_program(graph, costs, system)
    plan = baseline(graph, system)
    values = warm_start_from_plan(index, plan, graph, system)
    assert values is not None
    assert index.lp.violations(values, tolerance=FEASIBILITY_TOLERANCE) == []
    objective = sum(c * values[j] for j, c in index.lp.objective.items())
    simulated = float(simulate(plan, graph, system, costs).step_seconds)
    assert index.objective_seconds(objective) <= simulated * (1 + 1e-9)


@pytest.mark.highs
def test_highs_takes_the_greedy_start_as_its_first_solution():
    from autotm_core.plugins import get_solver

    graph, system, costs = chain_setting()
    index = build_program(graph, costs, system)
    values = warm_start_from_plan(index, greedy(graph, system), graph, system)
    greedy_objective = float(np.dot(to_matrix_problem(index.lp).cost, values))
    # No node, no heuristic: only the start can give a solution.
    config = SolverConfig(options={"mip_max_nodes": 0, "mip_heuristic_effort": 0.0,
                                   "presolve": "off"})
    result, _ = get_solver("highs").solve(to_matrix_problem(index.lp), config, values)
    assert result.has_solution
    assert result.objective <= greedy_objective * (1 + 1e-9)


def test_a_plan_that_does_not_end_where_it_began_is_no_start():
    from autotm_core.plans import Move, Residency, make_plan
    from autotm_core.plans.verify import verify_plan

    from .test_steady_state import MiB, update_step

    graph = update_step()
    system = preset("optane-2019").with_capacity("dram", 17 * MiB)
    index = build_program(graph, roofline_costs(graph, system), system)
    common = [Residency("w", "pmm", 0, 1), Residency("w", "dram", 2, 3),
              Residency("a", "dram", 0, 1), Residency("g", "dram", 1, 3)]
    free = make_plan(graph, system, planner="free", residencies=common,
                     moves=[Move("w", "pmm", "dram", 2)])
    assert warm_start_from_plan(index, free, graph, system) is None  # w begins in pmm only
    paid = make_plan(graph, system, planner="paid",
                     residencies=[*common, Residency("w", "pmm", 3, 3)],
                     moves=[Move("w", "pmm", "dram", 2), Move("w", "dram", "pmm", 3)])
    assert verify_plan(paid, graph, system) == []  # the copy back into pmm is paid
    values = warm_start_from_plan(index, paid, graph, system)
    assert values is not None
    assert index.lp.violations(values, tolerance=FEASIBILITY_TOLERANCE) == []


def test_a_plan_beginning_a_tensor_where_the_model_bars_it_starts_it_elsewhere():
    # begin_outside (address fitting) bars w from dram at the step's start: the start
    # begins w in pmm, fetches it for its first use and ends the step with it in pmm too
    from autotm_core.ilp.options import FormulationOptions
    from autotm_core.plans import Residency, make_plan
    from autotm_core.plans.verify import verify_plan

    from .test_steady_state import MiB, ends_where_it_began, update_step

    graph = update_step()
    system = preset("optane-2019").with_capacity("dram", 25 * MiB)
    costs = roofline_costs(graph, system)
    plan = make_plan(graph, system, planner="in-dram", residencies=[
        Residency("w", "dram", 0, 3), Residency("a", "dram", 0, 1),
        Residency("g", "dram", 1, 3)])
    assert ends_where_it_began(plan, graph) == [] and verify_plan(plan, graph, system) == []
    barred = build_program(graph, costs, system,
                           options=FormulationOptions(begin_outside={"dram": ["w"]}))
    values = warm_start_from_plan(barred, plan, graph, system)
    assert values is not None
    assert barred.lp.violations(values, tolerance=FEASIBILITY_TOLERANCE) == []
    w = next(t for t, ts in enumerate(barred.tensors) if graph.tensors[ts.tensor].name == "w")
    first, last = (next(s for s, v in xs.items() if values[v] > 0.5)
                   for xs in (barred.slot_vars[w][0], barred.slot_vars[w][-1]))
    pmm = system.pool_index("pmm")
    assert barred.states[first].pools == {pmm} and pmm in barred.states[last].pools
    # the same plan, unbarred, maps as it is
    free = build_program(graph, costs, system)
    assert warm_start_from_plan(free, plan, graph, system) is not None


def test_a_copy_issued_at_a_gadget_is_the_transition_out_of_it():
    # w is evicted while fwd (kernel 0) reads it and fetched back while bwd runs: during
    # kernel 0 the plan holds w in both pools (pmm reserved), but w begins the step in dram
    # only, where it ends it; read as both pools it broke the steady-state rows
    from autotm_core.ilp.options import FormulationOptions
    from autotm_core.plans import Move, MoveKind, Residency, make_plan
    from autotm_core.plans.verify import verify_plan

    from .test_steady_state import MiB, update_step

    graph = update_step()
    system = preset("optane-2019").with_capacity("dram", 32 * MiB)
    costs = roofline_costs(graph, system)
    plan = make_plan(graph, system, planner="evicted-at-0", residencies=[
        Residency("w", "dram", 0, 0), Residency("w", "pmm", 0, 1), Residency("w", "dram", 1, 3),
        Residency("a", "dram", 0, 1), Residency("g", "dram", 1, 3)], moves=[
        Move("w", "dram", "pmm", 0, kind=MoveKind.ASYNC),
        Move("w", "pmm", "dram", 1, kind=MoveKind.ASYNC)])
    assert verify_plan(plan, graph, system) == []
    index = build_program(graph, costs, system,
                          options=FormulationOptions(formulation="asynchronous"))
    values = warm_start_from_plan(index, plan, graph, system)
    assert values is not None
    assert index.lp.violations(values, tolerance=FEASIBILITY_TOLERANCE) == []
    w = next(t for t, ts in enumerate(index.tensors) if graph.tensors[ts.tensor].name == "w")
    first = next(s for s, v in index.slot_vars[w][0].items() if values[v] > 0.5)
    assert index.states[first].pools == {system.pool_index("dram")}
