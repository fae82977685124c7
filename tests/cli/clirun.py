"""Running ``python -m autotm_core`` in subprocesses, several at once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

ENV = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "120"}
ENV.pop("FORCE_COLOR", None)


@attrs.frozen
class Run:
    """What one command printed and how it ended."""

    returncode: int
    stdout: str
    stderr: str


def run_many(commands: Mapping[str, Sequence[str]], *, env: Mapping[str, str] = ENV,
             timeout: float = 120) -> dict[str, Run]:
    """Start every ``python -m autotm_core ARGS`` at once, then collect them by key."""
    started = {
        key: subprocess.Popen(
            [sys.executable, "-m", "autotm_core", *args], env=dict(env), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for key, args in commands.items()
    }
    done = {}
    for key, process in started.items():
        out, err = process.communicate(timeout=timeout)
        done[key] = Run(process.returncode, out, err)
    return done


def run_here(capsys: Any, *args: str) -> Run:
    """``python -m autotm_core ARGS`` in this process (``capsys``: pytest's fixture), with
    argparse's own exits turned into their status."""
    from autotm_core.cli.main import main

    try:
        status = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return Run(status, captured.out, captured.err)
