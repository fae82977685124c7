"""The value rules: no lost update, no copy racing a write, one training step ends as it began."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.ir import Graph, GraphBuilder
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan, verify_plan

from .random_plans import tiny_graph, tiny_plan, tiny_system
from .value_oracle import value_problems

ASYNC = MoveKind.ASYNC


def sgd_graph(*, update_last: bool = False) -> Graph:
    """``fwd`` reads x and w, ``sgd`` updates w in place, ``use`` reads w (unless sgd is last)."""
    g = GraphBuilder("sgd")
    x = g.tensor("x", nbytes=100, kind="input")
    w = g.tensor("w", nbytes=50, kind="parameter")
    a = g.tensor("a", nbytes=100)
    loss = g.tensor("loss", nbytes=8, kind="output")
    g.kernel("fwd", op="layer", inputs=[x, w], outputs=[a])
    if update_last:
        g.kernel("loss", op="loss", inputs=[a], outputs=[loss])
        g.kernel("sgd", op="sgd", inputs=[w, a], outputs=[w])
    else:
        g.kernel("sgd", op="sgd", inputs=[w, a], outputs=[w])
        g.kernel("use", op="loss", inputs=[w], outputs=[loss])
    return g.build()


def sgd_plan(w: list[Residency], moves: list[Move], *, x_pools: tuple[str, ...] = ("fast",),
             update_last: bool = False, system: MemorySystem | None = None) -> Plan:
    graph = sgd_graph(update_last=update_last)
    others = [*(Residency("x", pool, 0, 0) for pool in x_pools),
              Residency("a", "fast", 0, 2 if update_last else 1),
              Residency("loss", "fast", 1 if update_last else 2, 2)]
    return make_plan(graph, system or tiny_system(), residencies=[*others, *w], moves=moves,
                     planner="hand")


def problems(plan: Plan, *, update_last: bool = False) -> list[str]:
    found = verify_plan(plan, sgd_graph(update_last=update_last), tiny_system())
    # The independent replay agrees on whether some copy holds an old value.
    assert bool(found) == bool(value_problems(plan, sgd_graph(update_last=update_last)))
    return found


def only_problem(plan: Plan, *words: str, update_last: bool = False) -> str:
    found = problems(plan, update_last=update_last)
    assert len(found) == 1, found
    assert all(word in found[0] for word in words), found
    return found[0]


CLEAN_COPY = [Residency("w", "fast", 0, 1), Residency("w", "slow", 0, 1)]
"""w starts in fast; a clean copy goes to slow during fwd and goes stale at sgd."""
TO_SLOW = Move("w", "fast", "slow", 0, ASYNC)


def test_a_stale_copy_copied_back_over_the_update_is_a_lost_update() -> None:
    lost = sgd_plan([*CLEAN_COPY, Residency("w", "fast", 2, 2)],
                    [TO_SLOW, Move("w", "slow", "fast", 2)])
    message = only_problem(lost, "'w'", "kernel #1 ('sgd')", "'fast'", "'slow'", "lost update",
                           "drop the move")
    assert "kernel #2 ('use')" in message
    kept = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 1)], [TO_SLOW])
    assert problems(kept) == []


def test_a_copy_after_the_update_must_come_from_the_pool_written() -> None:
    pools = tiny_system().pools
    system = MemorySystem(name="three", pools=(*pools, attrs.evolve(pools[1], name="nvme")))

    def plan(source: str) -> Plan:
        w = [Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 1),
             Residency("w", "nvme", 2, 2)]
        return sgd_plan(w, [TO_SLOW, Move("w", source, "nvme", 2)], system=system)

    graph = sgd_graph()
    fixed, lost = plan("fast"), plan("slow")
    assert verify_plan(fixed, graph, system) == []
    found = verify_plan(lost, graph, system)
    assert len(found) == 1 and "lost update" in found[0] and "copy from 'fast' instead" in found[0]


def test_a_free_double_residency_is_refused() -> None:
    # w starts in fast and slow, sgd updates the fast copy, the slow one is dropped: the next
    # step would start from a slow copy this step never paid to bring up to date.
    free = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 0)], [])
    only_problem(free, "parameter 'w'", "begins the step in pool 'slow'", "kernel #2 ('use')",
                 "copy it back into 'slow' before the step ends", "start it only where it ends "
                 "('fast')")


@pytest.mark.parametrize("kind", [MoveKind.SYNC, ASYNC])
def test_a_double_residency_is_valid_once_the_new_value_is_copied_back(kind: MoveKind) -> None:
    at = 2  # before 'use' (sync) or during it (async): 'use' only reads w
    paid = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 0),
                     Residency("w", "slow", at, 2)], [Move("w", "fast", "slow", at, kind)])
    assert problems(paid) == []


def test_a_copy_kept_through_the_update_is_stale() -> None:
    kept = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 2)], [])
    only_problem(kept, "kernel #1 ('sgd')", "'w'", "'slow'", "old value", "end that residency")


def test_a_copy_the_last_kernel_leaves_stale_is_refused() -> None:
    both = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 0, 2)], [],
                    update_last=True)
    only_problem(both, "parameter 'w'", "'slow'", "kernel #2 ('sgd'), the last",
                 "start it only in 'fast'", update_last=True)


def test_an_async_copy_during_the_write_races_it() -> None:
    racing = sgd_plan([Residency("w", "fast", 0, 2), Residency("w", "slow", 1, 1)],
                      [Move("w", "fast", "slow", 1, ASYNC)])
    only_problem(racing, "async move of tensor 'w'", "kernel #1 ('sgd')", "races the write",
                 "synchronously before kernel #2 ('use') from 'fast'")


def test_an_input_begins_in_one_pool() -> None:
    twice = sgd_plan([Residency("w", "fast", 0, 2)], [], x_pools=("fast", "slow"))
    only_problem(twice, "input 'x'", "2 pools", "'fast'", "'slow'", "start it only in 'fast'")
    # A copy landed during kernel 0 is the move's work, not a second place the data arrives.
    copied = attrs.evolve(twice, moves=[Move("x", "fast", "slow", 0, ASYNC)])
    assert problems(copied) == []


def offsets_plan(w_end_offset: int) -> Plan:
    """tiny_plan with addresses, but w starts in fast (at 800), visits slow, comes back."""
    plan = tiny_plan(offsets=True)
    rows = [r for r in plan.residencies if r.tensor != "w"]
    rows += [Residency("w", "fast", 0, 0, 800), Residency("w", "slow", 0, 3),
             Residency("w", "fast", 2, 3, w_end_offset)]
    moves = [m for m in plan.moves if m.tensor != "w"]
    moves += [Move("w", "fast", "slow", 0, ASYNC), Move("w", "slow", "fast", 2)]
    return make_plan(tiny_graph(), tiny_system(), residencies=rows, moves=moves, planner="hand")


def test_a_parameter_ends_at_the_address_it_began_at() -> None:
    assert verify_plan(offsets_plan(800), tiny_graph(), tiny_system()) == []
    found = verify_plan(offsets_plan(900), tiny_graph(), tiny_system())
    assert len(found) == 1, found
    assert all(word in found[0] for word in ("'w'", "'fast'", "address 800", "address 900",
                                             "same address")), found
    assert value_problems(offsets_plan(900), tiny_graph())
