"""The asynchronous ILP against the best plan the rules allow when copies span kernels
(:mod:`.spanning`): on steps where a prefetch must start kernels ahead to hide, the spanning
optimum beats the one-kernel one and the ILP finds it; on random tiny steps they agree too;
and the ILP is never better than the rules' optimum."""

from __future__ import annotations

import functools

import pytest

from autotm_core.costs import resolve_costs
from autotm_core.ir import Graph, GraphBuilder
from autotm_core.memory import CopyLink, MemorySystem, Pool

from .exhaustive import optimum
from .harness import ilp_outcome
from .spanning import spanning_optimum
from .tiny import random_case


def prefetch_step(gap: int) -> Graph:
    """``w`` made by k0 and read after ``gap`` kernels of 100 ns each (on 1e12 flop/s); the
    first of them needs a workspace that leaves no room for ``w`` in the fast pool."""
    g = GraphBuilder("prefetch")
    g.tensor("x", nbytes=100, kind="input")
    g.tensor("w", nbytes=1000)
    g.tensor("s", nbytes=8, pools=["fast"])
    g.tensor("loss", nbytes=8, kind="output", pools=["fast"])
    g.kernel("k0", op="layer", inputs=["x"], outputs=["w", "s"], flops=1e5)
    for i in range(gap):
        g.kernel(f"g{i}", op="layer", inputs=["s"], flops=1e5,
                 workspace_nbytes=5000 if i == 0 else 0)
    g.kernel("use", op="layer", inputs=["w"], outputs=["loss"], flops=1e5)
    return g.build()


@functools.cache
def slow_reads() -> MemorySystem:
    """A fast pool of 5,500 bytes; the slow pool is read at 2 GB/s, copied from at 4 GB/s
    overlapping kernels (w's fetch: 250 ns, two and a half kernels)."""
    return MemorySystem(name="slow-reads", pools=(
        Pool("fast", 5500, 100e9, 100e9), Pool("slow", None, 2e9, 2e9)),
        links=(CopyLink("slow", "fast", 8e9, 4e9), CopyLink("fast", "slow", 6e9, 3e9)))


def _agree(graph: Graph, system: MemorySystem) -> tuple[float, float, float]:
    """(one-kernel optimum, spanning optimum, the ILP's plan), after checking that the ILP's
    plan is the spanning optimum."""
    costs = resolve_costs(graph, system)
    one = optimum(graph, system, costs, formulation="asynchronous")
    best, plan = spanning_optimum(graph, system, costs)
    ilp = ilp_outcome(graph, system, "asynchronous")
    assert one is not None and plan is not None and ilp is not None
    assert best <= one.seconds * (1 + 1e-9)
    assert ilp.step_seconds == pytest.approx(best, rel=1e-9), (
        f"the ILP's {ilp.step_seconds} against the rules' {best}: {plan.moves}")
    return one.seconds, best, ilp.step_seconds


@pytest.mark.highs
@pytest.mark.parametrize("gap", [3, 4])
def test_a_prefetch_spanning_kernels_is_found(gap: int) -> None:
    one, best, _ = _agree(prefetch_step(gap), slow_reads())
    assert best < one * 0.95  # the copy issued kernels ahead hides what one kernel cannot


@pytest.mark.highs
@pytest.mark.parametrize("seed", [1, 2, 3, 7, 23, 37])
def test_on_random_tiny_steps_the_ilp_is_the_spanning_optimum(seed: int) -> None:
    case = random_case(seed, kernels=(3, 4), tensors=(2, 3))
    _agree(case.graph, case.system)
