"""The greedy planner: Belady's choice, write-once evictions, parameters back home, homes."""

from __future__ import annotations

import attrs
import pytest

from autotm_core import Graph, GraphBuilder, MemorySystem, Pool, TensorKind
from autotm_core.baselines import greedy
from autotm_core.capacity import fast_capacity
from autotm_core.errors import CapacityError
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


def test_evicts_the_farthest_next_use_and_drops_a_clean_copy_for_free(
    cheap_moves: MemorySystem, verifies
) -> None:
    graph = _reuse_graph()
    plan = greedy(graph, cheap_moves, fast_capacity_nbytes=2 * PAGE)
    verifies(plan, graph, cheap_moves, 2 * PAGE)
    # Parameters begin the step at home (pmm): k0 reads u and v there (nothing can be copied
    # before kernel 0). w is fetched for k1, v for k2; u, fetched for k3, needs room: v
    # (never used again) goes rather than w (used at k4), and its clean copy at home makes
    # that free. Nothing is written, so nothing is written back.
    assert plan.moves == (Move("w", "pmm", "dram", 1), Move("v", "pmm", "dram", 2),
                          Move("u", "pmm", "dram", 3))
    assert plan.configs[0] == ("pmm", "pmm", "dram")
    assert all(pools == ("dram", "dram") for pools in plan.configs[1:])
    assert plan.attributes["given_up"] == 0
    assert plan.attributes["homes"] == "slow-first"


def test_no_limit_means_all_fast(mlp: Graph, cheap_moves: MemorySystem, verifies) -> None:
    plan = greedy(mlp, cheap_moves)
    assert plan.moves == ()
    assert {r.pool for r in plan.residencies} == {"dram"}
    assert plan.attributes["homes"] == "all-fast"
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


def _update_graph(*, last: bool) -> Graph:
    """x -> a; a and parameter w -> g; sgd updates w in place; (unless ``last``) a -> c -> y.

    A 2-page parameter ``big`` read by the last kernel keeps the peak above 3 pages.
    """
    b = GraphBuilder("update")
    b.tensor("x", nbytes=PAGE, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=PAGE, kind=TensorKind.PARAMETER)
    b.tensor("big", nbytes=2 * PAGE, kind=TensorKind.PARAMETER)
    b.tensor("a", nbytes=PAGE)
    b.tensor("g", nbytes=0 if last else PAGE, kind=TensorKind.GRADIENT)
    b.kernel("f", op="relu", inputs=["x"], outputs=["a"])
    b.kernel("grad", op="mul", inputs=["a", "w"], outputs=["g"])
    if last:
        b.kernel("sgd", op="sgd", inputs=["w", "g", "big"], outputs=["w"])
        return b.build()
    b.tensor("c", nbytes=PAGE)
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("sgd", op="sgd", inputs=["w", "g"], outputs=["w"])
    b.kernel("h", op="relu", inputs=["a"], outputs=["c"])
    b.kernel("out", op="sum", inputs=["c", "big"], outputs=["y"])
    return b.build()


def test_a_parameter_updated_in_the_fast_pool_is_written_home_after_its_update(
    cheap_moves: MemorySystem, verifies
) -> None:
    graph = _update_graph(last=False)
    plan = greedy(graph, cheap_moves, fast_capacity_nbytes=3 * PAGE)
    verifies(plan, graph, cheap_moves, 3 * PAGE)
    # w begins the step at home; fetched for k1, updated in the fast pool at k2, it is written
    # home before k3 (the copy at home went stale at k2), so the next step finds it current
    # there; that clean copy then makes evicting it for big free.
    assert plan.moves == (Move("w", "pmm", "dram", 1), Move("w", "dram", "pmm", 3),
                          Move("big", "pmm", "dram", 4))
    w = sorted((r.pool, r.first, r.last) for r in plan.residencies if r.tensor == "w")
    assert w == [("dram", 1, 3), ("pmm", 0, 1), ("pmm", 3, 4)]
    assert plan.attributes["written_back"] == 1


def test_the_last_kernel_updates_a_parameter_at_home(cheap_moves: MemorySystem, verifies) -> None:
    graph = _update_graph(last=True)
    plan = greedy(graph, cheap_moves, fast_capacity_nbytes=3 * PAGE)
    verifies(plan, graph, cheap_moves, 3 * PAGE)
    # w was fetched for k1 with its copy at home still clean: the last kernel, which writes
    # it, uses that copy (the next step finds the new value at home) and the fetched one ends.
    assert plan.configs[2][0] == "pmm"
    w = sorted((r.pool, r.first, r.last) for r in plan.residencies if r.tensor == "w")
    assert w == [("dram", 1, 1), ("pmm", 0, 2)]


def _parameters(sizes: list[int]) -> Graph:
    """Parameters of ``sizes`` pages, each read by a kernel of its own."""
    b = GraphBuilder("params")
    for i, size in enumerate(sizes):
        b.tensor(f"p{i}", nbytes=size * PAGE, kind=TensorKind.PARAMETER)
        b.tensor(f"o{i}", nbytes=0, kind=TensorKind.OUTPUT)
        b.kernel(f"k{i}", op="relu", inputs=[f"p{i}"], outputs=[f"o{i}"])
    return b.build()


def _bounded(fast_pages: int, slow_pages: int) -> MemorySystem:
    return MemorySystem("bounded", pools=(Pool("dram", fast_pages * PAGE, 1e11, 1e11),
                                          Pool("pmm", slow_pages * PAGE, 1e10, 1e10)))


def test_homes_fall_back_to_first_touch_where_slow_first_does_not_fit(verifies) -> None:
    graph, system = _parameters([6, 4, 4, 4]), _bounded(10, 8)
    # Slow first: p0 -> pmm (6 of 8), p1 -> dram, p2 -> dram (8 of 10), p3 fits nowhere.
    # First-touch: p0, p1 -> dram (10 of 10), p2, p3 -> pmm (8 of 8).
    plan = greedy(graph, system)
    verifies(plan, graph, system, None)
    assert plan.attributes["homes"] == "first-touch"
    assert {r.tensor: r.pool for r in plan.residencies if r.tensor.startswith("p")} == {
        "p0": "dram", "p1": "dram", "p2": "pmm", "p3": "pmm"}


def test_no_homes_is_one_capacity_error_naming_pool_kernel_and_shortfall() -> None:
    graph, system = _parameters([6, 6, 6]), _bounded(10, 8)
    with pytest.raises(CapacityError) as caught:
        greedy(graph, system)
    assert caught.value.message.startswith("greedy: tensor 'p2'")
    assert "pool 'dram' lacks 8.00 KiB (8192 bytes) at kernel 'k0' (#0)" in caught.value.message


def test_a_tight_slow_pool_is_never_overfilled(cheap_moves: MemorySystem, verifies) -> None:
    """A chain of activations each read twice: the slow pool holds only two of them."""
    b = GraphBuilder("tight")
    b.tensor("x", nbytes=PAGE, kind=TensorKind.INPUT)
    prev = "x"
    for i in range(6):
        b.tensor(f"a{i}", nbytes=PAGE)
        b.kernel(f"f{i}", op="relu", inputs=[prev], outputs=[f"a{i}"])
        prev = f"a{i}"
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("loss", op="sum", inputs=[f"a{i}" for i in range(6)], outputs=["y"])
    graph = b.build()
    system = MemorySystem("tight", pools=(cheap_moves.pools[0],
                                          attrs.evolve(cheap_moves.pools[1],
                                                       capacity_nbytes=2 * PAGE)),
                          links=cheap_moves.links)
    plan = greedy(graph, system, fast_capacity_nbytes=5 * PAGE)
    verifies(plan, graph, system, 5 * PAGE)  # no pool over its capacity, at any kernel
    # pmm is the home of x and a0, then of a1 (x is dead); a2..a5 are homed in dram, and
    # one of a0, a1 is evicted to its home for a5.
    assert plan.attributes["homes"] == "slow-first"
    assert [r.tensor for r in plan.residencies if r.pool == "pmm"] in (["a0"], ["a1"])


def test_three_pools_with_a_bounded_middle_pool(verifies) -> None:
    """The slow pool holds one parameter, the middle one two: the rest are homed in hbm."""
    graph = _parameters([1, 1, 1, 1])
    system = MemorySystem("three", pools=(Pool("hbm", 2 * PAGE, 1e12, 1e12),
                                          Pool("dram", 2 * PAGE, 1e11, 1e11),
                                          Pool("pmm", PAGE, 1e10, 1e10)))
    plan = greedy(graph, system)
    verifies(plan, graph, system, None)
    homes = {r.tensor: r.pool for r in plan.residencies if r.first == 0 and r.tensor[0] == "p"}
    assert sorted(homes.values()) == ["dram", "dram", "hbm", "pmm"]
    # with hbm at 0 the pools together hold less than is live: refused before greedy looks
    with pytest.raises(CapacityError, match="more than all the pools hold together"):
        greedy(graph, system, fast_capacity_nbytes=0)
