"""All-fast and all-slow: where everything lives, and the errors when it cannot."""

from __future__ import annotations

import pytest

from autotm_core import Graph, Kernel, MemorySystem, Tensor, TensorKind
from autotm_core.baselines import all_fast, all_slow, run_baseline
from autotm_core.capacity import fast_capacity
from autotm_core.errors import CapacityError, GraphError, UsageError


def test_all_fast_puts_everything_in_the_fast_pool(
    mlp: Graph, optane: MemorySystem, verifies
) -> None:
    plan = all_fast(mlp, optane)
    assert {r.pool for r in plan.residencies} == {"dram"}
    assert plan.moves == ()
    assert plan.attributes["fast_peak_nbytes"] == mlp.liveness.peak_nbytes
    verifies(plan, mlp, optane, None)
    exact = mlp.liveness.peak_nbytes
    verifies(all_fast(mlp, optane, fast_capacity_nbytes=exact), mlp, optane, exact)


def test_all_fast_says_by_how_much_and_where_it_overflows(mlp: Graph, optane: MemorySystem) -> None:
    peak, kernel = mlp.liveness.peak_nbytes, mlp.kernels[mlp.liveness.peak_kernel].name
    with pytest.raises(CapacityError) as caught:
        all_fast(mlp, optane, fast_capacity_nbytes=peak - 100)
    assert f"{kernel!r}" in caught.value.message
    assert "(100 bytes) too much" in caught.value.message
    assert str(peak) in caught.value.hint


def test_all_slow_keeps_only_workspace_in_fast_memory(
    cnn: Graph, optane: MemorySystem, verifies
) -> None:
    capacity = int(cnn.liveness.workspace_nbytes.max())
    plan = all_slow(cnn, optane, fast_capacity_nbytes=capacity)
    assert {r.pool for r in plan.residencies} == {"pmm"}
    verifies(plan, cnn, optane, capacity)
    with pytest.raises(CapacityError, match="workspace"):
        all_slow(cnn, optane, fast_capacity_nbytes=capacity - 1)


def test_pool_restrictions_are_respected(optane: MemorySystem, verifies) -> None:
    graph = Graph("pinned", [Tensor("x", 100, TensorKind.INPUT, pools=("dram",)),
                             Tensor("y", 100, pools=("pmm",))],
                  [Kernel("k", "relu", ["x"], ["y"])])
    fast, slow = all_fast(graph, optane), all_slow(graph, optane, fast_capacity_nbytes=100)
    assert {r.tensor: r.pool for r in fast.residencies} == {"x": "dram", "y": "pmm"}
    assert {r.tensor: r.pool for r in slow.residencies} == {"x": "dram", "y": "pmm"}
    verifies(fast, graph, optane, None)
    verifies(slow, graph, optane, 100)
    with pytest.raises(CapacityError, match="all-slow"):
        all_slow(graph, optane, fast_capacity_nbytes=99)


def test_registry_runs_every_baseline_by_name(mlp: Graph, optane: MemorySystem) -> None:
    capacity = fast_capacity(mlp, ratio="1:1")
    for name in ("all-slow", "first-touch", "2lm", "greedy"):
        plan = run_baseline(name, mlp, optane, fast_capacity_nbytes=capacity)
        assert plan.planner == f"baseline/{name}"
        assert plan.capacities["dram"] == capacity
    with pytest.raises(UsageError, match="no baseline called 'belady'"):
        run_baseline("belady", mlp, optane)


@pytest.mark.parametrize("name", ["all-fast", "all-slow", "first-touch", "2lm", "greedy"])
def test_a_graph_without_kernels_is_refused(name: str, optane: MemorySystem) -> None:
    graph = Graph("empty", [Tensor("w", 64, TensorKind.PARAMETER)], [])
    with pytest.raises(GraphError, match="graph 'empty' has no kernels"):
        run_baseline(name, graph, optane)
