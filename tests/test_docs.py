"""Every shell command of the docs runs: the ```bash blocks of the user docs and the README.

The blocks of one document run in order in one fresh folder (later blocks use
files that earlier ones wrote). Installing (``pip``), the test runner (``nox``,
``python -m pytest``) are left out: the suite is running in an installed
environment already.

A plain ``python -m autotm_core ARGS`` (no shell syntax) runs in this process, through
the same ``main`` that ``python -m`` calls (a fresh interpreter per command spent most
of its time importing the solver stack again); anything else runs in ``bash``.
``tests/cli`` runs ``python -m autotm_core`` itself in subprocesses.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cli.clirun import run_here

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/quickstart.md", "docs/cli.md", "docs/user-guide.md")
SKIPPED = re.compile(r"^\s*(pip|nox|python -m pytest)\b")
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)
SHELL_SYNTAX = re.compile(r"[|&;<>()$`*?\[\]{}~!]")
OUR_COMMAND = ["python", "-m", "autotm_core"]


def shell_commands(text: str) -> list[str]:
    """The commands of every ```bash block, continuation lines joined, skipped parts removed."""
    commands = []
    for block in BLOCK.findall(text):
        joined = re.sub(r"\s*\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            parts = [p.strip() for p in line.split("&&") if p.strip() and not SKIPPED.match(p)]
            if parts:
                commands.append(" && ".join(parts))
    return commands


def test_commands_are_extracted() -> None:
    text = "x\n```bash\n# a comment\npip install . && python -m a b \\\n   c  # why\n" \
           "nox -s tests\n```\n```console\n$ not run\n```\n"
    assert shell_commands(text) == ["python -m a b c"]


def in_process_arguments(command: str) -> list[str] | None:
    """The ARGS of a plain ``python -m autotm_core ARGS``; None for anything else."""
    if SHELL_SYNTAX.search(command):
        return None
    words = shlex.split(command)
    return words[3:] if words[:3] == OUR_COMMAND else None


def test_only_plain_commands_run_in_process() -> None:
    assert in_process_arguments("python -m autotm_core solve x --ratio 4:1 -o p.json") == [
        "solve", "x", "--ratio", "4:1", "-o", "p.json"]
    assert in_process_arguments("python -m autotm_core info x | head") is None
    assert in_process_arguments("python -m autotm_core info x && ls") is None
    assert in_process_arguments("python -m autotm_core info $HOME") is None
    assert in_process_arguments("autotm-core info x") is None
    assert in_process_arguments("python -m autotm_core_extra info x") is None


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS)
def test_document_commands_run(document: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    commands = shell_commands((ROOT / document).read_text(encoding="utf-8"))
    assert commands, f"{document} has no ```bash commands"
    settings = {"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100"}
    env = {**os.environ, **settings,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("FORCE_COLOR", None)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        arguments = in_process_arguments(command)
        if arguments is not None:
            done = run_here(capsys, *arguments)
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (
            f"{document}: `{command}` exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
