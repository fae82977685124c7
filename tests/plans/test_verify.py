"""Each verifier rule: a valid hand-made plan passes, a mutated one fails naming the culprit."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.errors import PlanError
from autotm_core.ir import GraphBuilder
from autotm_core.plans import Move, MoveKind, Plan, Residency, check_plan, make_plan, verify_plan

from .random_plans import tiny_graph, tiny_plan, tiny_system


def problems_of(plan: Plan) -> list[str]:
    return verify_plan(plan, tiny_graph(), tiny_system())


def replace_residency(plan: Plan, which_tensor: str, which_pool: str, **changes: object) -> Plan:
    rows = [
        attrs.evolve(r, **changes) if (r.tensor, r.pool) == (which_tensor, which_pool) else r
        for r in plan.residencies
    ]
    assert rows != list(plan.residencies)
    return attrs.evolve(plan, residencies=rows)


def with_config(plan: Plan, kernel: int, index: int, pool: str) -> Plan:
    configs = [list(row) for row in plan.configs]
    configs[kernel][index] = pool
    return attrs.evolve(plan, configs=configs)


def one_problem_with(plan: Plan, *words: str) -> str:
    problems = problems_of(plan)
    assert problems, "the verifier accepted a broken plan"
    hits = [p for p in problems if all(w in p for w in words)]
    assert hits, f"no problem mentions {words}: {problems}"
    return hits[0]


@pytest.mark.parametrize("a_move", ["async", "sync"])
@pytest.mark.parametrize("offsets", [False, True])
def test_hand_made_plans_pass(a_move: str, offsets: bool) -> None:
    plan = tiny_plan(a_move=a_move, offsets=offsets)
    assert problems_of(plan) == []
    assert check_plan(plan, tiny_graph(), tiny_system()) is plan


def test_check_plan_raises_with_every_problem() -> None:
    plan = replace_residency(tiny_plan(), "b", "fast", first=0, last=3)
    with pytest.raises(PlanError) as caught:
        check_plan(plan, tiny_graph(), tiny_system())
    assert len(caught.value.problems) == 2
    assert "'b'" in caught.value.message and "2 problems" in caught.value.message
    assert caught.value.hint


def test_names_and_kernel_count() -> None:
    plan = tiny_plan()
    one_problem_with(attrs.evolve(plan, graph="other"), "graph 'other'")
    one_problem_with(attrs.evolve(plan, system="other"), "memory system 'other'")
    one_problem_with(attrs.evolve(plan, configs=plan.configs[:3]), "3 kernel configurations", "4")
    one_problem_with(with_config(plan, 1, 0, "nvme"), "configs[1]", "'k1'", "'nvme'")


def test_unknown_tensor_and_pool() -> None:
    plan = tiny_plan()
    one_problem_with(replace_residency(plan, "x", "fast", tensor="z"), "residencies[0]", "'z'")
    one_problem_with(replace_residency(plan, "x", "fast", pool="nvme"), "'x'", "'nvme'")
    moves = [*plan.moves, Move("w", "nvme", "fast", 1)]
    one_problem_with(attrs.evolve(plan, moves=moves), "moves[2]", "'w'", "'nvme'")


def test_span_and_life() -> None:
    plan = tiny_plan()
    one_problem_with(replace_residency(plan, "b", "fast", first=2, last=1), "'b'", "not a span")
    one_problem_with(
        replace_residency(plan, "b", "fast", first=0),
        "'b'",
        "'fast'",
        "before the tensor exists",
        "#1",
    )
    one_problem_with(
        replace_residency(plan, "b", "fast", last=3), "'b'", "after the tensor is freed", "#2"
    )


def test_resident_somewhere_at_every_kernel() -> None:
    plan = tiny_plan()
    one_problem_with(
        replace_residency(plan, "c", "fast", last=2), "'c'", "resident in no pool", "3..3"
    )
    dropped = attrs.evolve(plan, residencies=[r for r in plan.residencies if r.tensor != "x"])
    one_problem_with(dropped, "'x'", "has no residency", "0..0")


def test_residency_begins_at_birth_or_a_move() -> None:
    plan = tiny_plan()
    no_move = attrs.evolve(plan, moves=[m for m in plan.moves if m.tensor != "w"])
    one_problem_with(no_move, "'w'", "'fast'", "kernel #2 ('k2')", "no move")
    second_birth = attrs.evolve(plan, residencies=[*plan.residencies, Residency("b", "slow", 1, 2)])
    one_problem_with(second_birth, "'b'", "'slow'", "born there in pool 'fast'")


def test_configs_name_where_the_tensor_is_usable() -> None:
    plan = tiny_plan()  # k3 reads a from slow; k1 reads a from fast while it is copied to slow
    one_problem_with(
        with_config(plan, 3, 0, "fast"), "kernel #3 ('k3')", "'a'", "'fast'", "not resident"
    )
    one_problem_with(
        with_config(plan, 1, 0, "slow"), "kernel #1 ('k1')", "'a'", "'slow'", "still copying"
    )
    nowhere = with_config(plan, 0, 0, "?")
    one_problem_with(nowhere, "kernel #0 ('k0')", "'x'", "no pool")


def test_pool_restrictions() -> None:
    plan = replace_residency(tiny_plan(), "loss", "fast", pool="slow")
    one_problem_with(with_config(plan, 3, 2, "slow"), "'loss'", "'slow'", "only in pools fast")


def test_moves_come_from_where_the_tensor_is() -> None:
    plan = tiny_plan()
    w_move = plan.moves.index(Move("w", "slow", "fast", 2))

    def with_move(**changes: object) -> Plan:
        moves = list(plan.moves)
        moves[w_move] = attrs.evolve(moves[w_move], **changes)
        return attrs.evolve(plan, moves=moves)

    one_problem_with(with_move(source="fast"), "'w'", "goes nowhere")
    one_problem_with(with_move(kernel=1), "moves[0]", "'w'", "begins at kernel #1")
    one_problem_with(with_move(kernel=0), "'w'", "no kernel before #0")
    one_problem_with(with_move(kernel=7), "'w'", "kernels are 0..3")
    a_plan = replace_residency(plan, "a", "fast", last=0)  # a leaves fast too early for its move
    a_plan = with_config(a_plan, 1, 0, "?")
    one_problem_with(a_plan, "'a'", "async", "not in the source pool", "kernel #1 ('k1')")
    twice = attrs.evolve(plan, moves=[*plan.moves, plan.moves[w_move]])
    one_problem_with(twice, "'w'", "more than once")


def test_sync_source_must_cover_the_kernel_before() -> None:
    plan = tiny_plan(a_move="sync")
    short = replace_residency(plan, "a", "fast", last=0)
    one_problem_with(
        with_config(short, 1, 0, "?"), "'a'", "sync", "not in the source pool", "kernel #1"
    )


def test_async_move_from_a_copy_in_flight() -> None:
    plan = tiny_plan()
    chained = attrs.evolve(
        plan,
        residencies=[*plan.residencies, Residency("b", "slow", 1, 2)],
        moves=[
            *plan.moves,
            Move("b", "fast", "slow", 1, MoveKind.ASYNC),
            Move("a", "slow", "fast", 1, MoveKind.ASYNC),
        ],
    )
    one_problem_with(chained, "'a'", "still being copied")


def test_same_tensor_twice_in_one_pool() -> None:
    plan = tiny_plan()
    doubled = attrs.evolve(plan, residencies=[*plan.residencies, Residency("w", "slow", 1, 2)])
    one_problem_with(doubled, "'w'", "'slow'", "overlaps another residency")


def test_capacities_of_the_plan() -> None:
    plan = tiny_plan()
    one_problem_with(
        attrs.evolve(plan, capacities={"fast": 2000, "slow": None}), "'fast'", "more than"
    )
    one_problem_with(attrs.evolve(plan, capacities={"fast": 1000}), "'slow'", "missing")
    one_problem_with(attrs.evolve(plan, capacities={**plan.capacities, "hbm": 5}), "'hbm'")
    one_problem_with(attrs.evolve(plan, capacities={"fast": -1, "slow": None}), "'fast'", "-1")


def test_capacity_at_every_kernel_with_workspace() -> None:
    # kernel 1 holds a (200) + b (300) + workspace 16 = 516 bytes in fast, the most of any kernel.
    plan = tiny_plan()
    assert problems_of(attrs.evolve(plan, capacities={"fast": 516, "slow": None})) == []
    message = one_problem_with(
        attrs.evolve(plan, capacities={"fast": 515, "slow": None}),
        "'fast'",
        "kernel #1 ('k1')",
        "1 B",
    )
    assert "workspace 16 B" in message and "'b'" in message


def test_a_sync_copy_occupies_both_pools_at_the_boundary() -> None:
    # Before k2, a (200) leaves fast while w (50) arrives and b (300) stays: 550 bytes, more than
    # at any kernel (516 at k1, 450 at k2).
    plan = tiny_plan(a_move="sync")
    assert problems_of(attrs.evolve(plan, capacities={"fast": 550, "slow": None})) == []
    one_problem_with(
        attrs.evolve(plan, capacities={"fast": 540, "slow": None}),
        "'fast'",
        "boundary before kernel #2 ('k2')",
        "550 B",
    )


def test_offsets() -> None:
    plan = tiny_plan(offsets=True)
    one_problem_with(
        replace_residency(plan, "c", "fast", offset=350), "'c'", "overlaps", "'b'", "kernel #2"
    )
    one_problem_with(replace_residency(plan, "c", "fast", offset=950), "'c'", "outside pool 'fast'")
    one_problem_with(replace_residency(plan, "c", "fast", offset=-4), "'c'", "outside pool 'fast'")
    one_problem_with(replace_residency(plan, "c", "fast", offset=None), "'fast'", "'c'", "do not")
    # loss (born at k3) may reuse b's bytes: b is gone after k2.
    assert problems_of(replace_residency(plan, "loss", "fast", offset=300)) == []


def test_a_write_leaves_no_stale_copy() -> None:
    g = GraphBuilder("in-place")
    a = g.tensor("a", nbytes=100)
    out = g.tensor("out", nbytes=8, kind="output")
    g.kernel("make", op="fill", outputs=[a])
    g.kernel("update", op="scale_", inputs=[a], outputs=[a])
    g.kernel("read", op="sum", inputs=[a], outputs=[out])
    graph, system = g.build(), tiny_system()

    def plan_keeping_slow_until(last: int) -> Plan:
        return make_plan(
            graph, system, planner="hand",
            residencies=[Residency("a", "fast", 0, 2), Residency("a", "slow", 1, last),
                         Residency("out", "fast", 2, 2)],
            moves=[Move("a", "fast", "slow", 1)],
        )

    assert verify_plan(plan_keeping_slow_until(1), graph, system) == []
    problems = verify_plan(plan_keeping_slow_until(2), graph, system)
    assert any("'update'" in p and "'a'" in p and "'slow'" in p and "old value" in p
               for p in problems), problems


@pytest.mark.slow  # the address packer's first run compiles (or loads) its numba loop
def test_workspace_addresses_are_checked_and_survive_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import attrs

    from autotm_core.addresses import assign_offsets
    from autotm_core.plans import load_plan, save_plan, verify_plan
    from plans.random_plans import tiny_graph, tiny_plan, tiny_system

    graph, system = tiny_graph(), tiny_system()
    fitted = assign_offsets(tiny_plan(a_move="sync"), graph, system, alignment_nbytes=1).plan
    assert fitted.workspace_offsets and verify_plan(fitted, graph, system) == []
    save_plan(fitted, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json") == fitted
    (k,) = fitted.workspace_offsets
    fast = next(r for r in fitted.residencies if r.pool == "fast" and r.first <= k <= r.last)
    overlapping = attrs.evolve(fitted, workspace_offsets={k: fast.offset})
    assert any("overlaps" in p and "workspace" in p
               for p in verify_plan(overlapping, graph, system))
    outside = attrs.evolve(fitted, workspace_offsets={k: -1})
    assert any("lies outside" in p for p in verify_plan(outside, graph, system))
    nowhere = attrs.evolve(fitted, workspace_offsets={0: 0})
    assert any("has no workspace" in p for p in verify_plan(nowhere, graph, system))


@pytest.mark.parametrize("huge", [10**30, 2**63 - 10, -(2**62)])
def test_numbers_too_large_for_the_arrays_are_refused(huge: int) -> None:
    plan = tiny_plan(offsets=True)
    one_problem_with(replace_residency(plan, "b", "fast", first=huge), "]: first is",
                     "magnitude below 2**62")
    one_problem_with(replace_residency(plan, "c", "fast", last=huge), "]: last is")
    one_problem_with(replace_residency(plan, "c", "fast", offset=huge), "]: offset is")
    moves = [attrs.evolve(plan.moves[0], kernel=huge), *plan.moves[1:]]
    one_problem_with(attrs.evolve(plan, moves=moves), "moves[0]: kernel")


@pytest.mark.parametrize("odd", [1.5, 2.0, False, "1"])
def test_numbers_that_are_not_integers_are_refused_not_rounded(odd: object) -> None:
    """A plan made in Python may hold any value where a kernel or an offset goes; the
    arrays used to take 1.5 as 1, False as 0 and "1" as 1 without a word (and a move's
    kernel "1" raised a TypeError)."""
    plan = tiny_plan(offsets=True)
    one_problem_with(replace_residency(plan, "b", "fast", first=odd), "]: first is",
                     "whole number")
    moves = [attrs.evolve(plan.moves[0], kernel=odd), *plan.moves[1:]]
    one_problem_with(attrs.evolve(plan, moves=moves), "moves[0]: kernel")
