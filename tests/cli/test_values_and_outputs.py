"""Option values are range-checked where they are parsed (a usage error, exit status 2), and
output paths before any work (exit status 1): one clear error naming the option, nothing
computed, no folder created, no traceback."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from clirun import Run, run_here

from autotm_core.planning import PlanSettings

POINT = ["solve", "example:mlp", "--system", "optane-2019"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    return run_here(capsys, *args)


def _refused(run: Run, status: int, *parts: str) -> None:
    assert run.returncode == status, run
    text = run.stdout + run.stderr
    assert "Traceback" not in text and "internal error" not in text, text
    for part in parts:
        assert part in run.stderr, (part, run.stderr)


@pytest.mark.parametrize(("args", "status", "parts"), [
    (["--ratio", "4:1", "--gap", "5"], 2, ["--gap 5.0 is out of range (5 is 500%)"]),
    (["--ratio", "4:1", "--gap", "1"], 2, ["--gap 1.0 is out of range"]),
    (["--ratio", "4:1", "--gap", "nan"], 2, ["--gap nan is out of range"]),
    (["--ratio", "4:1", "--gap", "-0.1"], 2, ["--gap -0.1 is out of range"]),
    (["--ratio", "4:1", "--time-limit", "nan"], 2, ["--time-limit nan is out of range"]),
    (["--ratio", "4:1", "--time-limit", "-5"], 2, ["--time-limit -5.0 is out of range"]),
    (["--ratio", "4:1", "--time-limit", "inf"], 2, ["--time-limit inf is out of range"]),
    (["--fast-capacity", "3.5"], 2, ["'3.5' is not a whole number of bytes", "3.5GiB"]),
    (["--fast-capacity", "2000000TiB"], 2, ["more than the 2^60 bytes"]),
    (["--ratio", "-1:1"], 2, ["ratio '-1:1' needs a positive fast part"]),
    (["--ratio", "4:1", "--top", "-1"], 2, ["argument --top: -1 is negative"]),
    (["--ratio", "4:1", "--top", "x"], 2, ["argument --top: 'x' is not a whole number"]),
])
def test_a_value_out_of_range_is_one_error_naming_the_option(
        capsys: pytest.CaptureFixture[str], args: list[str], status: int,
        parts: list[str]) -> None:
    _refused(_run(capsys, *POINT, *args), status, *parts)


def test_debug_may_come_after_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(capsys, *POINT, "--ratio", "4:1", "--gap", "5", "--debug")
    assert run.returncode == 2
    assert "Traceback" in run.stderr and "error: --gap 5.0" in run.stderr


@pytest.mark.parametrize("case", ["folder", "missing folder", "file as folder", "proc"])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    path, part = {
        "folder": (tmp_path, "is a folder, not a file"),
        "missing folder": (tmp_path / "no" / "such" / "plan.json", "does not exist"),
        "file as folder": (blocker / "plan.json", "is not a folder"),
        "proc": (Path("/proc/autotm-plan.json"), "cannot be written"),
    }[case]
    if case == "proc" and not Path("/proc").is_dir():
        pytest.skip("no /proc here")
    # a point that would take long to plan: the error must come first, at once
    run = _run(capsys, "solve", "zoo:resnet50:batch=64", "--system", "optane-2019",
               "--ratio", "4:1", "-o", str(path))
    _refused(run, 1, f"-o '{path}'", part)
    assert not (tmp_path / "no").exists()  # no folder made


@pytest.mark.parametrize("option", ["--memory", "--kernels", "--html"])
def test_plot_checks_its_outputs_first(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       option: str) -> None:
    run = _run(capsys, "plot", str(tmp_path / "no-plan.json"), "--graph", "example:mlp",
               "--system", "optane-2019", option, str(tmp_path / "missing" / "out.svg"))
    _refused(run, 1, f"{option} '", "does not exist")


def test_files_are_written_with_the_umasks_mode_and_whole(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    old = os.umask(0o022)
    try:
        run = _run(capsys, *POINT, "--ratio", "4:1", "--time-limit", "20", "-o", str(out))
    finally:
        os.umask(old)
    assert run.returncode == 0, run
    title = run.stdout.splitlines()[0]  # the report's title: graph, system, planner, memory
    assert title.startswith("mlp on optane-2019: synchronous plan, dram "), title
    assert "(4:1) of peak " in title
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert json.loads(out.read_text())["format"] == "autotm-core/plan"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temporary left


def test_a_key_given_twice_in_a_file_is_refused(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text('{"format": "autotm-core/graph", "version": 1, "name": "g", '
                     '"name": "h", "tensors": [], "kernels": []}')
    _refused(_run(capsys, "info", str(graph)), 1, "gives the key 'name' twice")


def test_a_number_of_5000_digits_is_refused(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text('{"format": "autotm-core/graph", "version": 1, "name": "g", "tensors": '
                     '[{"name": "a", "nbytes": ' + "9" * 5000 + '}], "kernels": []}')
    _refused(_run(capsys, "info", str(graph)), 1, "a number too long to read")


def test_plugins_shows_install_hints_whole(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from autotm_core.cli import plugins_command
    from autotm_core.plugins import SOLVERS_GROUP, PluginEntry

    hint = "CBC is not installed: pip install 'autotm-core[cbc]'"
    entry = PluginEntry(SOLVERS_GROUP, "cbc", "autotm-core", "x:y", error=hint)
    monkeypatch.setattr(plugins_command, "solvers", lambda: {"cbc": entry})
    monkeypatch.setenv("COLUMNS", "200")
    run = _run(capsys, "plugins")
    assert run.returncode == 0
    assert "'autotm-core[cbc]'" in run.stdout, run.stdout  # not eaten as markup


@pytest.mark.parametrize(("name", "hint"), [("mlp", "example:mlp"), ("resnet50", "zoo:resnet50"),
                                            ("chain-100", "example:chain-100")])
def test_a_bare_built_in_name_says_how_to_write_it(capsys: pytest.CaptureFixture[str],
                                                   name: str, hint: str) -> None:
    run = _run(capsys, "info", name)
    _refused(run, 1, f"{name}: no such file", f"write {hint}")


def test_sweep_ratios_must_be_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(capsys, "sweep", "example:mlp", "--system", "optane-2019", "--ratios", "1:1,4-1")
    _refused(run, 2, "--ratios: '4-1' is not a slow:fast ratio", "--capacities")


def test_verify_against_the_wrong_graph_lists_the_first_problems(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from autotm_core.baselines import run_baseline
    from autotm_core.plans import save_plan
    from autotm_core.presets import preset
    from autotm_core.sources import load_source

    plan = run_baseline("all-slow", load_source("example:cnn"), preset("optane-2019"))
    path = tmp_path / "cnn-plan.json"
    save_plan(plan, path)
    args = ["verify", str(path), "--graph", "example:mlp", "--system", "optane-2019"]
    short, every = _run(capsys, *args), _run(capsys, *args, "--all")
    assert short.returncode == every.returncode == 1
    assert len(short.stdout.splitlines()) == 1 + 15 + 1 and "--all lists every" in short.stdout
    assert len(every.stdout.splitlines()) > 30


def test_a_graph_too_big_for_the_machine_is_refused_before_it_is_built(
        capsys: pytest.CaptureFixture[str]) -> None:
    import time

    started = time.perf_counter()
    run = _run(capsys, "solve", "example:chain-100000000", "--system", "optane-2019",
               "--ratio", "4:1")
    assert time.perf_counter() - started < 10  # nothing was built
    _refused(run, 1, "example:chain-100000000 (300,000,001 kernels) would take about",
             "of memory; this machine has")


def test_a_model_too_big_is_refused_unless_insisted(monkeypatch: pytest.MonkeyPatch) -> None:
    from autotm_core import resources
    from autotm_core.errors import ResourceError
    from autotm_core.planning import load_problem, plan

    problem = load_problem("example:mlp", "optane-2019", limit="4:1")
    monkeypatch.setattr(resources, "available_memory_nbytes", lambda: 1_000_000)
    with pytest.raises(ResourceError, match=r"the asynchronous model of mlp \(\d+ kernels\) would "
                       "take about .* of memory") as caught:
        plan(problem, "asynchronous")
    assert "--formulation synchronous" in (caught.value.hint or "")
    assert "--insist" in (caught.value.hint or "")
    assert plan(problem, "static",
                PlanSettings(insist=True, time_limit_seconds=10)).plan is not None
    assert plan(problem, "greedy").plan is not None  # baselines build no model
    monkeypatch.setattr(resources, "available_memory_nbytes", lambda: None)
    monkeypatch.setattr(resources, "DEFAULT_MAX_KERNELS", 3)
    with pytest.raises(ResourceError, match="more than the 3 autotm-core plans by default"):
        plan(problem, "static")
