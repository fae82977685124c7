"""``verify`` and ``simulate`` on the command line: exit codes, reports, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from autotm_core.cli.main import main
from autotm_core.formats import save_graph, save_system
from autotm_core.plans import Residency, save_plan
from plans.random_plans import tiny_graph, tiny_plan, tiny_system


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {
        "graph": tmp_path / "tiny.json",
        "system": tmp_path / "system.json",
        "plan": tmp_path / "plan.json",
        "bad": tmp_path / "bad.json",
    }
    save_graph(tiny_graph(), paths["graph"])
    save_system(tiny_system(), paths["system"])
    plan = tiny_plan()
    save_plan(plan, paths["plan"])
    broken = [Residency("b", "fast", 0, 3) if r.tensor == "b" else r for r in plan.residencies]
    save_plan(attrs.evolve(plan, residencies=broken), paths["bad"])
    return {name: str(path) for name, path in paths.items()}


def args(files: dict[str, str], command: str, plan: str = "plan") -> list[str]:
    return [command, files[plan], "--graph", files["graph"], "--system", files["system"]]


def test_verify_ok(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args(files, "verify")) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "4 kernels" in out and "1 sync and 1 async" in out


def test_verify_lists_problems(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args(files, "verify", "bad")) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and "2 problems" in out
    assert "before the tensor exists" in out and "after the tensor is freed" in out


def test_simulate_report(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args(files, "simulate")) == 0
    out = capsys.readouterr().out
    for words in (
        "predicted step",
        "slowdown",
        "moves",
        "memory per pool",
        "bytes in fast",
        "kernels taking the most time",
        "516 B",
    ):
        assert words in out


def test_simulate_json(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*args(files, "simulate"), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["kernels"] == 4 and facts["slowdown"] >= 1
    assert {(m["source"], m["target"], m["kind"]) for m in facts["moves"]} == {
        ("slow", "fast", "sync"),
        ("fast", "slow", "async"),
    }
    assert [p["peak_nbytes"] for p in facts["pools"]] == [516, 250]


@pytest.mark.parametrize("command", ["verify", "simulate"])
def test_bad_input_is_one_line_not_a_traceback(
    files: dict[str, str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main([command, files["graph"], "--graph", files["graph"], "--system", files["system"]]) == 1
    )
    err = capsys.readouterr().err
    assert "error:" in err and "expected a plan file" in err and "Traceback" not in err
    assert main([command, files["plan"], "--graph", files["graph"], "--system", "no-such"]) == 2
    assert "no-such" in capsys.readouterr().err


def test_simulate_refuses_an_invalid_plan(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args(files, "simulate", "bad")) == 1
    err = capsys.readouterr().err
    assert "2 problems" in err and "hint:" in err and "Traceback" not in err


def test_a_spanning_plan_file_verifies_and_simulates(
        files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from simulation.test_spanning_copies import evict_a_over_k1_k2

    path = tmp_path / "spanning.json"
    save_plan(evict_a_over_k1_k2(fetch_w_async=False), path)
    assert json.loads(path.read_text())["version"] == 3
    files = {**files, "spanning": str(path)}
    assert main(args(files, "verify", "spanning")) == 0
    assert "1 async (1 in flight over several kernels)" in capsys.readouterr().out
    assert main([*args(files, "simulate", "spanning"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step_seconds"] > 0
