"""Every shell command of the docs runs: the ```bash blocks of the user docs and the README.

The blocks of one document run in order in one fresh folder (later blocks use
files that earlier ones wrote). Installing (``pip``), the test runner (``nox``,
``python -m pytest``) are left out: the suite is running in an installed
environment already.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/quickstart.md", "docs/cli.md", "docs/user-guide.md")
SKIPPED = re.compile(r"^\s*(pip|nox|python -m pytest)\b")
BLOCK = re.compile(r"^```bash\n(.*?)^```", re.DOTALL | re.MULTILINE)


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


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS)
def test_document_commands_run(document: str, tmp_path: Path) -> None:
    commands = shell_commands((ROOT / document).read_text(encoding="utf-8"))
    assert commands, f"{document} has no ```bash commands"
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "100",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("FORCE_COLOR", None)
    for command in commands:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (
            f"{document}: `{command}` exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
