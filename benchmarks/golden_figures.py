"""Golden figures: what the planners return on a fixed list of cases, recorded and compared.

A change meant to keep behaviour (issue 25: the refactor of the time-limited search) is
checked by recording the figures before it and after it, and comparing the two files::

    python benchmarks/golden_figures.py -o before.json            # on the old code
    python benchmarks/golden_figures.py -o after.json             # on the new code
    python benchmarks/golden_figures.py --compare before.json after.json

Each case is one command of the command line (``python -m autotm_core solve|compare|sweep
... --json``), run in its own process as a user runs it. Per case the file keeps the
command, the wall seconds, the load average after it and its figures: for ``solve``, the
predicted step time (seconds), the planner and source of the returned plan, why the
solve stopped, the gap, the bound (seconds), the number of moves, whether addresses fit
and the planning seconds; for ``compare`` the same per planner (no bound, no fit); for
``sweep`` the same per point (planner@limit). ``--long`` adds the cells of
``benchmarks/bench_async.py`` (an hour or more).

``--compare OLD NEW`` prints every figure side by side with NEW / OLD and flags those
that differ: in exact cases (no time limit, or one far beyond what they take) by more
than 1e-9 relative; in time-limited cases by more than ``--tolerance`` (default 2%)
relative; a gap by more than the same amount absolute (it is a fraction already); any
text or flag that differs at all. Seconds of planning and wall seconds are shown but
never flagged: they follow the machine's load. Exits 1 when a figure is flagged or a
case is missing or failed, else 0.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

FORMAT = "autotm-core/golden-figures"
EXACT_TOLERANCE = 1e-9
"""Relative tolerance of the figures of exact cases (deterministic solves)."""

TIMING_FIGURES = ("plan_seconds", "wall_seconds", "synchronous_wall", "asynchronous_wall")
"""Figures shown but never flagged: they follow the machine's load."""

GAP_FIGURES = ("gap",)
"""Figures compared by absolute difference (they are fractions already)."""

BENCH_ASYNC = Path(__file__).resolve().parent / "bench_async.py"


@dataclass(frozen=True)
class Case:
    """One command whose figures are recorded."""

    name: str
    """Unique name of the case (its key in the file)."""
    command: tuple[str, ...]
    """Arguments of ``python -m autotm_core`` (``--json`` is added), or of bench_async."""
    timed: bool
    """Whether a time limit can cut the search short (compared at ``--tolerance``)."""
    long: bool = False
    """Run only with ``--long``."""


def _solves() -> list[Case]:
    cases = []
    for graph in ("mlp", "cnn"):
        for formulation in ("static", "synchronous", "asynchronous"):
            for addresses in (True, False):
                command = ("solve", f"example:{graph}", "--system", "optane-2019", "--ratio",
                           "4:1", "--formulation", formulation)
                suffix = "" if addresses else "-no-addresses"
                cases.append(Case(f"solve-{graph}-optane-4:1-{formulation}{suffix}",
                                  command + (() if addresses else ("--no-addresses",)),
                                  timed=False))
    for formulation in ("synchronous", "asynchronous"):
        cases.append(Case(f"solve-mlp-gpu-h200-1:1-{formulation}",
                          ("solve", "example:mlp", "--system", "gpu-h200", "--ratio", "1:1",
                           "--formulation", formulation), timed=False))
    return cases


CASES: tuple[Case, ...] = (
    *_solves(),
    # compare's and sweep's default --time-limit is 60 s: these cases take a few seconds
    Case("compare-mlp-optane-4:1",
         ("compare", "example:mlp", "--system", "optane-2019", "--ratio", "4:1"), timed=False),
    Case("sweep-cnn-optane",
         ("sweep", "example:cnn", "--system", "optane-2019", "--ratios", "1:1,2:1,4:1,8:1"),
         timed=False),
    # the time-limited search of the exact planner: out of time in the asynchronous stage
    Case("solve-cnn-optane-4:1-asynchronous-10s",
         ("solve", "example:cnn", "--system", "optane-2019", "--ratio", "4:1", "--formulation",
          "asynchronous", "--time-limit", "10"), timed=True),
    Case("solve-chain-3000-approximate-synchronous-20s",
         ("solve", "example:chain-3000", "--mode", "approximate", "--formulation",
          "synchronous", "--time-limit", "20", "--system", "optane-2019", "--ratio", "4:1"),
         timed=True),
    *(Case(f"bench_async-{cell}", ("--cells", cell, "--time-limit", "60"), timed=True,
           long=True)
      for cell in ("inception_v4", "resnet50", "densenet121", "vgg19", "vgg19-gpu",
                   "gpt2-gpu")),
)


def solve_figures(facts: dict[str, Any]) -> dict[str, Any]:
    """The figures of one ``solve --json``."""
    solve = facts.get("solve") or {}
    addresses = facts.get("addresses")
    return {
        "step_seconds": facts["step_seconds"],
        "planner": facts["planner"],
        "plan_source": facts.get("plan_source"),
        "termination": solve.get("termination"),
        "gap": solve.get("gap"),
        "bound_seconds": solve.get("bound_seconds"),
        "n_moves": sum(int(m["count"]) for m in facts.get("moves", ())),
        "addresses_fit": None if addresses is None else addresses["fits"],
        "plan_seconds": facts.get("plan_seconds"),
    }


def point_figures(point: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The figures of one point of ``compare --json`` or ``sweep --json``."""
    return {
        f"{prefix}.status": point["status"],
        f"{prefix}.step_seconds": point.get("step_seconds"),
        f"{prefix}.source": point.get("source"),
        f"{prefix}.termination": point.get("termination"),
        f"{prefix}.gap": point.get("gap"),
        f"{prefix}.n_moves": point.get("n_moves"),
        f"{prefix}.plan_seconds": point.get("plan_seconds"),
    }


def figures_of(case: Case, output: str) -> dict[str, Any]:
    """The figures of ``case`` from its command's JSON output."""
    facts = json.loads(output)
    if case.name.startswith("bench_async-"):
        return {k: v for k, v in facts[0].items() if k not in ("cell",)}
    kind = case.command[0]
    if kind == "solve":
        return solve_figures(facts)
    figures: dict[str, Any] = {}
    points = facts if kind == "compare" else facts["points"]
    for point in points:
        key = point["point"]["planner"]
        if kind == "sweep":
            key += "@" + point["point"]["limit"]
        figures.update(point_figures(point, key))
    return figures


def load_average() -> str:
    """``/proc/loadavg`` (or ``os.getloadavg`` where there is none)."""
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run_case(case: Case) -> dict[str, Any]:
    """Run ``case`` in its own process; its record (figures, or the error)."""
    if case.name.startswith("bench_async-"):
        argv = [sys.executable, str(BENCH_ASYNC), *case.command, "--json"]
    else:
        argv = [sys.executable, "-m", "autotm_core", *case.command, "--json"]
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    record: dict[str, Any] = {
        "command": list(case.command), "timed": case.timed,
        "wall_seconds": time.perf_counter() - started,
    }
    if out.returncode:
        lines = (out.stderr.strip() or out.stdout.strip()).splitlines()
        record["error"] = f"exit status {out.returncode}: " + (lines[-1] if lines else "")
    else:
        try:
            record["figures"] = figures_of(case, out.stdout)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            record["error"] = f"unreadable output ({type(exc).__name__}: {exc})"
    record["load_average_after"] = load_average()
    return record


def git_commit() -> str | None:
    """The commit the figures were recorded on (``+dirty`` with uncommitted changes)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def record(cases: list[Case], output: Path) -> int:
    """Run ``cases``, write their figures to ``output``; 1 when any failed."""
    from autotm_core import __version__

    started = time.perf_counter()
    document: dict[str, Any] = {
        "format": FORMAT, "version": 1,
        "recorded_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(), "autotm_core": __version__,
        "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_average_before": load_average(), "cases": {},
    }
    failed = 0
    for case in cases:
        result = run_case(case)
        document["cases"][case.name] = result
        figures = result.get("figures", {})
        step = figures.get("step_seconds")
        summary = (f"error: {result['error']}" if "error" in result
                   else f"step {step:.6g} s" if isinstance(step, float)
                   else f"{len(figures)} figures")
        print(f"{case.name:<52} {result['wall_seconds']:6.1f} s  {summary}", flush=True)
        failed += "error" in result
        # written after each case, so that an interrupted run keeps what it measured
        document["load_average_after"] = load_average()
        document["wall_seconds"] = time.perf_counter() - started
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{len(cases)} cases in {time.perf_counter() - started:.0f} s, {failed} failed; "
          f"load average {document['load_average_after']}; figures in {output}")
    return 1 if failed else 0


def differs(name: str, old: Any, new: Any, tolerance: float) -> bool:
    """Whether figure ``name`` moved beyond ``tolerance`` from ``old`` to ``new``."""
    figure = name.rsplit(".", 1)[-1]
    if figure in TIMING_FIGURES:
        return False
    numbers = (int, float)
    if (isinstance(old, numbers) and isinstance(new, numbers)
            and not isinstance(old, bool) and not isinstance(new, bool)):
        if figure in GAP_FIGURES:
            return abs(new - old) > tolerance
        if old == new:
            return False
        scale = max(abs(old), abs(new))
        return not math.isfinite(scale) or abs(new - old) > tolerance * scale
    return bool(old != new)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.9g}"
    return "-" if value is None else str(value)


def compare(old_path: Path, new_path: Path, tolerance: float) -> int:
    """Print the figures of two files side by side; 1 when any is flagged."""
    old_doc, new_doc = (json.loads(p.read_text()) for p in (old_path, new_path))
    for label, doc in (("old", old_doc), ("new", new_doc)):
        print(f"{label}: commit {doc.get('commit')}, recorded {doc.get('recorded_utc')}, "
              f"load average {doc.get('load_average_before')} -> "
              f"{doc.get('load_average_after')}")
    old_cases, new_cases = old_doc["cases"], new_doc["cases"]
    flagged = timed_flags = 0
    print(f"{'case / figure':<60} {'old':>16} {'new':>16} {'new/old':>9}")
    for name in dict.fromkeys([*old_cases, *new_cases]):
        old, new = old_cases.get(name), new_cases.get(name)
        if old is None or new is None or "error" in old or "error" in new:
            why = ("only in new" if old is None else "only in old" if new is None
                   else f"failed: {(old.get('error') or new.get('error'))}")
            print(f"{name:<60} !! {why}")
            flagged += 1
            continue
        bound = tolerance if (old["timed"] or new["timed"]) else EXACT_TOLERANCE
        print(f"{name}  (tolerance {bound:g}{', time-limited' if old['timed'] else ''})")
        old_f, new_f = old["figures"], new["figures"]
        for figure in dict.fromkeys([*old_f, *new_f, "wall_seconds"]):
            a = old_f.get(figure, old.get(figure) if figure == "wall_seconds" else None)
            b = new_f.get(figure, new.get(figure) if figure == "wall_seconds" else None)
            ratio = "-"
            if (isinstance(a, float | int) and isinstance(b, float | int)
                    and not isinstance(a, bool) and a):
                ratio = f"{b / a:.4f}"
            flag = differs(figure, a, b, bound)
            flagged += flag
            timed_flags += flag and old["timed"]
            mark = "  !! differs" if flag else ""
            if max(len(_show(a)), len(_show(b))) > 16:  # a long text: one line each
                print(f"  {figure:<58}{mark}\n    old: {_show(a)}\n    new: {_show(b)}")
            else:
                print(f"  {figure:<58} {_show(a):>16} {_show(b):>16} {ratio:>9}{mark}")
    if not flagged:
        print("no figure differs")
    else:
        print(f"{flagged} figures or cases flagged, {timed_flags} of them in time-limited "
              "cases (where the machine's load alone can move them)")
    return 1 if flagged else 0


def _exit_on_terminate(signum: int, frame: object) -> None:
    """SIGTERM ends the script as Ctrl-C would: the running case's process is killed too
    (``subprocess.run`` kills its child when an exception interrupts it), where it was left
    running, holding a core (an untimed asynchronous case ran on for 15 minutes)."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] + " Run the cases and write their figures "
        "(-o FILE), or compare two such files (--compare OLD NEW).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="cases:\n" + "\n".join(
            f"  {c.name}{' (--long)' if c.long else ''}{' (time-limited)' if c.timed else ''}"
            for c in CASES))
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="run the cases and write their figures to this JSON file")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"),
                        help="compare two figure files instead of running anything")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="relative tolerance of time-limited cases (default 0.02: 2%%)")
    parser.add_argument("--long", action="store_true",
                        help="also run the cells of benchmarks/bench_async.py (60 s limit each)")
    parser.add_argument("--cases", nargs="+", metavar="PATTERN",
                        help="run only the cases whose name matches one of these patterns "
                        "(fnmatch, e.g. 'solve-mlp-*')")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare, tolerance=args.tolerance)
    if args.output is None:
        parser.error("give -o FILE to record the figures, or --compare OLD NEW")
    cases = [c for c in CASES if args.long or not c.long]
    if args.cases:
        cases = [c for c in CASES
                 if any(fnmatch.fnmatchcase(c.name, p) for p in args.cases)]
        if not cases:
            parser.error(f"no case matches {' '.join(args.cases)}")
    return record(cases, args.output)


if __name__ == "__main__":
    sys.exit(main())
