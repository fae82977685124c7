"""The solve report's times: the whole planning time, the phases it went to, and the one
solve its model and termination rows describe, each said for what it is."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from autotm_core.planning import load_problem, plan
from autotm_core.report.solve_report import render_solve, solve_facts
from autotm_core.units import format_seconds


@pytest.fixture(scope="module")
def outcome():  # type: ignore[no-untyped-def]
    return plan(load_problem("example:chain-4", "optane-2019", limit="4:1"), "synchronous")


def _seconds(text: str) -> float:
    number, unit = text.split()
    return float(number) * {"s": 1.0, "ms": 1e-3, "us": 1e-6}[unit]


def test_the_time_row_is_the_whole_planning_and_the_last_solve_a_part_of_it(outcome) -> None:  # type: ignore[no-untyped-def]
    console = Console(width=80, color_system=None, file=io.StringIO(), legacy_windows=False)
    console.print(render_solve(outcome, [], width=60))
    page = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    total = format_seconds(outcome.plan_seconds)
    assert f"time {total} to plan, verify and simulate; the phases below" in page, page
    phases = sum(p.seconds for p in outcome.phases)
    assert phases <= outcome.plan_seconds
    stage = re.findall(r"((?:static|synchronous)(?:, recomputing)?): (\d[\d.]* m?u?s) \(",
                       page)
    names = [name for name, _ in stage]
    assert names in (["static", "synchronous"], ["static", "static, recomputing",
                                                 "synchronous", "synchronous, recomputing"]), page
    solved = re.search(r"last solve the (synchronous(?:, recomputing)?) model: build .*? "
                       r"\((\d[\d.]* m?u?s) together\)", page)
    assert solved is not None and solved.group(1) == names[-1], page
    # the last solve is a part of its stage, which is a part of the whole
    assert _seconds(solved.group(2)) <= _seconds(stage[-1][1]) <= outcome.plan_seconds + 1e-3
    facts = solve_facts(outcome, [])
    assert facts["phases_seconds"] == pytest.approx(phases)
    assert facts["solve"]["covers"] == f"the {names[-1]} model"
