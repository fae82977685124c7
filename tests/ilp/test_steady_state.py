"""One step of a training loop: a tensor that exists before the step and survives it ends the
step holding every pool it began in, and the ILP pays for the copy that puts it back."""

from __future__ import annotations

import pytest

from autotm_core.costs import roofline_costs
from autotm_core.examples.networks import mlp, training_chain
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.gadgets import tensor_slots
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.ir import Graph, GraphBuilder, TensorKind
from autotm_core.memory import MemorySystem, Pool
from autotm_core.plans import Move, Residency, make_plan
from autotm_core.plans.model import Plan
from autotm_core.plans.verify import verify_plan
from autotm_core.presets import preset
from autotm_core.simulation import simulate

from .enumerate_plans import best_plan_seconds

MiB = 1 << 20


def update_step() -> Graph:
    """``w`` is read by ``fwd`` and updated in place by ``sgd``; ``bwd`` wants the fast pool
    for ``a`` and ``g``."""
    b = GraphBuilder("update")
    b.tensor("w", nbytes=8 * MiB, kind=TensorKind.PARAMETER)
    b.tensor("a", nbytes=8 * MiB)
    b.tensor("g", nbytes=8 * MiB, kind=TensorKind.GRADIENT)
    b.kernel("fwd", op="layer", inputs=["w"], outputs=["a"], flops=1e6)
    b.kernel("bwd", op="layer", inputs=["a"], outputs=["g"], flops=1e6)
    b.kernel("sgd", op="add", inputs=["w", "g"], outputs=["w"], flops=1e6)
    b.kernel("report", op="layer", inputs=["g"], flops=1e6)
    return b.build()


def ends_where_it_began(plan: Plan, graph: Graph) -> list[str]:
    """The tensors breaking the steady-state rule (an independent check of it): each pool a
    pre-existing surviving tensor begins in holds its current value after the last kernel."""
    last = len(graph.kernels) - 1
    kernel = graph.kernels[last]
    bad = []
    for tensor in graph.tensors:
        if not (tensor.kind.exists_before_step and tensor.kind.survives_step):
            continue
        mine = [r for r in plan.residencies if r.tensor == tensor.name]
        begins = {r.pool for r in mine if r.first == 0}
        ends = {r.pool for r in mine if r.first <= last <= r.last}
        if tensor.name in kernel.outputs:
            ends &= {plan.configs[last][kernel.tensors.index(tensor.name)]}
        if not begins <= ends:
            bad.append(tensor.name)
    return bad


def three_pools(graph: Graph) -> MemorySystem:
    peak = graph.liveness.peak_nbytes
    return MemorySystem(name="three", pools=(
        Pool("hbm", peak // 4, 1e12, 1e12, 1e-7), Pool("dram", peak // 4, 1e11, 1e11, 2e-7),
        Pool("cxl", None, 3e10, 1e10, 3e-7)))


@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
@pytest.mark.parametrize("three", [False, True])
def test_one_row_per_surviving_tensor_and_pool_its_first_slot_may_hold(formulation, three):
    graph = mlp(batch=4, widths=(64, 128, 64, 10))
    system = three_pools(graph) if three else preset("optane-2019")
    index = build_program(graph, roofline_costs(graph, system), system, None,
                          FormulationOptions(formulation=formulation))
    lp, rows = index.lp, set(index.cyclic_rows)
    expected = 0
    for ts, slot_vars in zip(index.tensors, index.slot_vars, strict=True):
        kind = graph.tensors[ts.tensor].kind
        assert ts.cyclic == (kind.exists_before_step and kind.survives_step)
        if not ts.cyclic or len(ts.slots) == 1:
            continue
        assert ts.slots[-1].first == ts.slots[-1].last == len(graph.kernels) - 1
        first, last = slot_vars[0], slot_vars[-1]
        for q in range(len(system.pools)):
            begins = {v for s, v in first.items() if q in index.states[s].pools}
            if not begins:
                continue
            ends = {v for s, v in last.items() if q in index.states[s].pools}
            (row,) = [r for r in rows if begins <= set(lp.row_cols[r])
                      and set(lp.row_cols[r]) == begins | ends]
            coefs = dict(zip(lp.row_cols[row], lp.row_coefs[row], strict=True))
            assert all(coefs[v] == 1.0 for v in begins) and all(coefs[v] == -1.0 for v in ends)
            assert lp.row_ub[row] == 0.0
            expected += 1
    assert len(rows) == expected and (expected == 0) == (formulation == "static")


def test_a_first_slot_holds_clean_copies_unless_written_at_either_end_or_an_input():
    graph = training_chain(3)  # w0 read at kernel 0 and updated by the last kernel but two
    slots = {graph.tensors[ts.tensor].name: ts
             for ts in tensor_slots(graph, static=False, asynchronous=False, window=15)}
    assert not slots["w0"].slots[0].writes and not slots["w1"].slots[0].writes
    assert slots["w2"].slots[0].writes  # sgd_w2, the last kernel, writes it: one pool
    assert slots["x"].slots[0].writes and not slots["x"].cyclic  # an input arrives in one
    # the last kernel is a gadget of every surviving tensor: where the copy back happens
    assert slots["w0"].transitions[-1].kernel == len(graph.kernels) - 1


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
def test_an_evicted_parameter_pays_its_way_back(formulation):
    graph = update_step()
    system = preset("optane-2019").with_capacity("dram", 17 * MiB)
    costs = roofline_costs(graph, system)
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
    assert verify_plan(result.plan, graph, system) == []
    assert ends_where_it_began(result.plan, graph) == []
    assert result.objective_seconds == pytest.approx(result.step_seconds, rel=1e-9)
    # The plan the model found before issue 14: w starts in slow memory, is fetched for its
    # update and ends in fast memory, leaving the next step a copy it never pays for.
    free = make_plan(graph, system, planner="free", residencies=[
        Residency("w", "pmm", 0, 1), Residency("w", "dram", 2, 3), Residency("a", "dram", 0, 1),
        Residency("g", "dram", 1, 3)], moves=[Move("w", "pmm", "dram", 2)])
    assert ends_where_it_began(free, graph) == ["w"]
    assert verify_plan(free, graph, system) != []
    free_seconds = float(simulate(free, graph, system, costs).step_seconds)
    assert result.step_seconds > free_seconds * 1.1


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
def test_the_optimum_is_every_valid_plans_best(formulation):
    graph = update_step()
    system = preset("optane-2019").with_capacity("dram", 17 * MiB)
    best = best_plan_seconds(graph, system, roofline_costs(graph, system), formulation)
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
    assert result.step_seconds == pytest.approx(best, rel=1e-9)


@pytest.mark.highs
@pytest.mark.parametrize("three", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_surviving_tensors_begin_and_end_in_one_residency_per_pool(three):
    graph = training_chain(4) if three else mlp(batch=4, widths=(64, 128, 64, 10))
    system = three_pools(graph) if three else preset("optane-2019").with_capacity(
        "dram", graph.liveness.peak_nbytes // 3)
    result = plan_graph(graph, system, relative_gap=0.01)
    plan, last = result.plan, len(graph.kernels) - 1
    assert verify_plan(plan, graph, system) == [] and ends_where_it_began(plan, graph) == []
    for tensor in graph.tensors:
        if not (tensor.kind.exists_before_step and tensor.kind.survives_step):
            continue
        mine = [r for r in plan.residencies if r.tensor == tensor.name]
        for pool in {r.pool for r in mine if r.first == 0}:
            assert sum(r.first == 0 for r in mine if r.pool == pool) == 1
            assert sum(r.last == last for r in mine if r.pool == pool) == 1
