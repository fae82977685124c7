"""The results page and its figures, from fixed results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from benchmarks.paper.markdown import render, solver_notes, table
from benchmarks.paper.report import write_report

from autotm_core.errors import UsageError
from autotm_core.sweep.grid import Experiment, Grid, GridGraph
from autotm_core.sweep.results import versions
from paper.rows import row as result


def _grid() -> Grid:
    g = [GridGraph(source=n, label=n, note="p") for n in ("a", "b")]
    return Grid(name="fixed", description="fixed", time_limit_seconds=1.0, experiments=(
        Experiment(name="conventional", title="Conventional", system="optane-2019",
                   graphs=tuple(g), limits=("1:1", "4:1"),
                   planners=("static", "synchronous", "first-touch")),
        Experiment(name="large", title="Large", system="optane-2019", graphs=(g[0],),
                   limits=("465:185",), planners=("synchronous", "first-touch", "2lm")),
    ))


def _results() -> list:
    r = [result("a", "1:1", "static", 1.2), result("a", "1:1", "synchronous", 1.1),
         result("a", "1:1", "first-touch", 1.5), result("b", "1:1", "static", 1.8),
         result("b", "1:1", "synchronous", None), result("b", "1:1", "first-touch", 2.0),
         result("a", "4:1", "static", 1.3), result("a", "4:1", "synchronous", 1.3),
         result("a", "4:1", "first-touch", 3.0)]
    return r + [result("a", "465:185", p, s, experiment="large") for p, s in
                (("synchronous", 1.5), ("first-touch", 2.0), ("2lm", 4.5))]


def test_table_is_markdown() -> None:
    assert table(["a", "b"], [["1", "2"]]) == "| a | b |\n|---|---|\n| 1 | 2 |"


def test_render_puts_our_figures_next_to_the_paper() -> None:
    text = render(_results(), _grid(), command="python benchmarks/paper_eval.py",
                  versions={"numpy": "1"}, wall_seconds=60.0, figures=["x.png"],
                  differences="DIFF")
    assert "27.7%" in text and "71.9%" in text and "2x" in text
    # best ILP per point: a@1:1 1.1, b@1:1 1.8, a@4:1 1.3 -> geomean 1.3704
    assert "37.0%" in text
    # first-touch: 1.5, 2.0, 3.0 -> geomean 2.08
    assert "108.0%" in text
    assert "3.00x" in text  # 2LM 4.5 over synchronous 1.5
    assert "(1 of 2)" in text  # synchronous at 1:1 lacks a plan for b
    assert "too small" in text  # listed among cells without a plan
    assert "python benchmarks/paper_eval.py" in text and "numpy 1" in text
    assert "DIFF" in text and "![x.png](figures/x.png)" in text


def test_write_report_with_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = write_report(_results(), _grid(), docs_dir=tmp_path, command="c")
    figure = tmp_path / "figures" / "slowdown-conventional.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "slowdown-conventional.png" in path.read_text()


def test_missing_matplotlib_names_the_extra(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an absent package looks like
    with pytest.raises(UsageError) as info:
        write_report(_results(), _grid(), docs_dir=tmp_path, command="c")
    assert "autotm-core[plots]" in (info.value.hint or "")
    write_report(_results(), _grid(), docs_dir=tmp_path, command="c", plots=False)
    assert (tmp_path / "results.md").exists()


def test_versions_name_what_produced_the_results() -> None:
    assert set(versions()) == {"autotm-core", "python", "highspy", "numpy"}


def test_report_without_results(tmp_path: Path) -> None:
    text = write_report([], _grid(), docs_dir=tmp_path, command="c", plots=False).read_text()
    assert "_not run_" in text


def test_solver_notes_count_plans_no_better_than_greedy() -> None:
    results = [result("a", "1:1", "synchronous", 1.3), result("a", "1:1", "static", 1.2),
               result("a", "1:1", "greedy", 1.3), result("b", "1:1", "synchronous", 1.1),
               result("b", "1:1", "greedy", 1.4)]
    assert "Of 3 ILP plans" in solver_notes(results)
    assert "and 1 are no better than the greedy" in solver_notes(results)
