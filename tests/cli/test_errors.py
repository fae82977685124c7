"""Bad input on the command line: one ``error:`` line and a ``hint:``, no traceback; exit 1
for a refused input, 2 for a name that names nothing known (a usage error).

Every broken file goes through :func:`autotm_core.cli.main.main` in this process (fast);
a sample of them, and every ``--help``, through ``python -m autotm_core`` in subprocesses
started all at once, so the real entry point is covered too.
"""

from __future__ import annotations

import pytest
from clirun import Run, run_many

from autotm_core.cli.main import COMMANDS, main
from formats.broken_files import BROKEN_GRAPHS, DATA

NAMES = tuple(module.replace("_", "-") for module in COMMANDS)
"""The commands as typed: the module ``export_policy_command`` defines ``export-policy``."""

SUBPROCESS_SAMPLE = ("graph_truncated.json", "graph_wrong_version.json",
                     "graph_use_before_produce.json")

OTHER_BAD_SOURCES = {  # the source, what the error says, the exit status
    "missing file": (str(DATA / "no_such_graph.json"), "no such file", 1),
    "folder": (str(DATA), "is a folder, not a file", 1),
    "unknown frontend": ("nosuch:thing", "no frontend called 'nosuch' is installed", 2),
    "unknown example": ("example:resnet9000", "no example graph called 'resnet9000'", 2),
}


@pytest.fixture(scope="module")
def runs() -> dict[str, Run]:
    commands = {name: ["info", str(DATA / name)] for name in SUBPROCESS_SAMPLE}
    commands["missing file"] = ["info", OTHER_BAD_SOURCES["missing file"][0]]
    commands |= {f"help {c}": [c, "--help"] for c in NAMES}
    commands["help"] = ["--help"]
    return run_many(commands)


def _assert_one_clear_error(run: Run, *parts: str, status: int = 1) -> None:
    assert run.returncode == status, run
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout
    lines = run.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, run.stderr
    for part in parts:
        assert part in errors[0], (part, errors[0])
    assert [line for line in lines if line.startswith("hint:")], run.stderr
    assert len(lines) == 2, run.stderr
    assert run.stdout == ""


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    status = main(list(args))
    captured = capsys.readouterr()
    return Run(status, captured.out, captured.err)


@pytest.mark.parametrize(("name", "problem"), sorted(BROKEN_GRAPHS.items()))
def test_info_on_a_broken_graph(capsys: pytest.CaptureFixture[str], name: str,
                                problem: str) -> None:
    _assert_one_clear_error(_in_process(capsys, "info", str(DATA / name)), str(DATA / name),
                            problem)


@pytest.mark.parametrize("key", sorted(OTHER_BAD_SOURCES))
def test_info_on_a_bad_source(capsys: pytest.CaptureFixture[str], key: str) -> None:
    source, problem, status = OTHER_BAD_SOURCES[key]
    _assert_one_clear_error(_in_process(capsys, "info", source), problem, status=status)


@pytest.mark.slow
@pytest.mark.parametrize("key", [*SUBPROCESS_SAMPLE, "missing file"])
def test_python_m_autotm_core_info_on_bad_input(runs: dict[str, Run], key: str) -> None:
    if key in BROKEN_GRAPHS:
        _assert_one_clear_error(runs[key], str(DATA / key), BROKEN_GRAPHS[key])
    else:
        source, problem, status = OTHER_BAD_SOURCES[key]
        _assert_one_clear_error(runs[key], source, problem, status=status)


@pytest.mark.parametrize("command", ["", *NAMES])
def test_help(runs: dict[str, Run], command: str) -> None:
    run = runs[f"help {command}".strip()]
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: python -m autotm_core")
    if not command:
        for name in NAMES:
            assert name in run.stdout
