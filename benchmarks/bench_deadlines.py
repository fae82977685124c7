"""Does planning stop when asked? Time limits and Ctrl-C, measured from outside.

Two measurements, each of a ``python -m autotm_core solve`` child process:

- ``--limits``: each case is solved with ``--time-limit T``; the wall time of the
  whole command (loading and the report included) is printed beside T, with the
  overrun against the issue's allowance, max(5% of T, 1 s), for the planning part
  (the ``plan_seconds`` of the ``--json`` report).
- ``--interrupts``: each case is solved without a limit, and SIGINT is sent at each
  of the given moments; printed: the seconds from the signal to the exit, the exit
  status (130 expected), and whether the plan written verifies
  (``python -m autotm_core verify``) or none was written.

    python benchmarks/bench_deadlines.py --limits 10,20 --cases inception
    python benchmarks/bench_deadlines.py --interrupts 5,20,40 --cases inception
    python benchmarks/bench_deadlines.py --smoke
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "chain-2000-approx": ["example:chain-2000", "--system", "optane-2019", "--ratio", "4:1",
                          "--mode", "approximate", "--formulation", "asynchronous"],
    "inception": ["zoo:inception_v4:batch=64", "--system", "optane-2019", "--ratio", "4:1",
                  "--formulation", "asynchronous"],
    "vgg19-gpu": ["zoo:vgg19:batch=128", "--system", "gpu-h200", "--ratio", "4:1",
                  "--formulation", "asynchronous"],
    "gpt2-12": ["zoo:gpt2:batch=8,seq=1024,layers=12", "--system", "gpu-h200", "--ratio", "1:1",
                "--formulation", "asynchronous"],
    "mlp": ["example:mlp", "--system", "optane-2019", "--ratio", "4:1",
            "--formulation", "asynchronous"],
}
"""The cases by name: a solve's arguments."""


def _solve(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "autotm_core", "solve", *args]


def limits(cases: list[str], seconds: list[float]) -> int:
    """Solve each case at each limit; 1 when any planning overran its allowance."""
    print(f"{'case':<20} {'limit':>6} {'planning':>9} {'command':>8} {'overrun':>8}  verdict")
    bad = 0
    for case in cases:
        for limit in seconds:
            started = time.perf_counter()
            done = subprocess.run(_solve([*CASES[case], "--time-limit", f"{limit:g}", "--json"]),
                                  capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                print(f"{case:<20} {limit:>6g} failed ({done.returncode}): "
                      f"{done.stderr.strip().splitlines()[-1:]}")
                bad += 1
                continue
            planned = float(json.loads(done.stdout)["plan_seconds"])
            allowance = max(0.05 * limit, 1.0)
            over = planned - limit
            verdict = "ok" if over <= allowance else "OVER"
            bad += verdict != "ok"
            print(f"{case:<20} {limit:>6g} {planned:>8.1f}s {wall:>7.1f}s {over:>+7.1f}s  "
                  f"{verdict}")
    return 1 if bad else 0


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupts(cases: list[str], moments: list[float]) -> int:
    """SIGINT each case's solve at each moment; 1 when an exit was late, not 130, or wrote a
    plan that does not verify."""
    print(f"{'case':<20} {'signal at':>9} {'exit after':>10} {'status':>6}  plan")
    bad = 0
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            for moment in moments:
                out = Path(folder) / f"{case}-{moment:g}.json"
                # a shell that started this benchmark in the background leaves SIGINT
                # ignored, and the child would inherit that: give it the default back
                child = subprocess.Popen(_solve([*CASES[case], "-o", str(out)]),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         text=True, preexec_fn=_default_sigint)
                time.sleep(moment)
                if child.poll() is not None:
                    print(f"{case:<20} {moment:>8g}s finished before the signal "
                          f"({child.returncode})")
                    continue
                sent = time.perf_counter()
                child.send_signal(signal.SIGINT)
                try:
                    child.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                latency = time.perf_counter() - sent
                plan = "none written"
                if out.exists():
                    graph, system = CASES[case][0], CASES[case][2]
                    check = subprocess.run([sys.executable, "-m", "autotm_core", "verify",
                                            str(out), "--graph", graph, "--system", system],
                                           capture_output=True, text=True, check=False)
                    plan = "verifies" if check.returncode == 0 else "DOES NOT VERIFY"
                ok = latency <= 3.0 and child.returncode == 130 and plan != "DOES NOT VERIFY"
                bad += not ok
                print(f"{case:<20} {moment:>8g}s {latency:>9.2f}s {child.returncode:>6}  {plan}"
                      + ("" if ok else "  <- FAILED"))
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Measure how well solve keeps its --time-limit and how fast it stops on "
        "Ctrl-C (SIGINT), from outside the process.")
    parser.add_argument("--cases", default="inception",
                        help=f"comma-separated, of {', '.join(CASES)} (default inception)")
    parser.add_argument("--limits", default="", metavar="SECONDS",
                        help="time limits to solve each case with, comma-separated")
    parser.add_argument("--interrupts", default="", metavar="SECONDS",
                        help="moments after the start at which to send SIGINT, comma-separated")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run: mlp at a 10 s limit, and one SIGINT at 2 s "
                        "(its figures are printed; its exit status says only that it ran)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.cases, args.limits, args.interrupts = "mlp", "10", "2"
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    if not args.limits and not args.interrupts:
        parser.error("give --limits, --interrupts or --smoke")
    print(f"load average {os.getloadavg()[0]:.2f} at the start")
    status = 0
    if args.limits:
        status |= limits(cases, [float(s) for s in args.limits.split(",")])
    if args.interrupts:
        status |= interrupts(cases, [float(s) for s in args.interrupts.split(",")])
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0 if args.smoke else status


if __name__ == "__main__":
    raise SystemExit(main())
