"""The ILP's optimum equals the best plan found by exhaustive enumeration."""

from __future__ import annotations

import pytest

from autotm_core.costs import roofline_costs
from autotm_core.errors import CapacityError
from autotm_core.ilp.planner import plan_graph
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.memory import preset

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


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
@pytest.mark.parametrize("capacity", [10 * MiB, 12 * MiB, 16 * MiB])
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
