"""Ctrl-C during a solve: the best verified plan (fitted when addresses were asked for) is
kept, reported as interrupted and written; exit status 130. No unfitted plan is ever
presented as the answer."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from autotm_core.cli.main import main
from autotm_core.errors import SolveInterruptedError
from autotm_core.ilp import fitting, planner
from autotm_core.planning import load_problem
from autotm_core.solvers import SolutionStatus, TerminationCondition

POINT = ["example:chain-4", "--system", "optane-2019", "--ratio", "4:1"]


@pytest.fixture
def interrupted(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every ILP solve ends as if Ctrl-C stopped it after finding its plan."""
    problem = load_problem("example:chain-4", "optane-2019", limit="4:1")
    solved = planner.plan_graph(problem.graph, problem.limited_system)
    stopped = attrs.evolve(solved, solve=attrs.evolve(
        solved.solve, termination=TerminationCondition.INTERRUPTED,
        status=SolutionStatus.FEASIBLE))
    monkeypatch.setattr(planner, "plan_graph", lambda *_a, **_k: stopped)
    return stopped


def test_the_kept_plan_is_fitted_written_and_the_status_is_130(
        interrupted, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "plan.json"
    status = main(["solve", *POINT, "-o", str(out)])
    said = capsys.readouterr()
    assert status == 130, said.err
    text = " ".join(said.out.split())
    assert "interrupted (Ctrl-C)" in text and "with addresses that fit" in text, text
    written = json.loads(out.read_text())
    assert written["format"] == "autotm-core/plan"
    assert all("offset" in r for r in written["residencies"] if r["pool"] == "dram")


def test_without_a_plan_that_fits_nothing_is_kept(
        interrupted, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    import autotm_core.addresses as addresses

    real = addresses.assign_offsets

    def overflowing(*args, **kwargs):  # type: ignore[no-untyped-def]
        overflow = addresses.Overflow("dram", (0,), (4096,))
        return attrs.evolve(real(*args, **kwargs), overflows=(overflow,))

    monkeypatch.setattr(addresses, "assign_offsets", overflowing)
    with pytest.raises(SolveInterruptedError, match="before any plan with addresses"):
        fitting.plan_with_addresses(
            *(lambda p: (p.graph, p.limited_system))(
                load_problem("example:chain-4", "optane-2019", limit="4:1")))
    out = tmp_path / "plan.json"
    status = main(["solve", *POINT, "--formulation", "static", "-o", str(out)])
    said = capsys.readouterr()
    assert status == 130 and "interrupted:" in said.err, said.err
    assert not out.exists()  # an unfitted plan is not written


@pytest.mark.parametrize(("status", "abandoned", "leaves_at_once"),
                         [(0, False, False), (130, False, True), (0, True, True)])
def test_the_process_leaves_at_once_after_ctrl_c_or_an_abandoned_solve(
        monkeypatch: pytest.MonkeyPatch, status: int, abandoned: bool,
        leaves_at_once: bool) -> None:
    import os

    import autotm_core.cli.main as cli_main
    import autotm_core.solvers.highs as highs

    monkeypatch.setattr(cli_main, "main", lambda: status)
    monkeypatch.setattr(highs, "abandoned_still_running", lambda: abandoned)

    def leave(code: int) -> None:
        raise RuntimeError(f"os._exit({code})")

    monkeypatch.setattr(os, "_exit", leave)
    if leaves_at_once:
        with pytest.raises(RuntimeError, match=f"os._exit\\({status}\\)"):
            cli_main.entry()
    else:
        with pytest.raises(SystemExit) as done:
            cli_main.entry()
        assert done.value.code == status
