"""Every benchmark of ``benchmarks/`` runs on its smallest input (issue 26: benchmarks rot).

Each runs as its user runs it, ``python benchmarks/NAME.py ...`` in its own process, on
the smallest input it offers, and must exit 0 and print the line that says it measured
something. Its figures are not checked: on inputs this small they mean nothing. A
benchmark added without a case here fails :func:`test_every_benchmark_has_a_smoke_case`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import autotm_core

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def run(script: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/SCRIPT ARGS`` with this test's ``autotm_core`` and no GPU."""
    env = dict(os.environ)
    # the package these tests import (a work tree's, not another one installed)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(autotm_core.__file__).parents[1]), *filter(None, [env.get("PYTHONPATH")])])
    env["CUDA_VISIBLE_DEVICES"] = ""  # gpu_check must find no GPU, even on a machine with one
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def ran(done: subprocess.CompletedProcess[str], expected: str) -> None:
    """The benchmark exited 0 and printed ``expected`` (a regular expression)."""
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"exit status {done.returncode}:\n{output[-3000:]}"
    assert re.search(expected, output), f"{expected!r} not in the output:\n{output[-3000:]}"


SMOKE = {
    "bench_addresses.py": (("10", "--rounds", "1"), r"evicted .* fits True"),
    "bench_async.py": (("--smoke",), r"mlp: done"),
    "bench_cache.py": (("10", "4096"), r"baseline greedy: "),
    "bench_deadlines.py": (("--smoke",), r"mlp +2s +\d"),
    "bench_executor.py": (("--smoke",), r"balanced, on-CPU time: \d+ of \d+ within 15%"),
    "bench_graph.py": (("--kernels", "100", "--repeat", "1"), r"load \+ verify \+ liveness"),
    "bench_ilp.py": (("chain-3", "--time-limit", "20"), r"example:chain-3: \{"),
    "bench_ilp_scaling.py": (("chain:3", "--time-limit", "20"), r"chain:3 +10 "),
    "bench_large.py": (("--smoke",), r"chain:100 +100 "),
    "bench_llama.py": (("--smoke",), r"4:1 +\d+ kernels, peak .* plan from "),
    "bench_recompute.py": (("--smoke", "--json"), r"\"cell\": \"cnn-1:1\""),
    "bench_simulator.py": (("--smoke",), r"numba and reference agree"),
    "gpu_check.py": ((), r"no GPU here"),
}
"""Script -> (its smallest input, what it prints when it ran); paper_eval and
golden_figures have tests of their own below."""

NEEDS = {"bench_llama.py": ("torch", "transformers", "autotm_torch")}
"""Script -> the modules it cannot run without (the nox tests session installs them: the torch
plugin with its ``test`` extra); its smoke case is skipped, saying so, where one is missing."""

FAST = {"bench_graph.py"}
"""The one under two seconds on a shared two-core machine (the others take 3 to 12: importing
the solver's dependencies, PyTorch or numba's cached loops costs a second or more)."""


def test_every_benchmark_has_a_smoke_case() -> None:
    scripts = {p.name for p in BENCHMARKS.glob("*.py")}
    assert scripts == {*SMOKE, "paper_eval.py", "golden_figures.py"}, (
        "give each benchmark a smallest input and a case in tests/test_benchmarks.py")


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_help_says_what_the_benchmark_does(
    script: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", [script, "--help"])
    monkeypatch.syspath_prepend(str(ROOT))
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    assert exit_.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("usage: ")
    description = out.split("\n\n")[1].strip()
    assert description.endswith((".", ":", "::", ")")), f"cut short: {description!r}"


@pytest.mark.parametrize("script", [
    pytest.param(name, marks=[] if name in FAST else [pytest.mark.slow])
    for name in sorted(SMOKE)])
def test_benchmark_runs_on_its_smallest_input(script: str) -> None:
    missing = [m for m in NEEDS.get(script, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{script} needs {', '.join(missing)}: pip install -e "
                    '"plugins/autotm-torch[test]"')
    args, expected = SMOKE[script]
    ran(run(script, *args), expected)


def test_bench_large_reports_a_failing_graph_and_exits_1() -> None:
    done = run("bench_large.py", "zoo:no-such-network", "--budget", "5")
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(li for li in done.stdout.splitlines() if li.startswith("zoo:no-such-network"))
    assert re.search(r"FAILED after \d+ s, peak \d+ MiB: exit status \d+: .*no-such-network",
                     line), line
    assert "1 of 1 graphs failed" in done.stderr


def test_bench_large_names_the_signal_that_killed_a_graph() -> None:
    from benchmarks.bench_large import Child, describe_failure

    killed = describe_failure(Child(-9, "", "", 2048.0, 12.0))
    assert killed.startswith("killed by SIGKILL (the out-of-memory killer")
    assert describe_failure(Child(1, "", "Traceback\nMemoryError: x\n", 1.0, 1.0)) == (
        "exit status 1: MemoryError: x")
    assert describe_failure(Child(-11, "", "", 1.0, 1.0)) == "killed by SIGSEGV"


def test_bench_large_measures_a_child_from_outside() -> None:
    from benchmarks.bench_large import run_child

    child = run_child([sys.executable, "-c", "b = bytearray(64 << 20); import os; os.kill("
                       "os.getpid(), 9)"])
    assert child.returncode == -9
    assert child.peak_mib >= 64


@pytest.mark.slow
def test_paper_eval_plans_a_tiny_grid_and_writes_its_report(tmp_path: Path) -> None:
    grid = {
        "format": "autotm-core/grid", "version": 1, "name": "tiny",
        "description": "the smallest grid: that paper_eval runs", "time_limit_seconds": 20.0,
        "relative_gap": 0.01, "solver": "highs", "mode": "auto", "addresses": True,
        "experiments": [{"name": "conventional", "title": "tiny", "system": "optane-2019",
                         "graphs": [{"source": "example:mlp", "label": "MLP"}],
                         "limits": ["4:1"], "planners": ["first-touch", "greedy"]}],
    }
    (tmp_path / "tiny.json").write_text(json.dumps(grid))
    (tmp_path / "docs").mkdir()
    done = run("paper_eval.py", "--grid", str(tmp_path / "tiny.json"), "--docs",
               str(tmp_path / "docs"), "--no-plots", cwd=tmp_path)
    ran(done, r"\d+ cells; results in .*; report in ")
    assert (tmp_path / "docs" / "results.md").exists()


@pytest.mark.slow
def test_golden_figures_records_a_case_and_finds_no_difference_with_itself(
    tmp_path: Path,
) -> None:
    figures = tmp_path / "figures.json"
    ran(run("golden_figures.py", "--cases", "solve-mlp-optane-4:1-static-no-addresses",
            "-o", str(figures)), r"1 cases in \d+ s, 0 failed")
    case = json.loads(figures.read_text())["cases"]["solve-mlp-optane-4:1-static-no-addresses"]
    assert case["figures"]["planner"] == "ilp/static"
    ran(run("golden_figures.py", "--compare", str(figures), str(figures)), r"no figure differs")


def _figures(step: float, termination: str, *, timed: bool) -> dict[str, object]:
    return {"commit": "x", "cases": {"one": {
        "command": ["solve"], "timed": timed, "wall_seconds": step * 1e3,
        "figures": {"step_seconds": step, "termination": termination, "gap": 0.01,
                    "plan_seconds": step * 1e3}}}}


@pytest.mark.parametrize(("new_step", "termination", "timed", "status"), [
    (1.0, "optimal", False, 0),
    (1.0 + 1e-6, "optimal", False, 1),  # exact: beyond 1e-9
    (1.01, "time_limit", True, 1),  # a text differs
    (1.01, "optimal", True, 0),  # time-limited: within 2%
    (1.03, "optimal", True, 1),
])
def test_golden_figures_flags_differences_beyond_the_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], new_step: float, termination: str,
    timed: bool, status: int,
) -> None:
    from benchmarks.golden_figures import main

    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_figures(1.0, "optimal", timed=timed)))
    new.write_text(json.dumps(_figures(new_step, termination, timed=timed)))
    assert main(["--compare", str(old), str(new)]) == status
    out = capsys.readouterr().out
    assert ("!! differs" in out) == bool(status)
    assert re.search(r"step_seconds +1 +" + re.escape(f"{new_step:.9g}"), out)
