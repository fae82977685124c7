"""The exact reductions fix variables without changing the optimum (of the program, and of
plan_graph on mid-size graphs), and say what they removed."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from autotm_core.costs import resolve_costs
from autotm_core.examples.networks import cnn, mlp, training_chain
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.ilp.reductions import find_reductions, never_fast
from autotm_core.ir import GraphBuilder
from autotm_core.presets import preset
from autotm_core.solvers import SolverConfig
from autotm_core.solvers.highs import HighsSolver

GRAPHS = {"chain-10": lambda: training_chain(10), "chain-5": lambda: training_chain(5),
          "mlp": lambda: mlp(batch=4, widths=(64, 128, 64, 10))}


def _setting(name: str, fraction: float, formulation: str):
    graph = GRAPHS[name]()
    system = preset("optane-2019")
    system = system.with_capacity(system.fast.name,
                                  int(graph.liveness.peak_nbytes * fraction))
    costs = resolve_costs(graph, system)
    index = build_program(graph, costs, system, None, FormulationOptions(formulation=formulation))
    return graph, system, costs, index


def _optimum(lp) -> float:
    result, _ = HighsSolver().solve(to_matrix_problem(lp), SolverConfig(relative_gap=0.0))
    assert result.objective is not None
    return result.objective


# In the asynchronous model only "always fast" and "never fast" apply: they fix nothing on
# the mlp at any of 0.35-0.9 nor on chain-5 at 0.35 (those cases compared a model with
# itself); chain-5 at 0.8 keeps three tensors fast (53 columns).
REDUCED_CASES = [*((f, fraction, name) for f in ["synchronous"] for fraction in [0.35, 0.7]
                   for name in ["chain-5", "mlp"]),
                 ("asynchronous", 0.8, "chain-5")]


@pytest.mark.slow  # exact (gap 0) solves of the full and the reduced models
@pytest.mark.highs
@pytest.mark.parametrize(("formulation", "fraction", "name"), REDUCED_CASES)
def test_reduced_model_keeps_the_optimum(name, fraction, formulation):
    graph, system, costs, index = _setting(name, fraction, formulation)
    reductions = find_reductions(index, graph, system, costs)
    assert reductions.columns.size > 0, "nothing fixed: the two models are the same"
    full = _optimum(index.lp)
    reduced = _optimum(reductions.apply(index.lp))
    assert reduced == pytest.approx(full, rel=1e-7, abs=1e-6)


@pytest.mark.parametrize("fraction", [0.35, 0.7])
def test_reductions_fix_variables_and_count_them(fraction):
    graph, system, costs, index = _setting("chain-10", fraction, "synchronous")
    reductions = find_reductions(index, graph, system, costs)
    summary = reductions.summary()
    assert summary["fixed_variables"] == reductions.columns.size > 0
    assert summary["always_fast_tensors"] + summary["unprofitable_fetches"] > 0
    fixed = reductions.apply(index.lp)
    lb, ub = np.asarray(fixed.var_lb), np.asarray(fixed.var_ub)
    assert np.array_equal(lb[reductions.columns], reductions.values)
    assert np.array_equal(ub[reductions.columns], reductions.values)
    assert index.lp.var_lb is not fixed.var_lb  # the model itself is left as it was
    assert fixed.rows is index.lp.rows


def test_more_fast_memory_keeps_more_tensors_fast():
    counts = []
    for fraction in (0.35, 0.7, 0.95):
        graph, system, costs, index = _setting("chain-10", fraction, "synchronous")
        counts.append(find_reductions(index, graph, system, costs).always_fast_tensors)
    assert counts == sorted(counts) and counts[-1] > counts[0]


def test_dropping_fixings_keeps_the_rest():
    graph, system, costs, index = _setting("chain-10", 0.7, "synchronous")
    reductions = find_reductions(index, graph, system, costs)
    first = reductions.columns[:3]
    fewer = reductions.without(first)
    assert fewer.columns.size == reductions.columns.size - 3
    assert not np.isin(first, fewer.columns).any()
    start = np.zeros(index.lp.n_vars)
    start[reductions.columns] = reductions.values
    assert reductions.conflicts(start).size == 0
    start[first] = 1 - reductions.values[:3]
    assert set(reductions.conflicts(start).tolist()) == set(first.tolist())


def test_range_minimum_matches_numpy():
    from autotm_core.ilp.reductions import _RangeMin

    values = np.random.default_rng(0).integers(-50, 50, 37)
    table = _RangeMin(values)
    for a in range(values.size):
        for b in range(a, values.size):
            assert table.min(a, b) == values[a:b + 1].min()


def test_never_fast_fixes_slots_where_the_workspace_leaves_no_room():
    mib = 1 << 20
    b = GraphBuilder("workspace")
    b.tensor("a", nbytes=4 * mib, kind="input")
    b.tensor("big", nbytes=6 * mib)
    b.tensor("c", nbytes=2 * mib)
    b.tensor("d", nbytes=2 * mib)
    b.tensor("e", nbytes=1 * mib, kind="output")
    b.kernel("k0", op="matmul", inputs=["a"], outputs=["big"], flops=1e9)
    b.kernel("k1", op="matmul", inputs=["a"], outputs=["c"], flops=1e9, workspace_nbytes=7 * mib)
    b.kernel("k2", op="matmul", inputs=["c"], outputs=["d"], flops=1e9)
    b.kernel("k3", op="add", inputs=["big", "d"], outputs=["e"], flops=1e9)
    graph = b.build()
    system = preset("optane-2019").with_capacity("dram", 12 * mib)
    costs = resolve_costs(graph, system)
    index = build_program(graph, costs, system)
    reductions = find_reductions(index, graph, system, costs)
    assert reductions.never_fast_slots == 1 and reductions.always_fast_tensors == 1
    columns, values, count = never_fast(index, graph, system, skip=set())
    assert count >= 1 and len(columns) == len(values) and set(values) == {0.0}
    assert plan_graph(graph, system, relative_gap=0.0).step_seconds == pytest.approx(
        plan_graph(graph, system, relative_gap=0.0, warm_start=False,
                   options=FormulationOptions(reduce=False)).step_seconds, rel=1e-9)


@pytest.mark.slow  # exact solves (gap 0) of the full and reduced models
@pytest.mark.highs
@pytest.mark.parametrize("make", [lambda: training_chain(12), lambda: mlp(batch=8),
                                  # two convolution layers, not three: each case 4x faster
                                  lambda: cnn(batch=2, channels=(3, 32, 64))],
                         ids=["chain-12", "mlp", "cnn"])
@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.3, 0.6])
def test_reduced_model_has_the_full_models_optimum(make, fraction):
    graph = make()
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * fraction)
    full = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                      options=FormulationOptions(reduce=False), warm_start=False)
    reduced = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert reduced.n_variables < full.n_variables
    assert reduced.step_seconds == pytest.approx(full.step_seconds, rel=1e-7)


@pytest.mark.slow  # exact solves (gap 0) of asynchronous models with and without the reduction
@pytest.mark.highs
@pytest.mark.parametrize(("make", "system_name"), [
    (lambda: training_chain(3), "optane-2019"), (lambda: training_chain(3), "gpu-h200"),
    (lambda: training_chain(3), "optane-2019+traffic"),
    (lambda: mlp(batch=4, widths=(64, 128, 64, 10)), "optane-2019")],  # 18 async moves
    ids=["chain-3-optane", "chain-3-gpu", "chain-3-optane-traffic", "mlp-optane"])
def test_asynchronous_edges_left_out_keep_the_optimum(make, system_name, monkeypatch):
    import autotm_core.ilp.formulation as formulation

    monkeypatch.setattr(formulation, "ASYNC_REDUCTION_MIN_KERNELS", 0)  # small graphs too
    graph = make()
    name, _, traffic = system_name.partition("+")
    system = preset(name)
    if traffic:  # one engine, kernels' reads and writes of pmm sharing it with the copies
        system = attrs.evolve(system, links=tuple(attrs.evolve(link, kernel_traffic=True)
                                                  for link in system.links))
    capacity = int(graph.liveness.peak_nbytes * 0.5)
    asynchronous = FormulationOptions(formulation="asynchronous", page_nbytes=1)
    full = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                      options=attrs.evolve(asynchronous, reduce=False), warm_start=False)
    reduced = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                         options=asynchronous, warm_start=False)
    if name == "optane-2019":  # async copies at 2-2.5 GB/s: many never pay
        assert reduced.n_binaries < full.n_binaries
    assert reduced.step_seconds == pytest.approx(full.step_seconds, rel=1e-7)
