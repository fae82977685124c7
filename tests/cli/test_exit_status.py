"""One rule for the exit status of every command: a usage error exits 2 (as argparse's own),
a refused input 1, an interrupted command 130 and an internal error 3.

A representative of each class goes through :func:`autotm_core.cli.main.main` in this
process; the classes' own statuses are checked on :mod:`autotm_core.errors`.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from clirun import Run, run_here

from autotm_core import errors
from autotm_core.cli.main import run_reporting_errors
from autotm_core.formats import save_graph, save_system
from autotm_core.plans import Residency, save_plan
from plans.random_plans import tiny_graph, tiny_plan, tiny_system

POINT = ["solve", "example:chain-4", "--system", "optane-2019"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    return run_here(capsys, *args)


def _one_error(run: Run, status: int, part: str) -> None:
    assert run.returncode == status, run
    text = run.stdout + run.stderr
    assert "Traceback" not in text and "internal error" not in text, text
    assert part in run.stderr, (part, run.stderr)


@pytest.mark.parametrize(("args", "part"), [
    ([*POINT, "--ratio", "4:1", "--gap", "5"], "--gap 5.0 is out of range"),
    ([*POINT, "--ratio", "4:1", "--time-limit", "nan"], "--time-limit nan is out of range"),
    ([*POINT, "--ratio", "-1:1"], "ratio '-1:1' needs a positive fast part"),
    ([*POINT, "--fast-capacity", "3.5"], "--fast-capacity: size '3.5' is not a whole number"),
    ([*POINT, "--ratio", "4:1", "--solver", "nope"], "no solver called 'nope' is installed"),
    ([*POINT, "--ratio", "4:1", "--mode", "approximate", "--solver", "glpk"],
     "solver 'glpk' cannot plan approximately"),
    (["sweep", "example:mlp", "--system", "optane-2019", "--planners", "fastest"],
     "no planner called 'fastest'"),
    (["sweep", "example:mlp", "--system", "optane-2019", "--ratios", "1:1,4-1"],
     "--ratios: '4-1' is not a slow:fast ratio"),
    (["info", "zoo:resnet9000"], "the zoo has no network 'resnet9000'"),
    (["info", "zoo:resnet50:batchsize=2"], "has no option 'batchsize'"),
    (["info", "nosuch:thing"], "no frontend called 'nosuch' is installed"),
    (["solve", "example:chain-4", "--system", "nosuch", "--ratio", "4:1"],
     "no memory-system preset called 'nosuch'"),
    ([*POINT, "--limit", "nowhere=4:1"], "has no pool 'nowhere'"),
])
def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str], args: list[str],
                               part: str) -> None:
    _one_error(_run(capsys, *args), 2, part)


@pytest.mark.parametrize(("args", "part"), [
    ([*POINT, "--ratio", "4:1", "--top", "-1"], "argument --top: -1 is negative"),
    ([*POINT, "--ratio", "4:1", "--bogus"], "unrecognized arguments: --bogus"),
    ([*POINT], "one of the arguments --fast-capacity --ratio --limit is required"),
])
def test_argparse_refusing_the_command_line_exits_2(capsys: pytest.CaptureFixture[str],
                                                    args: list[str], part: str) -> None:
    _one_error(_run(capsys, *args), 2, part)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """A graph, a system, and a plan for them that breaks two rules."""
    paths = {"graph": tmp_path / "tiny.json", "system": tmp_path / "system.json",
             "bad": tmp_path / "bad.json"}
    save_graph(tiny_graph(), paths["graph"])
    save_system(tiny_system(), paths["system"])
    plan = tiny_plan()
    broken = [Residency("b", "fast", 0, 3) if r.tensor == "b" else r for r in plan.residencies]
    save_plan(attrs.evolve(plan, residencies=broken), paths["bad"])
    return {name: str(path) for name, path in paths.items()}


def test_a_malformed_graph_file_is_refused_with_1(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    graph = tmp_path / "graph.json"
    graph.write_text('{"format": "autotm-core/graph", "version": 1, "name": ')
    _one_error(_run(capsys, "info", str(graph)), 1, str(graph))


@pytest.mark.parametrize("command", ["verify", "simulate"])
def test_a_plan_failing_verification_is_refused_with_1(
        capsys: pytest.CaptureFixture[str], files: dict[str, str], command: str) -> None:
    run = _run(capsys, command, files["bad"], "--graph", files["graph"], "--system",
               files["system"])
    assert run.returncode == 1, run
    assert "Traceback" not in run.stdout + run.stderr
    assert "before the tensor exists" in run.stdout + run.stderr


@pytest.mark.parametrize(("args", "part"), [
    ([*POINT, "--fast-capacity", "4KiB", "--pin-to-fast"], "no plan fits"),
    (["baseline", "example:mlp", "--system", "optane-2019", "--policy", "all-fast", "--ratio",
      "1:1"], "all-fast does not fit"),
])
def test_a_capacity_no_plan_fits_is_refused_with_1(capsys: pytest.CaptureFixture[str],
                                                   args: list[str], part: str) -> None:
    _one_error(_run(capsys, *args), 1, part)


def test_an_output_path_that_cannot_be_written_is_refused_with_1(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = _run(capsys, *POINT, "--ratio", "4:1", "-o", str(tmp_path / "missing" / "plan.json"))
    _one_error(run, 1, "does not exist")


def test_every_error_class_has_the_status_of_its_kind() -> None:
    usage = {errors.UsageError, errors.UnknownPluginError, errors.UnknownPresetError,
             errors.SettingError}
    for name in errors.__all__:
        kind = getattr(errors, name)
        if isinstance(kind, type) and issubclass(kind, errors.AutotmError):
            assert kind.exit_status == (2 if kind in usage else 1), name
    assert issubclass(errors.UnknownPluginError, errors.PluginError)  # caught as either
    assert issubclass(errors.UnknownPluginError, errors.UsageError)


@pytest.mark.parametrize(("raised", "status"), [
    (errors.UsageError("x"), 2),
    (errors.UnknownPluginError("x"), 2),
    (errors.FormatError("x"), 1),
    (errors.ResourceError("x"), 1),
    (errors.SolveInterruptedError("x"), 130),
    (KeyboardInterrupt(), 130),
    (RuntimeError("x"), 3),
])
def test_run_reporting_errors_exits_with_the_errors_status(
        capsys: pytest.CaptureFixture[str], raised: BaseException, status: int) -> None:
    def action() -> int:
        raise raised

    assert run_reporting_errors(action) == status
    assert "Traceback" not in capsys.readouterr().err


def _grid_file(tmp_path: Path, *, solver: str = "highs") -> str:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({
        "format": "autotm-core/grid", "version": 1, "name": "g", "solver": solver,
        "experiments": [{"name": "e", "system": "optane-2019", "graphs": ["example:chain-4"],
                         "limits": ["4:1"], "planners": ["static"]}]}))
    return str(path)


def test_an_unknown_solver_is_the_grid_files_error_or_the_command_lines(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    in_file = _run(capsys, "sweep", "--grid", _grid_file(tmp_path, solver="gurobi2"))
    _one_error(in_file, 1, "grid.json: no solver called 'gurobi2'")
    given = _run(capsys, "sweep", "--grid", _grid_file(tmp_path), "--solver", "gurobi2")
    _one_error(given, 2, "no solver called 'gurobi2'")
    assert "grid.json" not in given.stderr
