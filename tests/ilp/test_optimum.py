"""The ILP's optimum equals the best plan found by exhaustive enumeration."""

from __future__ import annotations

import pytest

from autotm_core.costs import roofline_costs
from autotm_core.costs.model import TableCosts
from autotm_core.errors import CapacityError
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.memory import MemorySystem, Pool
from autotm_core.presets import preset

from .enumerate_plans import best_plan_seconds

MiB = 1 << 20


def tiny_graph():
    b = GraphBuilder("tiny")
    b.tensor("x", nbytes=4 * MiB, kind=TensorKind.INPUT)
    b.tensor("a", nbytes=8 * MiB)
    b.tensor("b", nbytes=2 * MiB)
    b.tensor("y", nbytes=1 * MiB, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="layer", inputs=["x"], outputs=["a"], flops=1e8)
    b.kernel("k1", op="layer", inputs=["a"], outputs=["b"], flops=1e9)
    b.kernel("k2", op="layer", inputs=["b"], outputs=["y"], flops=1e7)
    b.kernel("k3", op="layer", inputs=["a", "y"], outputs=["y"], flops=1e8)
    return b.build()


def system_with(capacity):
    return preset("optane-2019").with_capacity("dram", capacity)


def two_kernel_graph():
    b = GraphBuilder("two")
    b.tensor("x", nbytes=4 * MiB, kind=TensorKind.INPUT)
    b.tensor("a", nbytes=8 * MiB)
    b.tensor("y", nbytes=2 * MiB, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="layer", inputs=["x"], outputs=["a"], flops=1e8)
    b.kernel("k1", op="layer", inputs=["a", "x"], outputs=["y"], flops=1e9)
    return b.build()


def three_pools(capacity):
    return MemorySystem(
        name="three",
        pools=(Pool("hbm", capacity, 1e12, 1e12, 1e-7), Pool("dram", 10 * MiB, 1e11, 1e11, 1e-7),
               Pool("pmm", None, 3e10, 1e10, 3e-7)),
    )


def table_costs(graph, system):
    separable = roofline_costs(graph, system)
    return TableCosts(n_pools=len(system.pools), kernel_ptr=graph.liveness.kernel_ptr,
                      tables=tuple(separable.table(k) for k in range(len(graph.kernels))))


# Enumeration is slow (every plan is built, verified and simulated): the sync and async
# cases each take one capacity that forces moves; static, cheap, takes all three.
@pytest.mark.highs
@pytest.mark.parametrize(("formulation", "capacity"), [
    ("static", 10 * MiB), ("static", 12 * MiB), ("static", 16 * MiB),
    ("synchronous", 10 * MiB), ("asynchronous", 12 * MiB),
])
@pytest.mark.slow
def test_matches_enumeration(formulation, capacity):
    graph = tiny_graph()
    system = system_with(capacity)
    costs = roofline_costs(graph, system)
    best = best_plan_seconds(graph, system, costs, formulation)
    if best is None:
        with pytest.raises(CapacityError):
            plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
        return
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
    assert result.step_seconds == pytest.approx(best, rel=1e-6)
    assert result.plan.attributes["objective_seconds"] == pytest.approx(result.step_seconds,
                                                                        rel=1e-6)


@pytest.mark.highs
def test_formulations_are_ordered():
    graph = tiny_graph()
    system = system_with(10 * MiB)
    times = {f: plan_graph(graph, system, formulation=f, relative_gap=0.0).step_seconds
             for f in ("static", "synchronous", "asynchronous")}
    assert times["asynchronous"] <= times["synchronous"] * (1 + 1e-9)
    assert times["synchronous"] <= times["static"] * (1 + 1e-9)


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
def test_table_costs_match_enumeration(formulation):
    """Per-configuration binaries give the optimum of every plan, as the separable form."""
    graph = two_kernel_graph()
    system = system_with(10 * MiB)
    costs = table_costs(graph, system)
    best = best_plan_seconds(graph, system, costs, formulation)
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0, costs=costs)
    assert result.n_binaries > plan_graph(graph, system, formulation=formulation,
                                          relative_gap=0.0).n_binaries
    assert result.step_seconds == pytest.approx(best, rel=1e-6)


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous"])
@pytest.mark.parametrize("capacity", [6 * MiB, 10 * MiB])
def test_three_pools_match_enumeration(formulation, capacity):
    graph = two_kernel_graph()
    system = three_pools(capacity)
    costs = roofline_costs(graph, system)
    best = best_plan_seconds(graph, system, costs, formulation)
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
    assert best is not None
    assert result.step_seconds == pytest.approx(best, rel=1e-6)


@pytest.mark.highs
def test_reductions_keep_the_optimum_on_the_tiny_graph():
    graph = tiny_graph()
    system = system_with(10 * MiB)
    full = plan_graph(graph, system, relative_gap=0.0, options=FormulationOptions(reduce=False))
    reduced = plan_graph(graph, system, relative_gap=0.0)
    assert reduced.n_variables < full.n_variables
    assert reduced.step_seconds == pytest.approx(full.step_seconds, rel=1e-9)
