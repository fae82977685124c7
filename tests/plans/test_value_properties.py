"""Property tests: on random plans, the verifier and an independent replay of values agree."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autotm_core import Graph, MemorySystem
from autotm_core.plans import MoveKind, Plan, Residency, verify_plan

from .test_verify_properties import SETTINGS, build, cases
from .value_oracle import value_problems


def agree(plan: Plan, graph: Graph, system: MemorySystem) -> None:
    found, replayed = verify_plan(plan, graph, system), value_problems(plan, graph)
    assert bool(found) == bool(replayed), (found, replayed)


@SETTINGS
@given(case=cases)
def test_random_plans_keep_every_value_current(case: tuple[int, bool, int]) -> None:
    plan, graph, _ = build(case)
    assert value_problems(plan, graph) == []


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_sync_move_from_another_copy(case: tuple[int, bool, int], pick: int) -> None:
    """Copying from another pool that holds the tensor is fine, unless that copy is old."""
    plan, graph, system = build(case)
    swaps = [
        (i, r.pool)
        for i, m in enumerate(plan.moves) if m.kind is MoveKind.SYNC
        for r in plan.residencies
        if r.tensor == m.tensor and r.first <= m.kernel - 1 <= r.last
        and r.pool not in (m.source, m.target)
    ]
    if not swaps:
        return
    i, pool = swaps[pick % len(swaps)]
    moves = list(plan.moves)
    moves[i] = attrs.evolve(moves[i], source=pool)
    agree(attrs.evolve(plan, moves=moves), graph, system)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_one_more_pool_at_the_start(case: tuple[int, bool, int], pick: int) -> None:
    """A pre-existing tensor also held in another pool at kernel 0 only: an input may not; a
    parameter may only where it ends the step current."""
    plan, graph, system = build(case)
    extra = [
        Residency(tensor.name, pool.name, 0, 0)
        for tensor in graph.tensors if tensor.kind.exists_before_step
        for pool in system.pools
        if not any(r.tensor == tensor.name and r.pool == pool.name and r.first == 0
                   for r in plan.residencies)
    ]
    if not extra:
        return
    added = attrs.evolve(plan, residencies=[*plan.residencies, extra[pick % len(extra)]])
    agree(added, graph, system)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_copy_kept_one_kernel_longer(case: tuple[int, bool, int], pick: int) -> None:
    """Keeping a copy one more kernel is fine, unless a write made it old meanwhile."""
    plan, graph, system = build(case)
    live = graph.liveness
    longer = [
        i for i, r in enumerate(plan.residencies)
        if r.last < live.last[graph.tensor_index[r.tensor]]
        and not any(o.tensor == r.tensor and o.pool == r.pool and o.first == r.last + 1
                    for o in plan.residencies)
    ]
    if not longer:
        return
    i = longer[pick % len(longer)]
    rows = list(plan.residencies)
    rows[i] = attrs.evolve(rows[i], last=rows[i].last + 1)
    agree(attrs.evolve(plan, residencies=rows), graph, system)
