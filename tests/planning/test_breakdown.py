"""The breakdown of a plan by tensor kind: bytes per pool, moves, in-place use, added time."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from autotm_core.ir import TensorKind
from autotm_core.planning import load_problem, plan
from autotm_core.planning.breakdown import MoveDirection, outcome_breakdown, plan_breakdown
from autotm_core.report.kinds_report import render_kinds


@pytest.fixture(scope="module")
def problem():  # type: ignore[no-untyped-def]
    return load_problem("example:mlp", "optane-2019", limit="4:1")


@pytest.mark.parametrize("planner", ["greedy", "first-touch", "all-slow"])
def test_the_kinds_share_out_the_time_over_all_fast(problem, planner: str) -> None:  # type: ignore[no-untyped-def]
    outcome = plan(problem, planner)
    b = outcome_breakdown(outcome)
    assert b.added_seconds == pytest.approx(outcome.step_seconds - problem.all_fast_seconds)
    charged = sum(u.added_seconds or 0.0 for u in b.uses)
    assert charged + (b.unattributed_seconds or 0.0) == pytest.approx(b.added_seconds)
    assert all((u.added_seconds or 0.0) >= 0 for u in b.uses)
    assert sum(b.share(u) or 0.0 for u in b.uses) == pytest.approx(1.0, abs=1e-6)
    graph = problem.graph
    for u in b.uses:  # every kind the graph has, its tensors counted once
        tensors = [t for t in graph.tensors if t.kind is u.kind]
        assert u.tensors == len(tensors) and u.nbytes == sum(t.nbytes for t in tensors)
        assert all(kept <= u.nbytes for kept in u.kept_nbytes)
    sim = outcome.simulation
    assert sum(u.moved_nbytes[MoveDirection.TO_FASTER] for u in b.uses) == sum(
        int(sim.pair_nbytes[s, t].sum()) for s in range(2) for t in range(2) if t < s)
    assert sum(u.moved_nbytes[MoveDirection.TO_SLOWER] for u in b.uses) == sum(
        int(sim.pair_nbytes[s, t].sum()) for s in range(2) for t in range(2) if t > s)


def test_all_fast_adds_nothing_and_all_slow_is_all_in_place(problem) -> None:  # type: ignore[no-untyped-def]
    fast = outcome_breakdown(plan(problem.with_limit(None), "all-fast"))
    assert fast.added_seconds == pytest.approx(0.0, abs=1e-12)
    for u in fast.uses:
        assert u.kept_nbytes == (u.nbytes, 0) and u.in_place_nbytes == 0
        assert set(u.moved_nbytes.values()) == {0}
    slow = outcome_breakdown(plan(problem, "all-slow"))
    live = problem.graph.liveness
    used = np.bincount(live.kernel_tensors, minlength=len(problem.graph.tensors))
    for u in slow.uses:
        assert u.kept_nbytes == (0, u.nbytes)
        expected = sum(int(used[i]) * t.nbytes for i, t in enumerate(problem.graph.tensors)
                       if t.kind is u.kind)
        assert u.in_place_nbytes == expected  # counted once per kernel that uses it
    optimizer = next(u for u in slow.uses if u.kind is TensorKind.OPTIMIZER_STATE)
    assert (slow.share(optimizer) or 0) > 0.1


def test_no_time_is_attributed_when_the_step_is_not_the_simulators(problem) -> None:  # type: ignore[no-untyped-def]
    outcome = plan(problem, "2lm")
    b = outcome_breakdown(outcome)
    assert b.added_seconds is None and all(u.added_seconds is None for u in b.uses)
    assert b.to_json()["kinds"][0]["added_share"] is None
    same = plan_breakdown(problem, outcome.plan, step_seconds=outcome.step_seconds)
    assert same.added_seconds is None


def test_the_kinds_table_fits_80_columns(problem) -> None:  # type: ignore[no-untyped-def]
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(render_kinds(outcome_breakdown(plan(problem, "greedy")), width=80))
    page = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page
    assert "…" not in page
    for word in ("optimizer", "state", "parameter", "dram", "pmm", "added"):
        assert word in page.split(), (word, page)
