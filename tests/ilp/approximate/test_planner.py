"""The budgeted planner returns verified plans, never worse than greedy, with a valid bound."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.costs import resolve_costs
from autotm_core.errors import UsageError
from autotm_core.examples.networks import mlp, training_chain
from autotm_core.ilp.approximate import plan_approximate
from autotm_core.ilp.options import Formulation
from autotm_core.ilp.planner import plan_graph
from autotm_core.ilp.search import DEFAULT_STRATEGY, Origin, Source
from autotm_core.plans.verify import verify_plan
from autotm_core.plugins import get_solver
from autotm_core.presets import preset


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("fraction", [0.3, 0.6])
def test_plan_verifies_beats_greedy_and_bounds_the_exact_optimum(fraction):
    graph = training_chain(8)
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * fraction)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity, time_budget_seconds=30,
                        relative_gap=0.0)
    assert verify_plan(result.plan, graph, result.system) == []
    assert result.step_seconds <= result.baseline_step_seconds
    assert result.bound_seconds <= result.step_seconds
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert result.bound_seconds <= exact.step_seconds * (1 + 1e-7)
    assert result.step_seconds == pytest.approx(exact.step_seconds, rel=1e-6)
    assert 0.0 <= result.gap < 1e-6


@pytest.mark.highs
def test_no_time_to_solve_returns_greedy_with_the_kernel_bound():
    graph = mlp(batch=4, widths=(64, 128, 64, 10))
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity, time_budget_seconds=0)
    assert result.source == Source(Origin.BASELINE, name="greedy")
    assert result.termination.startswith("not run")
    assert result.step_seconds == result.baseline_step_seconds
    assert result.bound_source == "kernels"
    assert 0 < result.bound_seconds <= result.step_seconds
    assert verify_plan(result.plan, graph, result.system) == []


@pytest.mark.slow
@pytest.mark.highs
def test_without_reductions_the_same_plan_quality():
    graph = training_chain(6)
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.5)
    costs = resolve_costs(graph, system.with_capacity(system.fast.name, capacity))
    kept = plan_approximate(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                      costs=costs)
    plain = plan_approximate(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                       costs=costs, reduce=False)
    assert plain.reductions.columns.size == 0 < kept.reductions.columns.size
    assert kept.step_seconds == pytest.approx(plain.step_seconds, rel=1e-6)


@pytest.mark.slow
@pytest.mark.highs
def test_rolling_path_plans_verifies_and_bounds_the_exact_optimum():
    graph = training_chain(8)  # 25 kernels, planned 6 at a time
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity, time_budget_seconds=60,
                              relative_gap=0.0, strategy=attrs.evolve(
                                  DEFAULT_STRATEGY, stretch_kernels=6, full_solve_kernels=0,
                                  full_solve_stretch_factor=float("inf")))
    greedy = Source(Origin.BASELINE, name="greedy")
    assert result.source in {Source(Origin.STRETCHES, Formulation.SYNCHRONOUS), greedy}
    assert result.termination.startswith("stretches planned") or result.source == greedy
    assert result.bound_source == "lagrangian"
    assert verify_plan(result.plan, graph, result.system) == []
    assert result.step_seconds <= result.baseline_step_seconds
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert result.bound_seconds <= exact.step_seconds * (1 + 1e-7)
    assert result.step_seconds >= exact.step_seconds * (1 - 1e-7)
    # then the whole model, started from the stretch plan, closes the gap
    full = plan_approximate(graph, system, fast_capacity_nbytes=capacity, time_budget_seconds=60,
                            relative_gap=0.0,
                            strategy=attrs.evolve(DEFAULT_STRATEGY, stretch_kernels=6))
    assert full.step_seconds == pytest.approx(exact.step_seconds, rel=1e-6)
    assert full.bound_source in {"solver", "lagrangian"} and full.gap < 1e-6


@pytest.mark.slow
@pytest.mark.highs
def test_the_whole_model_relaxed_and_fixed_after_the_stretches_bounds_by_its_lp():
    graph = training_chain(8)
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity, time_budget_seconds=60,
                              relative_gap=0.0, strategy=attrs.evolve(
                                  DEFAULT_STRATEGY, stretch_kernels=6, full_solve_kernels=0))
    assert result.termination.startswith("relax-and-fix of the whole model")
    assert result.bound_source == "lp relaxation"
    assert verify_plan(result.plan, graph, result.system) == []
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert result.bound_seconds <= exact.step_seconds * (1 + 1e-7)
    assert result.step_seconds >= exact.step_seconds * (1 - 1e-7)


@pytest.mark.parametrize("solver", [pytest.param("glpk", marks=pytest.mark.glpk),
                                    pytest.param("cbc", marks=pytest.mark.cbc)])
def test_a_solver_without_row_duals_is_refused_before_any_work(solver, monkeypatch):
    import autotm_core.baselines

    def no_work(*args, **kwargs):
        raise AssertionError("planning started")

    monkeypatch.setattr(autotm_core.baselines, "greedy", no_work)
    graph = training_chain(3)
    with pytest.raises(UsageError, match=f"solver '{solver}' cannot plan approximately: it "
                                         "lacks row duals") as info:
        plan_approximate(graph, preset("optane-2019"), solver=get_solver(solver),
                         fast_capacity_nbytes=graph.liveness.peak_nbytes // 2)
    assert "--solver highs" in info.value.hint and "--mode exact" in info.value.hint


@pytest.mark.highs
def test_the_result_names_the_solver():
    graph = training_chain(3)
    result = plan_approximate(graph, preset("optane-2019"), solver=get_solver("highs"),
                              fast_capacity_nbytes=graph.liveness.peak_nbytes // 2)
    assert result.solver_name == "highs"


@pytest.mark.highs
@pytest.mark.parametrize("budget", [0, 20])
def test_a_static_plan_never_moves_and_falls_back_to_first_touch(budget):
    from autotm_core.baselines import greedy
    from autotm_core.ilp.options import FormulationOptions

    graph = mlp(batch=4, widths=(64, 128, 64, 10))
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    mover = greedy(graph, system, fast_capacity_nbytes=capacity)
    assert mover.moves  # offered, but a static plan has none
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity,
                              time_budget_seconds=budget, start_plans=(mover,),
                              options=FormulationOptions(formulation="static"))
    assert result.baseline == "first-touch" and result.plan.moves == ()
    assert result.step_seconds <= result.baseline_step_seconds
    assert verify_plan(result.plan, graph, result.system) == []
    if budget == 0:
        assert result.source == Source(Origin.BASELINE, name="first-touch")


@pytest.mark.highs
def test_a_start_plan_is_a_candidate_and_names_itself():
    graph = training_chain(4)
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity,
                              time_budget_seconds=0, start_plans=(exact.plan,))
    assert result.source == Source(Origin.WARM_START, name="ilp/synchronous")
    assert result.step_seconds == pytest.approx(exact.step_seconds)
    assert result.step_seconds < result.baseline_step_seconds
    assert result.bound_seconds <= result.step_seconds


@pytest.mark.slow
@pytest.mark.highs
def test_the_static_formulations_whole_model_is_planned_first_and_held():
    from autotm_core.ilp.search.pool import IncumbentPool

    graph = training_chain(8)  # 25 kernels, stretches of 6
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    limited = system.with_capacity(system.fast.name, capacity)
    costs = resolve_costs(graph, limited)
    strategy = attrs.evolve(DEFAULT_STRATEGY, stretch_kernels=6, full_solve_kernels=0,
                            full_solve_stretch_factor=float("inf"))
    pool = IncumbentPool(graph, limited, costs)
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity, costs=costs,
                              time_budget_seconds=60, relative_gap=0.0, strategy=strategy,
                              pool=pool)
    held = pool.held(Source(Origin.SOLVE, Formulation.STATIC))
    assert held is not None and held.plan.moves == ()
    static = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                        formulation="static")
    assert held.step_seconds >= static.step_seconds * (1 - 1e-7)  # relax-and-fix: a plan
    assert result.step_seconds <= held.step_seconds
    # faster than the stretches' plan here: the second pass started from it, and says so
    assert "starts from the plan of ilp, static formulation" in result.termination
    # its LP bound bounds static plans only: the answer's bound is the search's own
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert result.bound_seconds <= exact.step_seconds * (1 + 1e-7)
    assert verify_plan(result.plan, graph, result.system) == []
    # a share of 0 plans no static model first
    pool = IncumbentPool(graph, limited, costs)
    plan_approximate(graph, system, fast_capacity_nbytes=capacity, costs=costs,
                     time_budget_seconds=60, pool=pool,
                     strategy=attrs.evolve(strategy, static_start_share=0.0))
    assert pool.held(Source(Origin.SOLVE, Formulation.STATIC)) is None
    # nor does a graph above static_start_kernels
    pool = IncumbentPool(graph, limited, costs)
    plan_approximate(graph, system, fast_capacity_nbytes=capacity, costs=costs,
                     time_budget_seconds=60, pool=pool,
                     strategy=attrs.evolve(strategy, static_start_kernels=len(graph.kernels) - 1))
    assert pool.held(Source(Origin.SOLVE, Formulation.STATIC)) is None
