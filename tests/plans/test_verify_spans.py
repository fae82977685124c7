"""Copies spanning kernels: random valid spanning plans verify clean, named corruptions are
caught, each message naming the copy, the tensor and the kernels."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from autotm_core import Graph, MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, verify_plan

from .random_spans import random_spanning_plan
from .test_verify_properties import SETTINGS, cases, chain, half_step_use, system
from .value_oracle import value_problems


def build(case: tuple[int, bool, int]) -> tuple[Plan, Graph, MemorySystem]:
    layers, three, seed = case
    graph, sys_ = chain(layers), system(three)
    return random_spanning_plan(graph, sys_, seed), graph, sys_


def spanning(plan: Plan) -> list[int]:
    return [i for i, m in enumerate(plan.moves) if m.spans_kernels]


def names_the_copy(problems: list[str], i: int, move: Move, *words: str) -> None:
    """Some problem names ``moves[i]``, its tensor, its kernels and every one of ``words``."""
    hits = [p for p in problems if f"moves[{i}]" in p and repr(move.tensor) in p
            and f"kernel #{move.kernel}" in p and all(w in p for w in words)]
    assert hits, (i, move, words, problems)


def with_move(plan: Plan, i: int, **changes: object) -> Plan:
    moves = list(plan.moves)
    moves[i] = attrs.evolve(moves[i], **changes)
    return attrs.evolve(plan, moves=moves)


def residency_of(plan: Plan, tensor: str, pool: str, kernel: int) -> int:
    return next(j for j, r in enumerate(plan.residencies)
                if (r.tensor, r.pool) == (tensor, pool) and r.first <= kernel <= r.last)


@SETTINGS
@given(case=cases)
def test_random_spanning_plans_pass(case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    assert verify_plan(plan, graph, sys_) == []
    assert value_problems(plan, graph) == []


def test_the_random_plans_span_kernels() -> None:
    plans = [build((layers, three, seed))[0] for layers in (2, 4) for three in (False, True)
             for seed in range(5)]
    assert sum(len(spanning(p)) for p in plans) > 20
    assert any(m.until - m.kernel >= 4 for p in plans for m in p.moves)


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6), end=st.sampled_from(["source", "target"]))
def test_an_end_freed_in_flight_is_caught(case: tuple[int, bool, int], pick: int,
                                          end: str) -> None:
    plan, graph, sys_ = build(case)
    if not spanning(plan):
        return
    i = spanning(plan)[pick % len(spanning(plan))]
    m = plan.moves[i]
    j = residency_of(plan, m.tensor, getattr(m, end), m.kernel)
    rows = list(plan.residencies)
    rows[j] = attrs.evolve(rows[j], last=m.until - 2)
    problems = verify_plan(attrs.evolve(plan, residencies=rows), graph, sys_)
    if end == "source":
        names_the_copy(problems, i, m, "ends before the copy completes", f"#{m.until - 1}")
    else:
        names_the_copy(problems, i, m, "ends while the copy is in flight")


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_read_of_the_target_before_until_is_caught(case: tuple[int, bool, int],
                                                     pick: int) -> None:
    plan, graph, sys_ = build(case)
    uses = [(i, k, graph.kernels[k].tensors.index(m.tensor))
            for i, m in enumerate(plan.moves) if m.spans_kernels
            for k in range(m.kernel, m.until) if m.tensor in graph.kernels[k].tensors]
    if not uses:
        return
    i, k, e = uses[pick % len(uses)]
    m = plan.moves[i]
    configs = [list(row) for row in plan.configs]
    configs[k][e] = m.target
    problems = verify_plan(attrs.evolve(plan, configs=configs), graph, sys_)
    hits = [p for p in problems if f"kernel #{k} " in p and f"moves[{i}]" in p
            and "still copying it there" in p and f"usable from kernel #{m.until}" in p]
    assert hits, problems


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_flight_over_a_write_races_it(case: tuple[int, bool, int], pick: int) -> None:
    """Issuing a copy earlier, so that its flight covers a kernel writing the tensor, races
    that write (the residencies widened to keep every other rule)."""
    plan, graph, sys_ = build(case)
    live = graph.liveness
    candidates = []
    for i, m in enumerate(plan.moves):
        if m.kind is not MoveKind.ASYNC:
            continue
        t = graph.tensor_index[m.tensor]
        writers = [k for k in [*live.users(t).tolist(), int(live.first[t])]
                   if m.tensor in graph.kernels[k].outputs and k < m.kernel]
        if writers:
            candidates.append((i, max(writers)))
    if not candidates:
        return
    i, w = candidates[pick % len(candidates)]
    m = plan.moves[i]
    problems = verify_plan(with_move(plan, i, kernel=w, until=m.until), graph, sys_)
    hits = [p for p in problems if f"moves[{i}]" in p and repr(m.tensor) in p
            and "races the write" in p and f"kernel #{w}" in p]
    assert hits, problems


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6), late=st.booleans())
def test_an_until_outside_the_flight_is_caught(case: tuple[int, bool, int], pick: int,
                                               late: bool) -> None:
    plan, graph, sys_ = build(case)
    asyn = [i for i, m in enumerate(plan.moves) if m.kind is MoveKind.ASYNC]
    if not asyn:
        return
    i = asyn[pick % len(asyn)]
    m = plan.moves[i]
    until = len(graph.kernels) + 1 if late else m.kernel
    problems = verify_plan(with_move(plan, i, until=until), graph, sys_)
    names_the_copy(problems, i, m, f"complete before kernel #{until}")


@SETTINGS
@given(case=cases)
def test_capacity_counts_both_ends_during_the_flight(case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    size = {t.name: t.nbytes for t in graph.tensors}
    for pool in sys_.pools:
        use = half_step_use(plan, graph, pool.name)
        for m in plan.moves:  # the rules keep a residency at both ends over the flight
            if m.kind is MoveKind.ASYNC and pool.name in (m.source, m.target):
                held = [r for r in plan.residencies if (r.tensor, r.pool) == (m.tensor, pool.name)
                        and r.first <= m.kernel and r.last >= m.until - 1]
                assert held and all(use[2 * k + 1] >= size[m.tensor]
                                    for k in range(m.kernel, m.until))
        peak = max(use)
        fits = attrs.evolve(plan, capacities={**plan.capacities, pool.name: peak})
        assert verify_plan(fits, graph, sys_) == []
        if peak:
            tight = attrs.evolve(plan, capacities={**plan.capacities, pool.name: peak - 1})
            assert any(f"pool {pool.name!r} holds" in p for p in verify_plan(tight, graph, sys_))


def boundary_graph() -> Graph:
    """k0: w, c0 -> a; k1: a -> b; k2: b -> c; k3: a, c -> out (``w`` a parameter, ``c0`` a
    constant, so both live over the step and k0 may run again)."""
    from autotm_core.ir import GraphBuilder

    g = GraphBuilder("boundary")
    for name, kind in (("w", "parameter"), ("c0", "constant"), ("a", "activation"),
                       ("b", "activation"), ("c", "activation"), ("out", "output")):
        g.tensor(name, nbytes=64, kind=kind)
    g.kernel("k0", op="layer", inputs=["w", "c0"], outputs=["a"])
    g.kernel("k1", op="relu", inputs=["a"], outputs=["b"])
    g.kernel("k2", op="relu", inputs=["b"], outputs=["c"])
    g.kernel("k3", op="loss", inputs=["a", "c"], outputs=["out"])
    return g.build()


def test_a_sync_move_reading_a_copy_in_flight_is_caught() -> None:
    from autotm_core.plans import Residency, make_plan

    from .random_plans import three_pools

    graph, sys_ = boundary_graph(), three_pools()
    rows = [Residency("w", "hbm", 0, 3), Residency("c0", "hbm", 0, 3),
            Residency("a", "hbm", 0, 2), Residency("a", "dram", 1, 3),
            Residency("b", "hbm", 1, 2), Residency("c", "hbm", 2, 3),
            Residency("out", "hbm", 3, 3)]
    evict = Move("a", "hbm", "dram", 1, MoveKind.ASYNC, until=3)
    plan = make_plan(graph, sys_, residencies=rows, moves=[evict], planner="hand")
    assert verify_plan(plan, graph, sys_) == []
    onward = make_plan(graph, sys_, residencies=[*rows, Residency("a", "pmm", 2, 3)],
                       moves=[evict, Move("a", "dram", "pmm", 2)], planner="hand")
    problems = verify_plan(onward, graph, sys_)
    assert any("moves[1]: sync move of tensor 'a'" in p and "before kernel #2" in p
               and "moves[0]" in p and "issued at kernel #1 ('k1'), complete before kernel #3"
               in p for p in problems), problems


def test_a_rerun_reading_a_copy_in_flight_is_caught() -> None:
    from autotm_core.plans import Rerun, Residency, make_plan

    from .random_plans import three_pools

    graph, sys_ = boundary_graph(), three_pools()

    def plan(until: int) -> Plan:
        return make_plan(graph, sys_, planner="hand", reruns=[Rerun(0, 3)], residencies=[
            Residency("w", "dram", 0, 3), Residency("w", "hbm", 2, 3),
            Residency("c0", "hbm", 0, 3), Residency("a", "hbm", 0, 1),
            Residency("a", "hbm", 3, 3), Residency("b", "hbm", 1, 2),
            Residency("c", "hbm", 2, 3), Residency("out", "hbm", 3, 3),
        ], moves=[Move("w", "dram", "hbm", 2, MoveKind.ASYNC, until=until)])

    assert verify_plan(plan(3), graph, sys_) == []
    problems = verify_plan(plan(4), graph, sys_)
    assert any("reruns[0]" in p and "'w' is still arriving in pool 'hbm'" in p
               and "moves[0]" in p for p in problems), problems


def test_a_capacity_overflow_in_flight_names_the_copies() -> None:
    from simulation.test_spanning_copies import evict_a_over_k1_k2

    from .random_plans import tiny_graph, tiny_system

    graph, sys_ = tiny_graph(), tiny_system()
    plan = evict_a_over_k1_k2(fetch_w_async=False)
    tight = attrs.evolve(plan, capacities={**plan.capacities, "fast": 500})
    problems = verify_plan(tight, graph, sys_)
    assert any("pool 'fast' holds" in p and "kernel #1" in p
               and "copies in flight holding both ends there: moves[0] ('a', kernels 1..2)" in p
               for p in problems), problems
