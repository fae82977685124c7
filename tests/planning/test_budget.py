"""One deadline for the whole planning call, and where its time went."""

from __future__ import annotations

import time

import pytest

from autotm_core.ilp.budget import MIN_SOLVE_SECONDS, Budget
from autotm_core.planning import load_problem, plan


def test_an_unlimited_budget_gives_no_limits() -> None:
    budget = Budget.of(None)
    assert budget.remaining() is None and budget.limit(0.5) is None
    assert budget.until(0.5) is None and not budget.expired


def test_limits_are_shares_of_what_remains_less_the_reserve() -> None:
    budget = Budget.of(100.0)
    limit = budget.limit(1 / 4, reserve=20.0)
    assert limit is not None and 19.0 < limit <= 20.0
    until = budget.until(0.5)
    assert until is not None and until - time.perf_counter() <= 50.0


def test_past_the_deadline_a_solve_still_gets_a_moment() -> None:
    budget = Budget(time.perf_counter() - 1.0)
    assert budget.expired and budget.remaining() == 0.0
    assert budget.limit() == MIN_SOLVE_SECONDS


def test_phases_are_summed_per_stage_in_order() -> None:
    budget = Budget(None)
    budget.add("held plans", 1.0)
    stage = Budget(None, stage="static", spent=budget.spent)
    stage.add("solve", 2.0)
    stage.add("packing", 0.5)
    stage.add("solve", 1.0)
    assert [(p.name, p.seconds) for p in budget.phases()] == [
        ("held plans", 1.0), ("static: solve", 3.0), ("static: packing", 0.5)]


@pytest.mark.highs
def test_an_ilp_outcome_says_where_its_time_went() -> None:
    problem = load_problem("example:mlp", "optane-2019", limit="4:1")
    said: list[str] = []
    outcome = plan(problem, "synchronous", time_limit_seconds=30, progress=said.append)
    names = [p.name for p in outcome.phases]
    assert names[0] == "held plans"
    assert {"static: build", "synchronous: build", "synchronous: packing"} <= set(names)
    assert sum(p.seconds for p in outcome.phases) <= outcome.plan_seconds
    assert any("first-touch" in line for line in said)
    assert any(line.startswith("building the synchronous model") for line in said)
