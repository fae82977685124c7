"""Addresses for whole plans: they fit, the verifier accepts them, overflows are reported."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from benchmarks.bench_addresses import evicted_plan
from hypothesis import given, settings
from hypothesis import strategies as st

from addresses.wrap import wrap_offset_problems, wrap_pairs
from autotm_core import PlanError, UsageError
from autotm_core.addresses import OffsetAssignment, assign_offsets
from autotm_core.addresses.packing import wrap_partners
from autotm_core.examples import build_example
from autotm_core.examples.networks import training_chain
from autotm_core.plans import Plan, Residency, make_plan, verify_plan
from plans.random_plans import random_plan, three_pools, tiny_graph, tiny_plan, tiny_system


def with_capacity(plan: Plan, pool: str, nbytes: int) -> Plan:
    return attrs.evolve(plan, capacities={**plan.capacities, pool: nbytes})


def check_fitted(result: OffsetAssignment, graph, system, alignment: int) -> None:  # type: ignore[no-untyped-def]
    assert result.fits
    assert result.plan.has_offsets
    assert verify_plan(result.plan, graph, system) == []
    # Spec rule 3's offset clause, checked here too while the verifier is being taught it.
    assert wrap_offset_problems(result.plan, graph) == []
    bounded = {p.pool for p in result.pools}
    for r in result.plan.residencies:
        if r.pool in bounded:
            assert r.offset is not None and r.offset % alignment == 0
        else:
            assert r.offset is None
    for packing in result.pools:
        assert packing.lower_bound_nbytes <= packing.height_nbytes <= packing.capacity_nbytes


@pytest.mark.slow
@given(seed=st.integers(0, 10_000), alignment=st.sampled_from([1, 8, 64]))
@settings(max_examples=25, deadline=None)
def test_random_plans_get_addresses_the_verifier_accepts(seed: int, alignment: int) -> None:
    graph, system = build_example("mlp"), three_pools()
    plan = random_plan(graph, system, seed, move_rate=0.4)
    result = assign_offsets(plan, graph, system, alignment_nbytes=alignment)
    check_fitted(result, graph, system, alignment)
    assert sum(p.pairs for p in result.pools) == wrap_pairs(plan, graph)
    # The packing does not depend on the capacity: at its height it fits, one byte less it does not.
    for packing in result.pools:
        exact = assign_offsets(
            with_capacity(plan, packing.pool, packing.height_nbytes),
            graph,
            system,
            alignment_nbytes=alignment,
        )
        check_fitted(exact, graph, system, alignment)
        if packing.height_nbytes == 0:
            continue
        short = assign_offsets(
            with_capacity(plan, packing.pool, packing.height_nbytes - 1),
            graph,
            system,
            alignment_nbytes=alignment,
        )
        assert not short.fits
        assert not any(r.offset is not None for r in short.plan.residencies)
        (overflow,) = short.overflows
        assert overflow.pool == packing.pool
        assert overflow.overflow_nbytes == 1
        assert all(0 <= k < len(graph.kernels) for k in overflow.kernels)


def test_weights_evicted_mid_step_end_it_where_they_began() -> None:
    # Each weight but the last: fast 0..forward use, back from its backward use to the end;
    # in slow from 0 to its update, and again from just after it to the end.
    graph = training_chain(4, base_nbytes=4096)
    system = three_pools()
    system = attrs.evolve(system, pools=system.pools[1:])
    plan = evicted_plan(graph, system, 4)
    assert verify_plan(plan, graph, system) == []
    assert wrap_pairs(plan, graph) == 6
    result = assign_offsets(plan, graph, system, alignment_nbytes=1)
    check_fitted(result, graph, system, 1)
    assert [p.pairs for p in result.pools] == [3, 3]
    # At one byte less than the height the pool overflows, and says where.
    short = assign_offsets(with_capacity(plan, "dram", result.pool("dram").height_nbytes - 1),
                           graph, system, alignment_nbytes=1)
    (overflow,) = short.overflows
    assert overflow.pool == "dram" and overflow.overflow_nbytes == 1
    assert short.pool("dram").pairs == 3 and not short.plan.has_offsets


def test_partners_are_persistent_tensors_beginning_and_ending_apart() -> None:
    # Residencies of one pool: tensor 0 (a parameter) at 0..1 and 3..4; tensor 1 (an
    # activation) likewise; tensor 2 (a parameter) at 0..4 in one; tensor 3 (a parameter)
    # copied out and back in at the same boundary (spans touch: no pair).
    tensor = np.array([0, 0, 1, 1, 2, 3, 3])
    first = np.array([0, 3, 0, 3, 0, 0, 2])
    last = np.array([1, 4, 1, 4, 4, 1, 4])
    start, end = 2 * first + 1, 2 * last + 1
    start[6], end[5] = 4, 4
    persistent = np.array([True, False, True, True])
    partner = wrap_partners(tensor, first, last, start, end, persistent=persistent, n_kernels=5)
    assert partner.tolist() == [1, 0, -1, -1, -1, -1, -1]


def test_all_fast_plans_of_the_examples_pack_to_the_bound() -> None:
    for name in ("mlp", "cnn"):
        graph, system = build_example(name), three_pools()
        live = graph.liveness
        spans = [
            Residency(t.name, "hbm", int(live.first[i]), int(live.last[i]))
            for i, t in enumerate(graph.tensors)
        ]
        plan = make_plan(graph, system, residencies=spans, planner="all-fast")
        result = assign_offsets(plan, graph, system)
        check_fitted(result, graph, system, 4096)
        hbm = result.pool("hbm")
        assert hbm.fragmentation_nbytes == 0
        assert hbm.lower_bound_nbytes >= live.peak_nbytes
        assert result.plan.attributes["addresses"]["height_nbytes"]["hbm"] == hbm.height_nbytes


def test_hand_made_plan_with_sync_moves_and_workspace() -> None:
    graph, system = tiny_graph(), tiny_system()
    for a_move in ("sync", "async"):
        plan = tiny_plan(a_move=a_move)
        result = assign_offsets(plan, graph, system, alignment_nbytes=1)
        check_fitted(result, graph, system, 1)
        # k1's 16 bytes of workspace sit in the fast pool clear of everything present at k1.
        (at,) = result.workspace_offsets.values()
        assert result.workspace_offsets.keys() == {1}
        for r in result.plan.residencies:
            if r.pool == "fast" and r.first <= 1 <= r.last:
                nbytes = graph.tensor(r.tensor).nbytes
                assert r.offset + nbytes <= at or at + 16 <= r.offset
        assert result.plan.workspace_offsets == {1: at}


def test_sync_copy_occupies_the_boundary() -> None:
    # w lands in fast before k2 while x (fast, 0..0) is long gone, but a (fast 0..1) leaves
    # by a sync copy before k2: at that boundary a and w are both in fast.
    graph, system = tiny_graph(), tiny_system()
    result = assign_offsets(tiny_plan(a_move="sync"), graph, system, alignment_nbytes=1)
    spans = {(r.tensor, r.pool): r for r in result.plan.residencies}
    a, w = spans["a", "fast"], spans["w", "fast"]
    assert a.offset + 200 <= w.offset or w.offset + 50 <= a.offset


def test_unbounded_pools_get_no_addresses() -> None:
    graph, system = tiny_graph(), tiny_system(fast_nbytes=None)
    plan = attrs.evolve(tiny_plan(), capacities={"fast": None, "slow": None})
    result = assign_offsets(plan, graph, system)
    assert result.fits and result.pools == ()
    assert all(r.offset is None for r in result.plan.residencies)


def test_bad_input_gets_one_clear_error() -> None:
    graph, system = tiny_graph(), tiny_system()
    plan = tiny_plan()
    with pytest.raises(UsageError, match="alignment"):
        assign_offsets(plan, graph, system, alignment_nbytes=0)
    with pytest.raises(UsageError, match="orders"):
        assign_offsets(plan, graph, system, orders=["random"])
    ghost = attrs.evolve(plan, residencies=[*plan.residencies, Residency("ghost", "fast", 0, 1)])
    with pytest.raises(PlanError, match="ghost"):
        assign_offsets(ghost, graph, system)
    backwards = attrs.evolve(plan, residencies=[*plan.residencies, Residency("b", "slow", 3, 1)])
    with pytest.raises(PlanError, match="backwards"):
        assign_offsets(backwards, graph, system)
    with pytest.raises(UsageError, match="no packing for pool 'slow'"):
        assign_offsets(plan, graph, system).pool("slow")
