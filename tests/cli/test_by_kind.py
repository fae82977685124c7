"""The breakdown by tensor kind in compare, explain and the HTML plan page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotm_core.cli.main import main
from autotm_core.planning import load_problem, plan
from autotm_core.plans import save_plan

POINT = ["example:mlp", "--system", "optane-2019", "--ratio", "4:1"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_compare_shows_each_planners_kinds(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    argv = ["compare", *POINT, "--planners", "first-touch,greedy,2lm"]
    facts = json.loads(_run([*argv, "--json"], capsys))
    kinds = {f["point"]["planner"]: f["by_kind"] for f in facts}
    assert kinds["2lm"]["added_seconds"] is None  # its step is the cache model's
    shares = [k["added_share"] for k in kinds["greedy"]["kinds"]]
    assert sum(shares) == pytest.approx(1.0, abs=1e-6)
    page = _run(argv, capsys)
    assert "share of the time added over all-fast, by tensor kind" in page
    assert "optimizer state" in page and "solver" not in page.split()  # no ILP: no column
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page


def test_explain_without_a_tensor_or_kernel_breaks_the_plan_down(tmp_path: Path, capsys,
                                                                 monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "80")
    outcome = plan(load_problem("example:mlp", "optane-2019", limit="4:1"), "greedy")
    save_plan(outcome.plan, tmp_path / "plan.json")
    argv = ["explain", str(tmp_path / "plan.json"), "--graph", "example:mlp", "--system",
            "optane-2019"]
    facts = json.loads(_run([*argv, "--json"], capsys))
    assert facts["added_seconds"] == pytest.approx(outcome.step_seconds
                                                   - outcome.all_fast_seconds)
    assert {k["kind"] for k in facts["kinds"]} >= {"parameter", "gradient", "optimizer_state"}
    page = _run(argv, capsys)
    assert "baseline/greedy for mlp by tensor kind" in page and "in place" in page


def test_the_html_plan_page_has_the_kinds(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib", reason="the plots extra is not installed")
    outcome = plan(load_problem("example:mlp", "optane-2019", limit="4:1"), "greedy")
    save_plan(outcome.plan, tmp_path / "plan.json")
    _run(["plot", str(tmp_path / "plan.json"), "--graph", "example:mlp", "--system",
          "optane-2019", "--html", str(tmp_path / "plan.html")], capsys)
    page = (tmp_path / "plan.html").read_text()
    assert "<h2>By tensor kind</h2>" in page and "optimizer state" in page
    assert "moved to faster" in page
