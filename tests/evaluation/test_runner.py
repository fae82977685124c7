"""Running a tiny evaluation: every cell planned, checkpointed, and resumed after interruption."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_tiny import tiny_profile

from autotm_core.errors import FormatError, UsageError
from autotm_core.evaluation.cells import Workbench
from autotm_core.evaluation.runner import profile_cells, run_evaluation, select
from autotm_core.evaluation.store import load_results


@pytest.fixture(scope="module")
def bench() -> Workbench:
    return Workbench()


@pytest.mark.highs
def test_runs_every_cell_and_writes_each(tmp_path: Path, bench: Workbench) -> None:
    profile = tiny_profile()
    path = tmp_path / "results.json"
    results = run_evaluation(profile, results_path=path, bench=bench)
    assert [r.cell for r in results] == profile_cells(profile)
    assert len(results) == 2 * 4 + 2
    for r in results:
        assert r.status == "ok", r.message
        assert r.slowdown is not None and r.slowdown >= 1.0 - 1e-9
        assert r.fast_capacity_nbytes < r.peak_nbytes
    static = [r for r in results if r.cell.policy == "static"]
    assert all(r.n_variables and r.gap is not None for r in static)
    # a tighter limit never helps the same static plan search
    by_limit = {r.cell.limit: r.slowdown for r in static if r.cell.experiment == "conventional"}
    assert by_limit["4:1"] >= by_limit["1:1"] * (1 - 0.02)
    saved = load_results(path)
    assert set(saved) == {r.cell.key for r in results}
    assert json.loads(path.read_text())["format"] == "autotm-core/evaluation"


@pytest.mark.highs
def test_resumes_after_interruption(tmp_path: Path, bench: Workbench) -> None:
    profile = tiny_profile(policies=("static", "first-touch"))
    path = tmp_path / "results.json"
    started: list[str] = []

    def stop_at_third(index: int, total: int, cell, result) -> None:  # type: ignore[no-untyped-def]
        if result is None:
            started.append(cell.key)
            if len(started) == 3:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_evaluation(profile, results_path=path, progress=stop_at_third, bench=bench)
    assert set(load_results(path)) == set(started[:2])

    rerun: list[str] = []

    def record(index: int, total: int, cell, result) -> None:  # type: ignore[no-untyped-def]
        if result is None:
            rerun.append(cell.key)

    results = run_evaluation(profile, results_path=path, progress=record, bench=bench)
    keys = [c.key for c in profile_cells(profile)]
    assert rerun == keys[2:]
    assert [r.cell.key for r in results] == keys


def test_select_rejects_unknown_experiment_and_bad_limit() -> None:
    with pytest.raises(UsageError, match="no experiment"):
        select(tiny_profile(), experiments=["nope"])
    with pytest.raises(UsageError, match="positive"):
        select(tiny_profile(), time_limit_seconds=0)
    chosen = select(tiny_profile(), experiments=["three-pool"], time_limit_seconds=5)
    assert [e.name for e in chosen.experiments] == ["three-pool"]
    assert all(c.time_limit_seconds == 5 for c in profile_cells(chosen))


def test_damaged_results_file_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"format": "autotm-core/evaluation", "version": 1, "cells": [{"x": 1}]}')
    with pytest.raises(FormatError, match=r"cells\[0\]"):
        load_results(path)
    assert load_results(tmp_path / "absent.json") == {}
