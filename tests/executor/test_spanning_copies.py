"""Copies spanning kernels, run for real: joined only where their target is first needed,
the bytes every kernel reads the same as in the one-pool replay."""

from __future__ import annotations

import pytest
from tests.executor.helpers import diamond, two_pools
from tests.plans.random_spans import random_spanning_plan

from autotm_core.addresses import assign_offsets
from autotm_core.examples.networks import training_chain
from autotm_core.executor import execute
from autotm_core.plans import Move, MoveKind, Residency, make_plan, verify_plan


def spanning_diamond():  # type: ignore[no-untyped-def]
    """``a`` written to pmm at k0, copied to dram from k1 until k3: k2 reads it in pmm."""
    graph, system = diamond(), two_pools(fast_nbytes=None)
    plan = make_plan(graph, system, planner="test/spanning", residencies=[
        Residency("x", "dram", 0, 1), Residency("a", "pmm", 0, 3),
        Residency("a", "dram", 1, 3), Residency("b", "dram", 1, 2),
        Residency("y", "dram", 2, 3), Residency("z", "pmm", 3, 3),
    ], moves=[Move("a", "pmm", "dram", 1, MoveKind.ASYNC, until=3)])
    return plan, graph, system


def test_a_spanning_copy_is_joined_where_its_target_is_first_read():
    from autotm_core.executor.layout import plan_layout
    from autotm_core.executor.program import build_program

    plan, graph, system = spanning_diamond()
    assert verify_plan(plan, graph, system) == []
    assert plan.configs[2][0] == "pmm" and plan.configs[3][0] == "dram"
    program = build_program(plan, graph, plan_layout(plan, graph, system), flops=[1.0] * 4)
    assert [list(j) for j in program.joins] == [[], [], [], [0], []]


def test_a_spanning_copy_runs_and_matches():
    plan, graph, system = spanning_diamond()
    report = execute(plan, graph, system, repeat=2)
    assert report.check is not None and report.check.matches
    assert report.async_nbytes == graph.tensor("a").nbytes


@pytest.mark.parametrize("seed", range(4))
def test_random_spanning_plans_run_and_match(seed: int):
    graph = training_chain(2, base_nbytes=64 * 1024)
    system = two_pools(fast_nbytes=4 * graph.liveness.peak_nbytes)
    plan = random_spanning_plan(graph, system, seed, move_rate=0.5)
    assert any(m.spans_kernels for m in plan.moves)
    placed = assign_offsets(plan, graph, system).plan
    assert verify_plan(placed, graph, system) == []
    report = execute(placed, graph, system, repeat=1)
    assert report.check is not None and report.check.matches
