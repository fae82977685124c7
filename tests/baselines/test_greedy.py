"""The greedy planner: Belady's choice, write-once evictions, slow reads of huge tensors."""

from __future__ import annotations

import pytest

from autotm_core import Graph, GraphBuilder, MemorySystem, TensorKind
from autotm_core.baselines import greedy
from autotm_core.capacity import fast_capacity
from autotm_core.plans import Move

PAGE = 4096


def _reuse_graph() -> Graph:
    """u, v, w exist before the step; kernels read (u, v), w, v, u, w, u in that order."""
    b = GraphBuilder("reuse")
    for name in ("u", "v", "w"):
        b.tensor(name, nbytes=PAGE, kind=TensorKind.PARAMETER)
    for i, reads in enumerate((["u", "v"], ["w"], ["v"], ["u"], ["w"], ["u"])):
        out = b.tensor(f"o{i}", nbytes=0, kind=TensorKind.OUTPUT)
        b.kernel(f"k{i}", op="relu", inputs=reads, outputs=[out])
    return b.build()


def test_evicts_the_farthest_next_use_and_writes_it_once(
    cheap_moves: MemorySystem, verifies
) -> None:
    graph = _reuse_graph()
    plan = greedy(graph, cheap_moves, fast_capacity_nbytes=2 * PAGE)
    verifies(plan, graph, cheap_moves, 2 * PAGE)
    # k1 needs w, but u and v were both touched by k0: writing either out before k1 would
    # hold it in both pools at that boundary beside w, so k1 reads w in slow memory and
    # nothing is evicted for nothing. k4 needs w again: v (never used again) goes rather than
    # u (used at k5), written out one boundary early, where k3 does not touch it.
    assert plan.moves == (Move("v", "dram", "pmm", 3), Move("w", "pmm", "dram", 4))
    assert plan.configs[1] == ("pmm", "dram")
    assert plan.attributes["given_up"] == 1


def test_no_limit_means_no_evictions(mlp: Graph, cheap_moves: MemorySystem, verifies) -> None:
    plan = greedy(mlp, cheap_moves)
    assert all(m.target == "dram" for m in plan.moves)  # only first fetches of parameters
    assert all(pools == tuple("dram" for _ in pools) for pools in plan.configs)
    verifies(plan, mlp, cheap_moves, None)


def test_a_tensor_larger_than_the_pool_is_used_in_slow_memory(
    optane: MemorySystem, verifies
) -> None:
    b = GraphBuilder("huge")
    b.tensor("x", nbytes=PAGE, kind=TensorKind.INPUT)
    b.tensor("big", nbytes=8 * PAGE)
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("make", op="fill", inputs=["x"], outputs=["big"])
    b.kernel("use", op="sum", inputs=["big", "x"], outputs=["y"])
    graph = b.build()
    plan = greedy(graph, optane, fast_capacity_nbytes=4 * PAGE)
    assert plan.configs == (("dram", "pmm"), ("pmm", "dram", "dram"))
    assert not any(m.tensor == "big" for m in plan.moves)
    verifies(plan, graph, optane, 4 * PAGE)


def test_eviction_before_reuse_then_fetch(cheap_moves: MemorySystem, verifies) -> None:
    """a is produced, pushed out by b, and fetched back for its later use."""
    b = GraphBuilder("fetch")
    b.tensor("x", nbytes=PAGE, kind=TensorKind.INPUT)
    for name in ("a", "b", "c"):
        b.tensor(name, nbytes=PAGE)
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("ka", op="f", inputs=["x"], outputs=["a"])
    b.kernel("kb", op="f", inputs=["x"], outputs=["b"])
    b.kernel("kc", op="f", inputs=["b"], outputs=["c"])
    b.kernel("ky", op="f", inputs=["a", "c"], outputs=["y"])
    graph = b.build()
    plan = greedy(graph, cheap_moves, fast_capacity_nbytes=2 * PAGE)
    verifies(plan, graph, cheap_moves, 2 * PAGE)
    assert plan.moves == (Move("a", "dram", "pmm", 1), Move("a", "pmm", "dram", 3))
    assert plan.configs == (("dram", "dram"),) * 3 + (("dram", "dram", "dram"),)


@pytest.mark.parametrize("ratio", ["1:1", "4:1", "8:1", "30:1"])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_plans_verify_on_the_examples(
    name: str, ratio: str, optane: MemorySystem, verifies, request: pytest.FixtureRequest
) -> None:
    graph = request.getfixturevalue(name)
    capacity = fast_capacity(graph, ratio=ratio)
    plan = greedy(graph, optane, fast_capacity_nbytes=capacity)
    verifies(plan, graph, optane, capacity)
    assert plan.attributes["moved_nbytes"] == sum(
        graph.tensor(m.tensor).nbytes for m in plan.moves
    )


def test_a_fetch_that_cannot_repay_its_copy_is_not_made(optane: MemorySystem) -> None:
    """On Optane a copy costs more than 2 reads from PMM save: w, used twice, is never fetched."""
    plan = greedy(_reuse_graph(), optane, fast_capacity_nbytes=2 * PAGE)
    assert not any(m.tensor == "w" and m.target == "dram" for m in plan.moves)
    assert plan.configs[1] == ("pmm", "dram")
    assert plan.configs[4] == ("pmm", "dram")
