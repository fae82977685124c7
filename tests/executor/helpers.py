"""Small graphs, systems and hand-made plans with moves for the executor tests."""

from __future__ import annotations

from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.memory import MemorySystem, Pool
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan

MIB = 1 << 20


def two_pools(*, fast_nbytes: int | None = 8 * MIB, fast_node: int | None = 0,
              slow_node: int | None = 0) -> MemorySystem:
    """A dram pool (bounded) and a pmm pool (unbounded), both on node 0 unless told."""
    return MemorySystem(
        name="test-two",
        pools=(Pool("dram", fast_nbytes, 10e9, 10e9, numa_node=fast_node),
               Pool("pmm", None, 5e9, 5e9, numa_node=slow_node)),
        flops_per_second=2e9,
    )


def diamond(*, nbytes: int = MIB, flops: float = 1e5):
    """x -> a (k0); x -> b (k1); a, b -> y (k2); a, y -> z (k3)."""
    b = GraphBuilder("diamond")
    b.tensor("x", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("a", nbytes=nbytes)
    b.tensor("b", nbytes=nbytes + 13)  # a size that is not a whole number of words
    b.tensor("y", nbytes=nbytes)
    b.tensor("z", nbytes=4, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="make", inputs=["x"], outputs=["a"], flops=flops)
    b.kernel("k1", op="mid", inputs=["x"], outputs=["b"], flops=flops)
    b.kernel("k2", op="use", inputs=["a", "b"], outputs=["y"], flops=flops)
    b.kernel("k3", op="end", inputs=["a", "y"], outputs=["z"], flops=flops)
    return b.build()


def diamond_plan(graph, system, *, kind: MoveKind = MoveKind.SYNC, offsets: bool = True) -> Plan:
    """``a`` is written to pmm, kept there, and moved to dram (before k2, or during k1)."""
    n = graph.tensor("x").nbytes
    at = 1 if kind is MoveKind.ASYNC else 2

    def off(i: int) -> int | None:
        return i * 2 * n if offsets else None

    residencies = [
        Residency("x", "dram", 0, 1, off(0)),
        Residency("a", "pmm", 0, 3),
        Residency("a", "dram", at, 3, off(1)),
        Residency("b", "dram", 1, 2, off(2)),
        Residency("y", "dram", 2, 3, off(0)),
        Residency("z", "pmm", 3, 3),
    ]
    moves = [Move("a", "pmm", "dram", at, kind)]
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="test/diamond")


def overlap_graph(*, nbytes: int, flops: float):
    """k0 writes ``a``; k1 computes for ``flops`` on a small tensor; k2 reads ``a``."""
    b = GraphBuilder("overlap")
    b.tensor("a", nbytes=nbytes)
    b.tensor("s", nbytes=4096)
    b.tensor("out", nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="make", outputs=["a"], flops=0.0)
    b.kernel("k1", op="slow", outputs=["s"], flops=flops)
    b.kernel("k2", op="use", inputs=["a", "s"], outputs=["out"], flops=0.0)
    return b.build()


def overlap_plan(graph, system) -> Plan:
    """``a`` is written to pmm at k0 and moved to dram during k1, overlapping k1's compute."""
    n = graph.tensor("a").nbytes
    residencies = [
        Residency("a", "pmm", 0, 1),
        Residency("a", "dram", 1, 2, 0),
        Residency("s", "dram", 1, 2, n),
        Residency("out", "dram", 2, 2, n + 4096),
    ]
    moves = [Move("a", "pmm", "dram", 1, MoveKind.ASYNC)]
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="test/overlap")


def sgd_step(*, nbytes: int = 64 * 1024, metric: bool = False):
    """One training step: ``w`` read forward and backward, then updated in place.

    k0: x, w -> a; k1: a -> loss, ga; k2: ga, w -> dw; k3: w, dw -> w (in place);
    with ``metric``, k4: loss -> metric (larger than w) after the update.
    """
    b = GraphBuilder("sgd-step")
    b.tensor("x", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=nbytes + 24, kind=TensorKind.PARAMETER)
    b.tensor("a", nbytes=nbytes)
    b.tensor("loss", nbytes=8, kind=TensorKind.OUTPUT)
    b.tensor("ga", nbytes=nbytes, kind=TensorKind.GRADIENT)
    b.tensor("dw", nbytes=nbytes + 24, kind=TensorKind.GRADIENT)
    b.kernel("fwd", op="layer", inputs=["x", "w"], outputs=["a"], flops=1e4)
    b.kernel("loss", op="loss", inputs=["a"], outputs=["loss", "ga"], flops=1e4)
    b.kernel("bwd", op="layer_backward", inputs=["ga", "w"], outputs=["dw"], flops=1e4)
    b.kernel("sgd", op="sgd", inputs=["w", "dw"], outputs=["w"], flops=1e4)
    if metric:
        b.tensor("metric", nbytes=2 * nbytes, kind=TensorKind.OUTPUT)
        b.kernel("metric", op="metric", inputs=["loss"], outputs=["metric"], flops=1e4)
    return b.build()


def sgd_plan(graph, system, *, stale_copy: bool = False) -> Plan:
    """``w`` leaves dram after ``fwd`` for pmm and comes back before ``bwd``; ``sgd`` updates it
    in dram. Everything else lives in dram (``loss`` in pmm). No offsets: assign them.

    ``stale_copy``: ``w`` begins in pmm as well, and its copy there lives to the end without
    the update: not a steady state (the next step would copy the old value back from pmm).
    """
    residencies = [
        Residency("x", "dram", 0, 0),
        Residency("w", "dram", 0, 0),
        Residency("w", "pmm", 0, 3) if stale_copy else Residency("w", "pmm", 1, 2),
        Residency("w", "dram", 2, 3),
        Residency("a", "dram", 0, 1),
        Residency("loss", "pmm", 1, 3),
        Residency("ga", "dram", 1, 2),
        Residency("dw", "dram", 2, 3),
    ]
    moves = [*(() if stale_copy else [Move("w", "dram", "pmm", 1)]), Move("w", "pmm", "dram", 2)]
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="test/sgd")



def pmm_home_plan(graph, system) -> Plan:
    """For ``sgd_step(metric=True)``: ``w`` lives in pmm, is brought to dram before ``bwd``,
    updated there, and copied back to pmm before ``metric``: it begins and ends the step in
    pmm (unbounded: the executor gives the offsets) in two residencies."""
    residencies = [
        Residency("x", "dram", 0, 0, 0),
        Residency("w", "pmm", 0, 1),
        Residency("w", "dram", 2, 3, 0),
        Residency("w", "pmm", 4, 4),
        Residency("a", "dram", 0, 1, MIB),
        Residency("loss", "pmm", 1, 4),
        Residency("ga", "dram", 1, 2, 2 * MIB),
        Residency("dw", "dram", 2, 3, MIB),
        Residency("metric", "pmm", 4, 4),
    ]
    moves = [Move("w", "pmm", "dram", 2), Move("w", "dram", "pmm", 4)]
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="test/home")


def recompute_step(*, nbytes: int = 64 * 1024):
    """A step whose backward reads ``e`` again after a gap: ``e`` may be dropped and
    recomputed from ``x`` by rerunning ``f1`` (into ``a``) and ``f2`` (into ``e``).

    f1: x -> a; f2: a -> e; mm: e, w -> c; head: c -> loss, dc; back: dc, e, x -> dw;
    sgd: w, dw -> w (in place). ``head`` is the peak (``c`` is twice ``nbytes``); with ``e``
    dropped there, the boundary before ``back`` holds ``a`` (a quarter) instead of ``c``.
    """
    b = GraphBuilder("recompute-step")
    b.tensor("x", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=nbytes + 24, kind=TensorKind.PARAMETER)
    b.tensor("a", nbytes=nbytes // 4)
    b.tensor("e", nbytes=nbytes + 8)
    b.tensor("c", nbytes=2 * nbytes)
    b.tensor("loss", nbytes=8, kind=TensorKind.OUTPUT)
    b.tensor("dc", nbytes=nbytes, kind=TensorKind.GRADIENT)
    b.tensor("dw", nbytes=nbytes + 24, kind=TensorKind.GRADIENT)
    b.kernel("f1", op="relu", inputs=["x"], outputs=["a"], flops=1e4, workspace_nbytes=4096)
    b.kernel("f2", op="gelu", inputs=["a"], outputs=["e"], flops=1e4)
    b.kernel("mm", op="matmul", inputs=["e", "w"], outputs=["c"], flops=1e4)
    b.kernel("head", op="loss", inputs=["c"], outputs=["loss", "dc"], flops=1e4)
    b.kernel("back", op="matmul_backward", inputs=["dc", "e", "x"], outputs=["dw"], flops=1e4)
    b.kernel("sgd", op="sgd", inputs=["w", "dw"], outputs=["w"], flops=1e4)
    return b.build()


def recompute_plan(graph, system, *, x_moved: bool = False) -> Plan:
    """``e`` is dropped after ``mm`` and recomputed before ``back``: ``f1`` runs again (its
    output ``a`` dropped again once the boundary's reruns are done), then ``f2`` (restoring
    ``e`` in dram). ``x_moved``: ``x`` waits in pmm meanwhile and comes back to dram by a
    synchronous move before ``back``, where the rerun of ``f1`` reads it. No offsets."""
    from autotm_core.plans import Rerun

    k = graph.kernel_index
    back = k["back"]
    x = ([Residency("x", "dram", 0, 0), Residency("x", "pmm", 1, back - 1),
          Residency("x", "dram", back, back)] if x_moved else [Residency("x", "dram", 0, back)])
    residencies = [
        *x,
        Residency("w", "dram", 0, k["sgd"]),
        Residency("a", "dram", 0, 1),
        Residency("e", "dram", 1, 2),
        Residency("e", "dram", back, back),
        Residency("c", "dram", 2, 3),
        Residency("loss", "pmm", 3, k["sgd"]),
        Residency("dc", "dram", 3, back),
        Residency("dw", "dram", back, k["sgd"]),
    ]
    moves = [Move("x", "dram", "pmm", 1), Move("x", "pmm", "dram", back)] if x_moved else []
    return make_plan(graph, system, residencies=residencies, moves=moves,
                     reruns=[Rerun(k["f1"], back), Rerun(k["f2"], back)],
                     planner="test/recompute")
