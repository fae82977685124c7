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
