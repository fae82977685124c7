"""Warnings and log records print through the console of the spinner, above it, whole."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console
from tests.cli.clirun import ENV

from autotm_core.cli import stderr

ERASE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_a_warning_while_the_spinner_runs_prints_above_it_on_lines_of_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=60)
    monkeypatch.setattr(stderr, "stderr_console", lambda: terminal)
    handler = stderr.ConsoleLogHandler()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    record = logging.LogRecord("autotm_core.costs.flops", logging.WARNING, __file__, 1,
                               "flops of op kind %r: counting one flop per element",
                               ("mystery",), None)
    with terminal.status("loading the graph and the memory system"):
        waited = time.monotonic()
        while "loading" not in terminal.file.getvalue():  # type: ignore[attr-defined]
            assert time.monotonic() - waited < 10, "the spinner never showed"
            time.sleep(0.02)
        stderr.warn(["a limit of 200.00 GiB is more than the pool has"])
        handler.emit(record)
    text = terminal.file.getvalue()  # type: ignore[attr-defined]
    # each line as the terminal shows it: what follows the last carriage return, unstyled
    shown = [ERASE.sub("", line.rsplit("\r", 1)[-1]) for line in text.split("\n")]
    assert "warning: a limit of 200.00 GiB is more than the pool has" in shown, shown
    assert ("WARNING autotm_core.costs.flops: flops of op kind 'mystery': counting one flop "
            "per element") in shown, shown
    # the spinner's line was erased before each of them, not written over
    assert text.count("\x1b[2Kwarning:") == 1 and text.count("\x1b[2KWARNING") == 1, text


def test_the_command_line_logs_through_its_console(tmp_path: Path) -> None:
    from autotm_core.examples import build_example
    from autotm_core.formats.graph_json import graph_to_document

    doc = graph_to_document(build_example("mlp"))
    for kernel in doc["kernels"][:2]:
        kernel["op"] = "mystery_op"
        kernel.pop("flops", None)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-m", "autotm_core", "baseline", str(path), "--system", "optane-2019",
         "--ratio", "1:1", "--planner", "greedy"],
        env=ENV, text=True, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(lines) == 1 and "'mystery_op'" in lines[0], done.stderr
