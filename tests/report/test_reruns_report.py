"""Reports say how many kernels a plan runs again and what that costs, only when it does;
the compare tables split by tensor kind fit the width however many planners there are."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from autotm_core.planning import load_problem, plan
from autotm_core.report.plan_report import render_simulation, simulation_facts
from autotm_core.report.sweep_report import compare_facts, render_compare
from autotm_core.sweep import SweepPoint, run_sweep
from autotm_core.sweep.point import PointResult


def _text(renderable, width: int = 80) -> str:  # type: ignore[no-untyped-def]
    console = Console(width=width, color_system=None, file=io.StringIO(), legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def problem():  # type: ignore[no-untyped-def]
    return load_problem("example:cnn", "gpu-h200", limit="1:2")


def test_a_plan_report_shows_its_reruns_and_their_time(problem) -> None:  # type: ignore[no-untyped-def]
    outcome = plan(problem, "recompute-only")
    facts = simulation_facts(outcome.simulation, all_fast_seconds=outcome.all_fast_seconds,
                             reruns=outcome.n_reruns)
    assert facts["reruns"] == len(outcome.plan.reruns) > 0
    assert facts["rerun_seconds"] == pytest.approx(outcome.plan.attributes["rerun_seconds"])
    assert facts["step_seconds"] == pytest.approx(
        facts["effective_seconds"] + facts["sync_seconds"] + facts["rerun_seconds"])
    text = _text(render_simulation(outcome.simulation, facts))
    assert f"({facts['reruns']} kernels run again" in text
    greedy = plan(problem, "greedy")
    plain = simulation_facts(greedy.simulation, reruns=greedy.n_reruns)
    assert plain["reruns"] == 0 and plain["rerun_seconds"] == 0.0
    assert "reruns" not in _text(render_simulation(greedy.simulation, plain))


def test_compare_shows_reruns_only_when_a_plan_recomputes() -> None:
    def point(planner: str) -> SweepPoint:
        return SweepPoint(graph="example:cnn", system="gpu-h200", planner=planner, limit="1:2")

    done = run_sweep([point("greedy"), point("first-touch"), point("checkpoint-layers"),
                      point("offload-activations"), point("recompute-only")]).points
    text = _text(render_compare(done))
    assert " reruns " in text.splitlines()[3]  # the header row
    assert "reruns (kernels run again" in text and "recompute-only 3 taking" in text
    assert "…" not in text and all(len(line) <= 80 for line in text.splitlines())
    facts = compare_facts(done)
    assert [f["n_reruns"] > 0 for f in facts] == [False, False, True, False, True]
    without = _text(render_compare(done[:2]))
    assert "reruns" not in without


def test_results_written_before_reruns_were_counted_still_load() -> None:
    result = PointResult(point=SweepPoint(graph="g", system="s", planner="greedy", limit="1:1"),
                         status="ok", fast_capacity_nbytes=1, peak_nbytes=2,
                         all_fast_seconds=1.0, step_seconds=2.0, n_reruns=4, rerun_seconds=0.5)
    data = result.to_json()
    assert PointResult.from_json(data) == result
    old = {k: v for k, v in data.items() if k not in ("n_reruns", "rerun_seconds")}
    assert PointResult.from_json(old).n_reruns == 0
