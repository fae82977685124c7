"""Stretch by stretch: the rolling plan is feasible for the whole model, and the Lagrangian
bound started from its prices is below the optimum, on synchronous, asynchronous and
three-pool models."""

from __future__ import annotations

import numpy as np
import pytest

from autotm_core.examples.networks import mlp, training_chain
from autotm_core.ilp.approximate.lagrangian import lagrangian_bound
from autotm_core.ilp.approximate.layout import SLOT, model_layout
from autotm_core.ilp.approximate.rolling import rolling_plan
from autotm_core.ilp.decode import decode_plan
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.plans.verify import verify_plan
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig

from .settings import HIGHS, setting

SETTINGS = [
    ("chain-8 sync 0.3", lambda: training_chain(8), 0.3, "synchronous", False, 3, 2),
    ("chain-8 sync 0.6", lambda: training_chain(8), 0.6, "synchronous", False, 7, 0),
    ("chain-6 async 0.4", lambda: training_chain(6), 0.4, "asynchronous", False, 4, 2),
    ("mlp sync 0.4", lambda: mlp(batch=4, widths=(64, 128, 64, 10)), 0.4, "synchronous", False,
     3, 1),
    # chain-5 (16 kernels: three stretches of 7): chain-6's exact optimum took 27 s
    ("chain-5 three pools", lambda: training_chain(5), 0.0, "synchronous", True, 7, 0),
]


@pytest.mark.highs
@pytest.mark.parametrize(("name", "make", "fraction", "formulation", "three", "core", "margin"),
                         SETTINGS, ids=[s[0] for s in SETTINGS])
@pytest.mark.slow
def test_rolling_plan_is_feasible_and_the_lagrangian_bound_is_below_the_optimum(
        name, make, fraction, formulation, three, core, margin):
    graph = make()
    system, costs, index = setting(graph, fraction, formulation, three)
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    optimum, _ = HIGHS.solve(problem, SolverConfig(relative_gap=0.0))
    assert optimum.objective is not None

    rolled = rolling_plan(layout, problem, solver=HIGHS, core_kernels=core, margin_kernels=margin,
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
@pytest.mark.parametrize("formulation", ["synchronous", "asynchronous"])
def test_out_of_time_keeps_what_was_planned_and_joins_the_rest_in_the_slowest_pool(formulation):
    from autotm_core.ilp.approximate.rolling import _complete

    graph = training_chain(8)
    system, costs, index = setting(graph, 0.4, formulation)
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    rolled = rolling_plan(layout, problem, solver=HIGHS, core_kernels=5, margin_kernels=3,
                          relative_gap=0.0)
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
    late = rolling_plan(layout, problem, solver=HIGHS, core_kernels=5, margin_kernels=3,
                        relative_gap=0.0, deadline=0.0)
    assert late is not None and late.planned_kernels == 0
    assert np.array_equal(late.values[layout.kind == SLOT], layout.least[layout.kind == SLOT])
    full = decode_plan(index, rolled.values, graph, system, planner="rolling")
    assert float(simulate(full, graph, system, costs).step_seconds) <= min(steps) * (1 + 1e-9)


@pytest.mark.highs
@pytest.mark.parametrize("fraction", [0.3, 0.5])
def test_out_of_time_joins_what_was_planned_to_the_held_plan(fraction):
    """What the stretches planned before a cut, joined to greedy's plan for the rest
    (chain:20000 at load 3 planned 2,000 of its kernels in time; in the slowest pool the
    rest made a plan slower than greedy's, which was returned): every join verifies, keeps
    the decisions of the slots that end before the cut, and a cut at kernel 0 is greedy's
    plan."""
    from autotm_core.baselines import greedy
    from autotm_core.ilp.approximate.rolling import complete_from_held
    from autotm_core.ilp.warm import warm_start_from_plan

    graph = training_chain(8)
    system, costs, index = setting(graph, fraction, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    rolled = rolling_plan(layout, problem, solver=HIGHS, core_kernels=5, margin_kernels=3,
                          relative_gap=0.0)
    assert rolled is not None
    baseline = greedy(graph, system, fast_capacity_nbytes=system.fast.capacity_nbytes)
    held = warm_start_from_plan(index, baseline, graph, system)
    assert held is not None
    greedy_step = float(simulate(baseline, graph, system, costs).step_seconds)
    joined_any = False
    for cut in range(0, len(graph.kernels), 4):
        joined = complete_from_held(layout, problem, rolled.values, cut, held)
        if cut == 0:
            assert joined is not None
        if joined is None:
            continue
        joined_any = True
        plan = decode_plan(index, joined, graph, system, planner="joined")
        assert verify_plan(plan, graph, system) == []
        step = float(simulate(plan, graph, system, costs).step_seconds)
        if cut == 0:
            assert step <= greedy_step * (1 + 1e-9)
        # a slot that ends before the cut keeps what the stretches decided
        ends_before = np.zeros(int(layout.slot.max()) + 2, dtype=bool)
        first = layout.tensor_slots
        for t in range(len(first) - 1):
            for sl in range(int(first[t]), int(first[t + 1]) - 1):
                nxt = (layout.kind == SLOT) & (layout.slot == sl + 1)
                ends_before[sl] = int(layout.col_anchor[nxt].min()) <= cut
        kept = (layout.kind == SLOT) & ends_before[np.maximum(layout.slot, 0)] \
            & (layout.col_anchor < cut)
        assert np.array_equal(joined[kept], np.round(rolled.values[kept]))
    assert joined_any


@pytest.mark.highs
def test_a_tensor_left_in_the_slowest_pool_ends_the_step_where_it_began_by_a_copy():
    """Every tensor that exists before the step begins it in fast memory alone; planned to
    kernel 1, the rest of each stays in the slowest pool and must end the step holding fast
    memory again. Most have no edge from the slowest pool alone to fast memory alone (the
    copy keeps its source): the last slot takes both pools (chain:20000 fell back to
    greedy's plan: "the plan before kernel 5000 cannot be joined to the rest")."""
    from autotm_core.ilp.approximate.rolling import _complete

    graph = training_chain(8)
    system, _costs, index = setting(graph, 1.0, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    values = layout.least.copy()
    cyclic_first = np.unique(layout.tensor_slots[np.searchsorted(
        layout.tensor_slots, layout.slot[layout.last_slot], side="right") - 1])
    assert cyclic_first.size
    states = np.flatnonzero((layout.kind == SLOT) & np.isin(layout.slot, cyclic_first))
    fast_alone = index.states.index(next(st for st in index.states if st.pools == {0}))
    values[states] = (layout.state[states] == fast_alone).astype(float)
    partial = _complete(layout, values, np.full(layout.rows.shape[0], np.nan), 1)
    assert partial is not None
    plan = decode_plan(index, partial.values, graph, system, planner="partial")
    assert verify_plan(plan, graph, system) == []


def test_the_last_stretch_takes_a_short_tail_with_it():
    from autotm_core.ilp.approximate.rolling import _stretches

    assert _stretches(9264, 1000, 250) == [(s, s + 1000) for s in range(0, 8000, 1000)] + [
        (8000, 9264)]
    assert _stretches(3000, 1000, 250) == [(0, 1000), (1000, 2000), (2000, 3000)]
    assert _stretches(700, 1000, 250) == [(0, 700)]
    assert _stretches(10, 3, 0) == [(0, 3), (3, 6), (6, 10)]


@pytest.mark.highs
def test_a_stretch_with_no_solution_is_planned_again_with_the_one_before(monkeypatch):
    """What a stretch decided can leave the next one no solution (the Llama-7B-shaped step:
    the optimizer's stretch at the end could not bring every tensor back): both are planned
    again as one stretch, and the plan stays feasible for the whole model."""
    import autotm_core.ilp.approximate.rolling as rolling

    graph = training_chain(8)
    system, _costs, index = setting(graph, 0.4, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    solve, tried = rolling._solve_slice, []

    def first_try_of_the_third_fails(piece, *args, s, e, **kwargs):
        tried.append((s, e))
        if (s, e) == (10, 15):
            return False
        return solve(piece, *args, s=s, e=e, **kwargs)

    monkeypatch.setattr(rolling, "_solve_slice", first_try_of_the_third_fails)
    rolled = rolling_plan(layout, problem, solver=HIGHS, core_kernels=5, margin_kernels=0,
                          relative_gap=0.0)
    assert tried[:4] == [(0, 5), (5, 10), (10, 15), (5, 15)]
    assert rolled is not None and rolled.planned_kernels == len(graph.kernels)
    assert index.lp.violations(rolled.values, tolerance=1e-6) == []
    plan = decode_plan(index, rolled.values, graph, system, planner="rolling")
    assert verify_plan(plan, graph, system) == []


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["synchronous", "asynchronous"])
def test_a_second_pass_over_the_stretches_never_makes_the_plan_worse(formulation):
    from autotm_core.ilp.approximate.rolling import revisit

    graph, system, costs, index, problem, layout, rolled = _rolled(formulation)
    first = decode_plan(index, rolled.values, graph, system, planner="rolling")
    again = revisit(layout, problem, rolled.values, solver=HIGHS, core_kernels=5,
                    relative_gap=0.0)
    assert again.revisited >= 5
    # every decision and occupancy holds (kernel times beyond a stretch may be stale)
    assert [r for r in index.lp.violations(again.values, tolerance=1e-6)
            if not layout.time_row[r]] == []
    plan = decode_plan(index, again.values, graph, system, planner="revisited")
    assert verify_plan(plan, graph, system) == []
    step = float(simulate(plan, graph, system, costs).step_seconds)
    assert step <= float(simulate(first, graph, system, costs).step_seconds) * (1 + 1e-9)
    # a proven bound on the optimum (the asynchronous model, with spanning copies, takes
    # minutes to close its gap)
    optimum, _ = HIGHS.solve(problem, SolverConfig(relative_gap=0.02))
    assert optimum.best_bound is not None
    assert step >= index.objective_seconds(optimum.best_bound) * (1 - 1e-7)


@pytest.mark.highs
@pytest.mark.parametrize(("formulation", "three"), [("synchronous", False),
                                                    ("asynchronous", False),
                                                    ("synchronous", True)])
def test_every_tensor_planned_again_over_the_whole_step_is_the_whole_model(formulation, three):
    """The slice of a group of tensors compresses the capacity to the half steps where the
    group's bytes change: with every tensor in the group, its optimum is the whole model's,
    and its solution, written back with the occupancies settled, one of the whole model."""
    from autotm_core.ilp.approximate import rolling

    _graph, _system, _costs, index, problem, layout, rolled = _rolled(
        formulation, layers=4, core=3, three=three)
    every = rolling._column_tensors(layout) >= 0
    piece = rolling._tensors_slice(layout, problem, rolled.values, every)
    found, values = HIGHS.solve(piece.sub, SolverConfig(relative_gap=0.0))
    optimum, _ = HIGHS.solve(problem, SolverConfig(relative_gap=0.0))
    assert found.objective == pytest.approx(optimum.objective, rel=1e-7)
    again = np.array(rolled.values)
    again[piece.cols] = values[:piece.cols.size]
    rolling._settle_occupancy(layout, again)
    assert index.lp.violations(again, tolerance=1e-6) == []


@pytest.mark.highs
def test_groups_of_tensors_cover_every_tensor_once_in_pieces_of_a_stretch():
    from autotm_core.ilp.approximate import rolling

    graph = training_chain(12)
    _system, _costs, index = setting(graph, 0.4, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    tensors = rolling._column_tensors(layout)
    groups = [rolling._members(tensors, g)
              for g in rolling._tensor_groups(layout, problem, tensors, core_kernels=10)]
    assert len(groups) > 1
    seen = np.concatenate([np.unique(tensors[g]) for g in groups])
    assert sorted(seen.tolist()) == list(range(len(index.tensors)))
    binary = np.asarray(problem.is_integer, dtype=bool)
    per_stretch = binary[tensors >= 0].sum() * 10 // len(graph.kernels)
    # the groups end where their binaries together first reach a multiple of a stretch's
    together = np.cumsum([int(binary[g].sum()) for g in groups])
    assert all(together[j] >= (j + 1) * per_stretch for j in range(len(groups) - 1))
    assert all(together[j] - binary[groups[j]].sum() < (j + 1) * per_stretch
               for j in range(len(groups)))


def _rolled(formulation: str, *, layers: int = 8, core: int = 5, three: bool = False) -> tuple:
    """training_chain(layers) at 40% of its peak (or on three bounded pools): the graph,
    system, costs, model, its matrix and layout, and its stretch plan of ``core`` kernels a
    stretch."""
    graph = training_chain(layers)
    system, costs, index = setting(graph, 0.4, formulation, three=three)
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    rolled = rolling_plan(layout, problem, solver=HIGHS, core_kernels=core, margin_kernels=0,
                          relative_gap=0.0)
    assert rolled is not None
    return graph, system, costs, index, problem, layout, rolled
