"""First-touch NUMA: allocation order, best fit, spilling for life, real offsets."""

from __future__ import annotations

import pytest

from autotm_core import Graph, GraphBuilder, MemorySystem, TensorKind
from autotm_core.baselines import first_touch
from autotm_core.baselines.first_touch import birth_order
from autotm_core.capacity import fast_capacity
from autotm_core.errors import CapacityError

PAGE = 4096


def _chain() -> Graph:
    """x (pre-existing) -> a -> b -> c; each dies after its reader."""
    b = GraphBuilder("chain")
    b.tensor("x", nbytes=2 * PAGE, kind=TensorKind.INPUT)
    for name, size in (("a", 2 * PAGE), ("b", 3 * PAGE), ("c", PAGE)):
        kind = TensorKind.OUTPUT if name == "c" else TensorKind.ACTIVATION
        b.tensor(name, nbytes=size, kind=kind)
    b.kernel("ka", op="relu", inputs=["x"], outputs=["a"])
    b.kernel("kb", op="relu", inputs=["a"], outputs=["b"])
    b.kernel("kc", op="relu", inputs=["b"], outputs=["c"])
    return b.build()


def test_births_follow_execution_order(cnn: Graph) -> None:
    order = birth_order(cnn)
    live = cnn.liveness
    assert sorted(order) == [t for t in range(len(cnn.tensors)) if live.last[t] >= 0]
    assert list(live.first[order]) == sorted(live.first[order])


def test_what_does_not_fit_spills_for_life_and_freed_space_is_reused(
    optane: MemorySystem, verifies
) -> None:
    graph = _chain()
    plan = first_touch(graph, optane, fast_capacity_nbytes=4 * PAGE)
    where = {r.tensor: (r.pool, r.offset, r.first, r.last) for r in plan.residencies}
    assert where["x"] == ("dram", 0, 0, 0)
    assert where["a"] == ("dram", 2 * PAGE, 0, 1)
    assert where["b"][0] == "pmm"  # 3 pages never fit beside a
    assert where["c"] == ("dram", 0, 2, 2)  # x's block, freed after kernel 0
    assert plan.moves == ()
    assert plan.attributes["spilled_tensors"] == 1
    verifies(plan, graph, optane, 4 * PAGE)


def test_workspace_is_kept_free(optane: MemorySystem, verifies) -> None:
    b = GraphBuilder("ws")
    b.tensor("x", nbytes=PAGE, kind=TensorKind.INPUT)
    b.tensor("y", nbytes=PAGE, kind=TensorKind.OUTPUT)
    b.kernel("k", op="conv2d", inputs=["x"], outputs=["y"], workspace_nbytes=PAGE)
    graph = b.build()
    plan = first_touch(graph, optane, fast_capacity_nbytes=2 * PAGE)
    assert {r.tensor: r.pool for r in plan.residencies} == {"x": "dram", "y": "pmm"}
    verifies(plan, graph, optane, 2 * PAGE)


@pytest.mark.parametrize("ratio", ["0:1", "1:1", "4:1", "8:1"])
def test_plans_verify_with_offsets(cnn: Graph, optane: MemorySystem, ratio: str, verifies) -> None:
    capacity = fast_capacity(cnn, ratio=ratio)
    plan = first_touch(cnn, optane, fast_capacity_nbytes=capacity)
    assert plan.has_offsets
    assert all(r.offset is not None and r.offset % PAGE == 0
               for r in plan.residencies if r.pool == "dram")
    verifies(plan, cnn, optane, capacity)


def test_no_free_block_names_the_tensor_the_kernel_and_the_shortfall(optane: MemorySystem) -> None:
    graph = _chain()
    system = optane.with_capacity("pmm", 2 * PAGE)
    with pytest.raises(CapacityError) as caught:
        first_touch(graph, system, fast_capacity_nbytes=4 * PAGE)
    assert caught.value.message == (
        "first-touch: tensor 'b' (12.00 KiB) finds no free block at kernel 'kb' (#1) in any pool "
        "it may live in: pool 'dram' has 8.00 KiB free, at most 8.00 KiB in one block: 4096 "
        "bytes short; pool 'pmm' has 8.00 KiB free, at most 8.00 KiB in one block: 4096 bytes "
        "short")
