"""``solve`` on the command line, tried as a new user would: the README's first command,
the report, plan files, capacity edge cases, a missing solver and bad sizes."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import attrs
import pytest
from rich.console import Console

from autotm_core.cli.main import main
from autotm_core.examples import build_example
from autotm_core.planning import PlanSettings
from autotm_core.plans import load_plan, verify_plan
from autotm_core.presets import preset

SMALL = ["solve", "example:chain-4", "--system", "optane-2019"]


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _error(argv: list[str], capsys: pytest.CaptureFixture[str], status: int = 1) -> str:
    assert main(argv) == status
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.startswith("error:")
    return captured.err


def test_readme_first_command(capsys: pytest.CaptureFixture[str]) -> None:
    facts = _json(["solve", "example:mlp", "--system", "optane-2019", "--ratio", "4:1", "--json"],
                  capsys)
    assert facts["fast_capacity_nbytes"] == build_example("mlp").liveness.peak_nbytes // 5
    assert facts["planner"] == "ilp/synchronous"
    assert facts["slowdown"] == pytest.approx(facts["step_seconds"] / facts["all_fast_seconds"])
    assert facts["slowdown"] >= 1
    assert facts["solve"]["objective_seconds"] == pytest.approx(facts["step_seconds"], rel=1e-6)
    by_name = {b["name"]: b for b in facts["baselines"]}
    assert set(by_name) == {"greedy", "first-touch", "2lm", "all-slow", "checkpoint-layers",
                            "offload-activations", "recompute-only"}
    for name in ("greedy", "first-touch", "2lm", "all-slow"):  # the ILP is at least as good as
        b = by_name[name]  # any baseline that only places or moves, within its gap
        assert b["step_seconds"] >= facts["step_seconds"] * (1 - facts["solve"]["gap"] - 1e-9)
    # recomputing does not fit there (a fifth of the peak): said why, not planned
    assert all(by_name[n]["step_seconds"] is None and "does not fit" in by_name[n]["skipped"]
               for n in ("checkpoint-layers", "offload-activations", "recompute-only"))
    assert facts["model"]["binaries"] > 0
    assert facts["model"]["nonzeros"] >= facts["model"]["constraints"] > 0
    assert "synchronous: solve" in facts["phases"] or "synchronous: relax-and-fix" in facts[
        "phases"]
    assert sum(facts["phases"].values()) <= facts["plan_seconds"]
    assert facts["addresses"]["fits"] and facts["addresses"]["rounds"] >= 1


@pytest.mark.slow
def test_report_plan_file_and_addresses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    assert main([*SMALL, "--ratio", "4:1", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for words in ("termination", "gap", "variables", "binary", "nonzeros", "hand-off",
                  "first-touch", "2lm", "greedy", "all-slow", "all-fast (no limit)",
                  "addresses", "fragmentation", "moves", "bytes in dram over kernels",
                  "capacity", "plan written to"):
        assert words in text, words
    plan = load_plan(out)
    graph, system = build_example("chain-4"), preset("optane-2019")
    assert plan.planner == "ilp/synchronous"
    assert verify_plan(plan, graph, system.with_capacity("dram", plan.capacities["dram"])) == []
    assert all(r.offset is not None for r in plan.residencies if r.pool == "dram")


def test_no_addresses_and_static(capsys: pytest.CaptureFixture[str]) -> None:
    facts = _json([*SMALL, "--ratio", "1:1", "--formulation", "static", "--no-addresses",
                   "--json"], capsys)
    assert facts["addresses"] is None
    assert facts["model"]["formulation"] == "static"
    assert facts["moves"] == []


def test_physical_bound_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    point = [*SMALL, "--ratio", "4:1", "--formulation", "static", "--no-addresses"]
    assert _json([*point, "--json"], capsys)["physical_bound"] is None  # opt-in: an LP
    facts = _json([*point, "--physical-bound", "--json"], capsys)
    bound = facts["physical_bound"]
    assert 0 < bound["seconds"] <= facts["step_seconds"]
    assert bound["seconds"] == max(bound["compute_seconds"], bound["traffic_seconds"])
    assert bound["plan_ratio"] == pytest.approx(facts["step_seconds"] / bound["seconds"])
    assert main([*point, "--physical-bound"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "of it" in text and "physical bound" in text and "this plan" in text
    # with seconds of branch and bound on it: no lower, and still no plan beats it
    integral = _json([*point, "--physical-bound-seconds", "5", "--json"],
                     capsys)["physical_bound"]
    assert bound["seconds"] * (1 - 1e-9) <= integral["seconds"] <= facts["step_seconds"]


@pytest.mark.parametrize("seconds", ["-1", "inf", "soon"])
def test_physical_bound_seconds_must_be_a_finite_number(
        seconds: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*SMALL, "--ratio", "4:1", "--physical-bound-seconds", seconds])
    assert exit_.value.code == 2
    assert "--physical-bound-seconds" in capsys.readouterr().err


def test_exactly_fitting_one_byte_short_and_impossible(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error([*SMALL, "--fast-capacity", "4KiB", "--pin-to-fast"], capsys)
    assert "no plan fits: kernel 'loss'" in err and "bytes" in err
    smallest = int(re.search(r"at least (\d+) bytes", err).group(1))  # type: ignore[union-attr]

    facts = _json([*SMALL, "--fast-capacity", str(smallest), "--pin-to-fast", "--json"], capsys)
    assert facts["fast_capacity_nbytes"] == smallest
    dram = next(p for p in facts["addresses"]["pools"] if p["name"] == "dram")
    assert dram["height_nbytes"] <= smallest
    assert facts["pools"][0]["peak_nbytes"] <= smallest

    err = _error([*SMALL, "--fast-capacity", str(smallest - 1), "--pin-to-fast"], capsys)
    assert f"at least {smallest} bytes" in err


def test_missing_solver_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "highspy", None)  # as if highspy were not installed
    err = _error([*SMALL, "--ratio", "4:1"], capsys)
    assert "highs" in err and "pip install highspy" in err
    err = _error([*SMALL, "--ratio", "4:1", "--solver", "gurobi"], capsys, status=2)
    assert "no solver called 'gurobi'" in err


@pytest.mark.parametrize("limit", [["--ratio", "4"], ["--ratio", "four:one"],
                                   ["--fast-capacity", "16 gigs"], ["--fast-capacity", "-1"]])
def test_bad_ratio_or_size_is_one_clear_line(
    limit: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _error([*SMALL, *limit], capsys, status=2)
    assert "hint:" in err


@pytest.mark.slow
def test_not_proven_optimal_is_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A time-limited or interrupted solve's plan is reported as the best found."""
    from autotm_core.ilp import planner
    from autotm_core.planning import load_problem, plan
    from autotm_core.report.solve_report import render_solve, solve_facts
    from autotm_core.solvers import SolutionStatus, TerminationCondition

    problem = load_problem("example:chain-4", "optane-2019", limit="4:1")
    solved = planner.plan_graph(problem.graph, problem.limited_system)
    for termination, words in ((TerminationCondition.TIME_LIMIT, "time limit"),
                               (TerminationCondition.INTERRUPTED, "Ctrl-C")):
        stopped = attrs.evolve(solved, solve=attrs.evolve(
            solved.solve, termination=termination, status=SolutionStatus.FEASIBLE))
        monkeypatch.setattr(planner, "plan_graph", lambda *_a, stopped=stopped, **_k: stopped)
        outcome = plan(problem, "synchronous", PlanSettings(addresses=False))
        facts = solve_facts(outcome, ())
        assert facts["solve"]["proven_optimal"] is False
        console = Console(file=io.StringIO(), width=100, color_system=None)
        console.print(render_solve(outcome, ()))
        text = console.file.getvalue()  # type: ignore[attr-defined]
        assert "not proven optimal" in text and words in text
    monkeypatch.undo()
    facts = solve_facts(plan(problem, "synchronous",
                             PlanSettings(addresses=False, recompute=False)), ())
    # optimal in the model, which recomputes nothing although the rules allow reruns
    assert facts["solve"]["optimal_in_model"] is True
    assert facts["solve"]["proven_optimal"] is False
    assert any("keeps and moves only" in line for line in facts["solve"]["restrictions"])
