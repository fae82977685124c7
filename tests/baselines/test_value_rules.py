"""The tests' literal reading of the value rules catches each way a copy can go stale."""

from __future__ import annotations

import pytest

from autotm_core import Graph, GraphBuilder, MemorySystem, TensorKind
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan

from .value_rules import value_problems


@pytest.fixture
def step() -> Graph:
    """x (input) -> use w (parameter) -> sgd updates w in place -> read w."""
    b = GraphBuilder("step")
    b.tensor("x", nbytes=64, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=64, kind=TensorKind.PARAMETER)
    b.tensor("y", nbytes=64, kind=TensorKind.OUTPUT)
    b.tensor("z", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("use", op="mul", inputs=["x", "w"], outputs=["y"])
    b.kernel("sgd", op="sgd", inputs=["w", "y"], outputs=["w"])
    b.kernel("read", op="copy", inputs=["w"], outputs=["z"])
    return b.build()


def _plan(step: Graph, system: MemorySystem, residencies: list[Residency],
          moves: tuple[Move, ...] = ()) -> Plan:
    rest = [Residency("x", "dram", 0, 0), Residency("y", "dram", 0, 2),
            Residency("z", "dram", 2, 2)]
    return make_plan(step, system, residencies=[*rest, *residencies], moves=moves, planner="t")


def test_a_valid_step(step: Graph, optane: MemorySystem) -> None:
    plan = _plan(step, optane, [Residency("w", "dram", 0, 2)])
    assert value_problems(plan, step) == []


def test_a_stale_copy_kept_after_a_write(step: Graph, optane: MemorySystem) -> None:
    plan = _plan(step, optane, [Residency("w", "dram", 0, 2), Residency("w", "pmm", 0, 2)])
    problems = value_problems(plan, step)
    assert any("covers kernel 2 after kernel 1 wrote it in dram" in p for p in problems)


def test_a_lost_update(step: Graph, optane: MemorySystem) -> None:
    residencies = [Residency("w", "dram", 0, 1), Residency("w", "pmm", 0, 1),
                   Residency("w", "dram", 2, 2)]
    plan = _plan(step, optane, residencies, (Move("w", "pmm", "dram", 2),))
    assert any("copies the old value" in p for p in value_problems(plan, step))


def test_a_copy_racing_a_write(step: Graph, optane: MemorySystem) -> None:
    residencies = [Residency("w", "dram", 0, 2), Residency("w", "pmm", 1, 1)]
    plan = _plan(step, optane, residencies, (Move("w", "dram", "pmm", 1, MoveKind.ASYNC),))
    assert any("races" in p for p in value_problems(plan, step))


def test_a_free_double_residency_and_a_moved_parameter(step: Graph, optane: MemorySystem) -> None:
    both = _plan(step, optane, [Residency("w", "pmm", 0, 0), Residency("w", "dram", 0, 2)])
    assert value_problems(both, step) == ["w begins in pmm but does not end current there"]
    shifted = make_plan(step, optane, planner="t", residencies=[
        Residency("x", "dram", 0, 0), Residency("y", "dram", 0, 2), Residency("z", "dram", 2, 2),
        Residency("w", "dram", 0, 0, 0), Residency("w", "pmm", 1, 1),
        Residency("w", "dram", 2, 2, 64)],
        moves=(Move("w", "dram", "pmm", 1), Move("w", "pmm", "dram", 2)))
    assert "w ends at offset 64, not 0" in value_problems(shifted, step)


def test_an_input_arriving_in_two_pools(step: Graph, optane: MemorySystem) -> None:
    plan = make_plan(step, optane, planner="t", residencies=[
        Residency("x", "dram", 0, 0), Residency("x", "pmm", 0, 0),
        Residency("y", "dram", 0, 2), Residency("z", "dram", 2, 2), Residency("w", "dram", 0, 2)])
    assert value_problems(plan, step) == ["input x begins in ['dram', 'pmm']"]
