"""Helpers shared by the baseline tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autotm_core import CopyLink, Graph, MemorySystem, Pool
from autotm_core.capacity import with_fast_capacity
from autotm_core.plans import Plan
from autotm_core.plans.verify import verify_plan

from .value_rules import value_problems


def assert_verifies(plan: Plan, graph: Graph, system: MemorySystem, capacity: int | None) -> None:
    """The independent verifier, and the value rules read literally, find nothing wrong with
    ``plan`` under the limit."""
    problems = verify_plan(plan, graph, with_fast_capacity(system, capacity))
    assert problems == [], problems[:5]
    values = value_problems(plan, graph)
    assert values == [], values[:5]


@pytest.fixture
def verifies() -> Callable[[Plan, Graph, MemorySystem, int | None], None]:
    return assert_verifies


@pytest.fixture
def cheap_moves() -> MemorySystem:
    """Two pools whose copies are so fast that fetching pays off from the first use."""
    return MemorySystem(
        "cheap-moves",
        pools=(Pool("dram", None, 100e9, 100e9), Pool("pmm", None, 10e9, 10e9)),
        links=(CopyLink("pmm", "dram", 1e12, 1e12), CopyLink("dram", "pmm", 1e12, 1e12)),
    )
