"""The sweep command: Ctrl-C keeps the finished points and exits 130; a rerun resumes them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENV = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "120"}
RATIOS = "0:1,1:1,2:1,4:1,8:1"


def _default_sigint() -> None:
    """In the child: SIGINT as Python expects it, even when we were started with it ignored
    (a shell's background job), so that the child turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _points(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text())["points"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return []


@pytest.mark.slow
def test_ctrl_c_keeps_points_and_rerun_resumes(tmp_path: Path) -> None:
    results = tmp_path / "sweep.json"
    command = [sys.executable, "-m", "autotm_core", "sweep", "example:cnn", "--system",
               "optane-2019", "--planners", "static", "--ratios", RATIOS,
               "--time-limit", "20", "-o", str(results)]
    process = subprocess.Popen(command, env=ENV, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 120
    while not _points(results) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, (out, err)
    kept = _points(results)
    assert 1 <= len(kept) < 5
    assert "interrupted" in out and "rerun the same command to resume" in out

    resumed = subprocess.run([*command, "--json"], env=ENV, text=True, capture_output=True,
                             timeout=300)  # the same sweep again
    assert resumed.returncode == 0, resumed.stderr
    facts = json.loads(resumed.stdout)
    assert len(facts["points"]) == 5 and not facts["interrupted"]
    by_key = {json.dumps(p["point"], sort_keys=True): p for p in facts["points"]}
    for point in kept:  # read back from the file, not planned again
        assert by_key[json.dumps(point["point"], sort_keys=True)]["plan_seconds"] == \
            point["plan_seconds"]
    assert len(_points(results)) == 5

@pytest.mark.slow
def test_sweep_command_writes_every_output(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "autotm_core", "sweep", "example:mlp", "--system",
               "optane-2019", "--planners", "first-touch,greedy", "--ratios", "0:1,1:1,4:1,8:1",
               "--budget", "3", "--csv", str(tmp_path / "s.csv"), "-o", str(tmp_path / "s.json")]
    done = subprocess.run(command, env=ENV, text=True, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "cheapest within a 3x slowdown budget" in done.stdout
    assert "★" in done.stdout
    assert (tmp_path / "s.csv").read_text().count("\n") == 9
    bad = subprocess.run([*command[:8], "fastest"], env=ENV, text=True, capture_output=True)
    assert bad.returncode == 2 and "no planner called 'fastest'" in bad.stderr
