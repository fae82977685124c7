"""Executing plans for real: checksums, moves that really copy, overlap, errors before running."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from tests.executor.helpers import (
    MIB,
    diamond,
    diamond_plan,
    overlap_graph,
    overlap_plan,
    two_pools,
)

from autotm_core.baselines import run_baseline
from autotm_core.errors import ExecutionError, NumaError, PlanError
from autotm_core.examples.networks import training_chain
from autotm_core.executor import ReplayKernels, execute
from autotm_core.plans import MoveKind, Residency


@pytest.mark.parametrize("kind", list(MoveKind))
def test_plan_with_moves_matches_the_one_pool_replay(kind):
    graph, system = diamond(), two_pools()
    report = execute(diamond_plan(graph, system, kind=kind), graph, system, repeat=2)
    assert report.check is not None and report.check.matches
    assert report.final_digests.keys() == {"z"}
    assert report.sync_nbytes == (MIB if kind is MoveKind.SYNC else 0)
    assert report.async_nbytes == (MIB if kind is MoveKind.ASYNC else 0)
    assert report.same_memory and any("same memory" in note for note in report.notes)
    assert [p.node for p in report.pools] == [0, 0]
    assert all(p.pages_on_node == p.sampled_pages > 0 for p in report.pools)
    assert report.measured_seconds.shape == report.predicted_seconds.shape == (4,)
    assert (report.measured_seconds > 0).all() and report.predicted_step_seconds > 0


@pytest.mark.parametrize("kind", list(MoveKind))
def test_corrupting_the_source_before_the_move_changes_the_bytes(kind):
    graph, system = diamond(), two_pools()

    def corrupt(k, view):
        if k == 0:  # a was just written to pmm; the move has not copied it yet
            view("a", "pmm", 0)[:64] ^= 0xFF

    report = execute(diamond_plan(graph, system, kind=kind), graph, system, repeat=1,
                     after_kernel=corrupt)
    assert not report.check.matches
    assert report.check.first_kernel == 2  # k2 is the first to read the copy in dram
    assert report.check.tensors == ("z",)


def test_corrupting_the_source_after_the_move_changes_nothing():
    graph, system = diamond(), two_pools()

    def corrupt(k, view):
        if k == 2:  # k3 reads a again, from the dram copy made before k2
            view("a", "pmm", 2)[:] = 0

    report = execute(diamond_plan(graph, system), graph, system, repeat=1, after_kernel=corrupt)
    assert report.check.matches


def test_corrupting_the_copy_in_use_is_detected():
    graph, system = diamond(), two_pools()

    def corrupt(k, view):
        if k == 2:
            view("a", "dram", 2)[-1] ^= 1

    report = execute(diamond_plan(graph, system), graph, system, repeat=1, after_kernel=corrupt)
    assert report.check.first_kernel == 3 and not report.check.matches


def test_first_touch_plan_of_a_training_chain_runs_and_matches():
    graph = training_chain(3, base_nbytes=64 * 1024)
    system = two_pools(fast_nbytes=graph.liveness.peak_nbytes // 2)
    plan = run_baseline("first-touch", graph, system,
                        fast_capacity_nbytes=graph.liveness.peak_nbytes // 2)
    report = execute(plan, graph, system, repeat=2)
    assert report.check.matches
    assert report.pools[0].arena_nbytes == graph.liveness.peak_nbytes // 2
    assert report.step_seconds.shape == report.step_on_cpu_seconds.shape == (2,)
    assert (report.step_on_cpu_seconds > 0).all() and report.on_cpu_fraction > 0
    assert report.final_digests.keys() >= {"loss", "w0", "w1", "w2"}


@pytest.mark.slow
def test_async_copy_overlaps_a_slow_kernel():
    graph = overlap_graph(nbytes=48 * MIB, flops=4e8)
    system = two_pools(fast_nbytes=64 * MIB)
    report = execute(overlap_plan(graph, system), graph, system, repeat=3)
    assert report.check.matches
    serial = float(report.kernel_seconds.sum()) + report.async_copy_seconds
    assert report.step_seconds.min() < serial


def test_a_missing_node_is_a_clear_error():
    graph = diamond()
    system = two_pools(slow_node=57)
    with pytest.raises(NumaError, match=r"pool 'pmm': NUMA node 57 does not exist.*here are 0"):
        execute(diamond_plan(graph, system), graph, system, repeat=1)


def test_a_pool_without_a_node_binds_to_node_0_with_a_note():
    graph = diamond()
    system = two_pools(slow_node=None)
    report = execute(diamond_plan(graph, system), graph, system, repeat=1,
                     kernels=ReplayKernels(check=False))
    assert report.check is None
    assert any("'pmm' names no NUMA node; bound to NUMA node 0" in note for note in report.notes)


def test_bounded_pool_without_offsets_fails_before_running():
    graph, system = diamond(), two_pools()
    with pytest.raises(ExecutionError, match=r"'dram' is bounded .* carry no offset") as info:
        execute(diamond_plan(graph, system, offsets=False), graph, system, repeat=1)
    assert "assign_offsets" in info.value.hint


def test_overlapping_offsets_are_caught_by_the_verifier_before_running():
    graph, system = diamond(), two_pools()
    plan = diamond_plan(graph, system)
    clash = [attrs.evolve(r, offset=0) if r.tensor == "b" else r for r in plan.residencies]
    with pytest.raises(PlanError, match="b"):
        execute(attrs.evolve(plan, residencies=clash), graph, system, repeat=1)


def test_unbounded_pool_offsets_are_packed():
    graph, system = diamond(), two_pools()
    report = execute(diamond_plan(graph, system), graph, system, repeat=1)
    assert report.check.matches
    # a (1 MiB, kernels 0..3) and z (4 bytes, kernel 3) live together in pmm
    assert MIB + 4 <= report.pools[1].arena_nbytes <= MIB + 64 + 4
    assert any("'pmm' is unbounded: 2 residencies" in note for note in report.notes)


def test_an_arena_too_small_for_the_plan_is_refused():
    graph, system = diamond(), two_pools()
    with pytest.raises(ExecutionError, match="too small"):
        execute(diamond_plan(graph, system), graph, system, repeat=1,
                arena_nbytes={"dram": MIB})


def test_workspace_without_address_uses_a_scratch_arena():
    graph = diamond()
    kernels = [attrs.evolve(k, workspace_nbytes=12345) if k.name == "k1" else k
               for k in graph.kernels]
    graph = attrs.evolve(graph, kernels=kernels)
    system = two_pools()
    report = execute(diamond_plan(graph, system), graph, system, repeat=1)
    assert report.check.matches
    assert report.pools[-1].arena_nbytes == 12345
    assert np.all(report.digests != 0)


def test_residency_offsets_unused_by_a_plan_are_not_needed():
    graph, system = diamond(), two_pools()
    plan = diamond_plan(graph, system)
    assert all(isinstance(r, Residency) for r in plan.residencies)
    with pytest.raises(Exception, match="repeat"):
        execute(plan, graph, system, repeat=0)
