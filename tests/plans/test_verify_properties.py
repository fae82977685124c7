"""Property tests: random valid plans pass; each injected violation is caught, naming the tensor."""

from __future__ import annotations

import functools

import attrs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core import Graph, MemorySystem
from autotm_core.examples.networks import training_chain
from autotm_core.plans import MoveKind, Plan, verify_plan

from .random_plans import random_plan, three_pools, tiny_system

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def chain(layers: int) -> Graph:
    return training_chain(layers, base_nbytes=4096)


@functools.cache
def system(three: bool) -> MemorySystem:
    return three_pools() if three else tiny_system(None)


cases = st.tuples(st.integers(1, 4), st.booleans(), st.integers(0, 2**32 - 1))


def build(case: tuple[int, bool, int]) -> tuple[Plan, Graph, MemorySystem]:
    layers, three, seed = case
    graph, sys_ = chain(layers), system(three)
    return random_plan(graph, sys_, seed), graph, sys_


def half_step_use(plan: Plan, graph: Graph, pool: str) -> list[int]:
    """Bytes in ``pool`` at each half step, straight from the rules (quadratic, obviously right)."""
    live = graph.liveness
    size = {t.name: t.nbytes for t in graph.tensors}
    n = len(graph.kernels)
    used = [0] * (2 * n)
    mine = [r for r in plan.residencies if r.pool == pool]
    for k in range(n):
        used[2 * k + 1] = sum(size[r.tensor] for r in mine if r.first <= k <= r.last)
        if pool == "hbm" or pool == "fast":
            used[2 * k + 1] += int(live.workspace_nbytes[k])
        if k == 0:
            continue
        both = sum(size[r.tensor] for r in mine if r.first <= k - 1 and r.last >= k)
        syncs = [m for m in plan.moves if m.kind is MoveKind.SYNC and m.kernel == k]
        moved_in = sum(size[m.tensor] for m in syncs if m.target == pool)
        moved_out = sum(
            size[m.tensor]
            for m in syncs
            if m.source == pool and any(r.tensor == m.tensor and r.last == k - 1 for r in mine)
        )
        used[2 * k] = both + moved_in + moved_out
    return used


@SETTINGS
@given(case=cases)
def test_random_plans_pass(case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    assert verify_plan(plan, graph, sys_) == []


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_residency_outliving_its_tensor_is_caught(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    live = graph.liveness
    i = pick % len(plan.residencies)
    r = plan.residencies[i]
    t = graph.tensor_index[r.tensor]
    if live.last[t] + 1 < len(graph.kernels):
        bad = attrs.evolve(r, last=int(live.last[t]) + 1)
    elif live.first[t] > 0:
        bad = attrs.evolve(r, first=int(live.first[t]) - 1)
    else:
        return  # lives through the whole program: no way to outlive it
    rows = list(plan.residencies)
    rows[i] = bad
    problems = verify_plan(attrs.evolve(plan, residencies=rows), graph, sys_)
    assert any(repr(r.tensor) in p for p in problems)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_late_residency_is_caught(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    spans = [i for i, r in enumerate(plan.residencies) if r.first < r.last]
    if not spans:
        return
    i = spans[pick % len(spans)]
    rows = list(plan.residencies)
    rows[i] = attrs.evolve(rows[i], first=rows[i].first + 1)
    problems = verify_plan(attrs.evolve(plan, residencies=rows), graph, sys_)
    assert any(repr(rows[i].tensor) in p for p in problems)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_missing_move_is_caught(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    if not plan.moves:
        return
    i = pick % len(plan.moves)
    moves = plan.moves[:i] + plan.moves[i + 1 :]
    problems = verify_plan(attrs.evolve(plan, moves=moves), graph, sys_)
    assert any(repr(plan.moves[i].tensor) in p and plan.moves[i].target in p for p in problems)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_config_naming_the_wrong_pool_is_caught(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    k = pick % len(graph.kernels)
    kernel = graph.kernels[k]
    i = (pick // len(graph.kernels)) % len(kernel.tensors)
    tensor = kernel.tensors[i]
    here = {r.pool for r in plan.residencies if r.tensor == tensor and r.first <= k <= r.last}
    elsewhere = [p.name for p in sys_.pools if p.name not in here]
    if not elsewhere:
        return
    configs = [list(row) for row in plan.configs]
    configs[k][i] = elsewhere[0]
    problems = verify_plan(attrs.evolve(plan, configs=configs), graph, sys_)
    assert any(repr(tensor) in p and f"#{k}" in p for p in problems)


@SETTINGS
@given(case=cases)
def test_capacity_is_exactly_the_peak_of_the_rules(case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    for pool in sys_.pools:
        peak = max(half_step_use(plan, graph, pool.name))
        fits = attrs.evolve(plan, capacities={**plan.capacities, pool.name: peak})
        assert verify_plan(fits, graph, sys_) == []
        if peak:
            tight = attrs.evolve(plan, capacities={**plan.capacities, pool.name: peak - 1})
            assert any(f"pool {pool.name!r} holds" in p for p in verify_plan(tight, graph, sys_))


def first_fit_offsets(plan: Plan, graph: Graph) -> Plan:
    """Addresses by a slow, obviously right first fit over half-step spans.

    A tensor existing before and after the step gets one address, in each pool it begins the
    step in, for the residency it begins in and the one it ends in (the next step finds it
    there): the two are placed together.
    """
    size = {t.name: t.nbytes for t in graph.tensors}
    sync_in = {(m.tensor, m.target, m.kernel) for m in plan.moves if m.kind is MoveKind.SYNC}
    sync_out = {(m.tensor, m.source, m.kernel) for m in plan.moves if m.kind is MoveKind.SYNC}
    landed = {(m.tensor, m.target, m.kernel) for m in plan.moves}

    def span(r):  # type: ignore[no-untyped-def]
        start = 2 * r.first + 1 - ((r.tensor, r.pool, r.first) in sync_in)
        end = 2 * r.last + 1 + ((r.tensor, r.pool, r.last + 1) in sync_out)
        return start, end

    together: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(plan.residencies):
        kind = graph.tensor(r.tensor).kind
        if kind.exists_before_step and kind.survives_step and r.first == 0 \
                and (r.tensor, r.pool, 0) not in landed:
            together[(r.tensor, r.pool)] = [i]
    for i, r in enumerate(plan.residencies):
        mates = together.get((r.tensor, r.pool), [i])
        if r.last == len(graph.kernels) - 1 and i not in mates:
            mates.append(i)
    placed: list[tuple[str, int, int, int, int]] = []  # pool, start, end, offset, nbytes
    offsets: dict[int, int] = {}
    for i, r in enumerate(plan.residencies):
        if i in offsets:
            continue
        group = together.get((r.tensor, r.pool), [i])
        group = group if i in group else [i]
        spans = [span(plan.residencies[j]) for j in group]
        clash = [(o, n) for p, s, e, o, n in placed for start, end in spans
                 if p == r.pool and s <= end and start <= e]
        need = size[r.tensor]
        offset = min(
            c
            for c in [0] + [o + n for o, n in clash]
            if all(c + need <= o or o + n <= c for o, n in clash)
        )
        for j, (start, end) in zip(group, spans, strict=True):
            placed.append((r.pool, start, end, offset, need))
            offsets[j] = offset
    rows = [attrs.evolve(r, offset=offsets[i]) for i, r in enumerate(plan.residencies)]
    return attrs.evolve(plan, residencies=rows)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_offsets_clash_only_when_they_overlap(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    plan = first_fit_offsets(plan, graph)
    assert verify_plan(plan, graph, sys_) == []
    # Give one residency the address of another of the same pool present at the same time.
    rows = list(plan.residencies)
    i = pick % len(rows)
    mates = [
        j
        for j, r in enumerate(rows)
        if j != i
        and r.pool == rows[i].pool
        and r.first <= rows[i].last
        and rows[i].first <= r.last
        and graph.tensor(r.tensor).nbytes
        and graph.tensor(rows[i].tensor).nbytes
    ]
    if not mates:
        return
    rows[i] = attrs.evolve(rows[i], offset=rows[mates[0]].offset)
    problems = verify_plan(attrs.evolve(plan, residencies=rows), graph, sys_)
    assert any("overlaps" in p and repr(rows[i].tensor) in p for p in problems)


def test_random_plans_move_between_every_pair() -> None:
    plan = random_plan(chain(4), three_pools(), seed=1, move_rate=0.5)
    pairs = {(m.source, m.target) for m in plan.moves}
    assert len(pairs) == 6
    assert np.unique([m.kind.value for m in plan.moves]).tolist() == ["async", "sync"]
