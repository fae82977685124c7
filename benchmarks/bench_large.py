"""Benchmark the approximate planner (``autotm_core.ilp.approximate.plan_approximate``) as
graphs grow.

Per graph, at a PMM:DRAM ratio (default 4:1) on the optane-2019 preset, each in
its own process (so peak memory is that graph's): seconds for greedy, for
building the model with its reductions and warm start, for the solver, end to
end; what the reductions fixed; the plan's step time against greedy and against
the proven lower bound (the worst-case gap); with ``--exact S``, also against
the exact planner (``plan_graph``, 0.1% gap, S seconds); peak memory, and the load
average (1 minute) when the graph ended.

    python benchmarks/bench_large.py [SOURCE ...] [--ratio 4:1] [--budget 60] [--exact S]
    python benchmarks/bench_large.py --smoke       # chain:100 with a 3 s budget

SOURCE is ``chain:KERNELS`` (``examples.networks.training_chain`` with about
KERNELS kernels) or any graph source (``zoo:densenet264:batch=2``).
Default: chain:1000 chain:5000 chain:20000.

Peak memory is the child process's largest resident set, as the kernel accounts it
(``os.wait4``), measured from outside so that a graph killed for memory has one too.
A graph that fails is reported with its error (the last line its process wrote) or
the signal that ended its process, its peak memory and its seconds; the exit status
is then 1.
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autotm_core.planning import PlanSettings

DEFAULT_SOURCES = ["chain:1000", "chain:5000", "chain:20000"]


def load(source: str):
    from autotm_core.examples.networks import training_chain
    from autotm_core.sources import load_source

    if source.startswith("chain:"):
        return training_chain(max(1, (int(source.split(":", 1)[1]) - 1) // 3))
    return load_source(source)


def measure(source: str, ratio: str, budget: float, exact: float | None) -> dict[str, object]:
    from autotm_core.capacity import fast_capacity
    from autotm_core.ilp.approximate import plan_approximate
    from autotm_core.presets import preset

    graph = load(source)
    capacity = fast_capacity(graph, ratio=ratio)
    system = preset("optane-2019")
    result = plan_approximate(graph, system, fast_capacity_nbytes=capacity,
                        time_budget_seconds=budget)
    reductions = result.reductions
    row: dict[str, object] = {
        "graph": source, "kernels": len(graph.kernels), "bin": result.n_binaries,
        "nnz": result.n_nonzeros, "greedy_s": result.baseline_seconds,
        "build_s": result.build_seconds, "solve_s": result.solve_seconds,
        "total_s": result.total_seconds,
        # no reductions when the budget left no time to build the model
        "fixed": 0 if reductions is None else reductions.columns.size,
        "fast_t": 0 if reductions is None else reductions.always_fast_tensors,
        "fetch": 0 if reductions is None else reductions.unprofitable_fetches,
        "source": result.source.describe(),
        "vs_greedy": (None if result.baseline_step_seconds is None
                      else result.step_seconds / result.baseline_step_seconds),
        "gap": result.gap, "bound": result.bound_source, "term": result.termination,
        "vs_exact": None,
    }
    if exact:
        from autotm_core.planning import load_problem, plan

        best = plan(load_problem(graph, system, limit=str(capacity)), "synchronous",
                    PlanSettings(mode="exact", addresses=False, relative_gap=0.001,
                                 time_limit_seconds=exact))
        assert best.solve is not None
        row["vs_exact"] = result.step_seconds / best.step_seconds
        row["exact_term"] = best.solve.termination
    return row


@dataclass(frozen=True)
class Child:
    """How one graph's process ended."""

    returncode: int
    """Its exit status; minus the signal's number when a signal ended it."""
    stdout: str
    """What it printed."""
    stderr: str
    """What it wrote to standard error."""
    peak_mib: float
    """Its largest resident set (MiB), from the kernel's accounting."""
    seconds: float
    """Wall seconds from its start to its end."""


def run_child(command: list[str], *, timeout: float | None = None) -> Child:
    """Run ``command`` and measure its peak resident set from outside (``os.wait4``).

    With ``timeout``, the child is killed (SIGKILL) when it runs longer."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err)
        deadline = None if timeout is None else started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG if deadline else 0)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                process.kill()
                deadline = None  # wait for it to die, blocking
            else:
                time.sleep(0.2)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        return Child(process.returncode, out.read().decode(errors="replace"),
                     err.read().decode(errors="replace"), usage.ru_maxrss / 1024, seconds)


def describe_failure(child: Child) -> str:
    """One line saying why a graph's process failed: its error, or the signal that ended it."""
    if child.returncode < 0:
        number = -child.returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        why = f"killed by {name}"
        if number == signal.SIGKILL:
            why += " (the out-of-memory killer, a memory limit or --timeout)"
        lines = child.stderr.strip().splitlines()
        if lines:
            why += f"; last output: {lines[-1]}"
        return why
    lines = [line for line in child.stderr.strip().splitlines() if line.strip()]
    error = lines[-1] if lines else "no error message"
    return f"exit status {child.returncode}: {error}"


DOC = Path(__file__).resolve().parents[1] / "docs" / "large-graphs.md"
"""The document whose tables ``--doc`` rewrites."""

DOC_COLUMNS = ("graph (budget)", "kernels", "binaries", "build s", "solve s", "total s",
               "plan from", "/greedy", "gap <=", "bound from, stop", "/exact", "peak MiB",
               "load")
"""The columns of :data:`DOC`'s table of this benchmark."""


def write_rows(path: Path, table: str, columns: Sequence[str], rows: dict[str, list[str]]) -> None:
    """Put ``rows`` (the first cell of each its key) into the table ``table`` of ``path``:
    the lines between ``<!-- table:TABLE -->`` and ``<!-- /table:TABLE -->``. A row with
    the same first cell is replaced, the others kept, so runs with different budgets fill
    one table; a header of ``columns`` is written when the table is empty."""
    text = path.read_text()
    begin, end = f"<!-- table:{table} -->", f"<!-- /table:{table} -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no table {table!r} ({begin} ... {end})")
    head, rest = text.split(begin, 1)
    body, tail = rest.split(end, 1)
    fresh = {key: f"| {' | '.join(cells)} |" for key, cells in rows.items()}
    lines = [f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    for line in body.strip().splitlines()[2:]:
        lines.append(fresh.pop(line.split("|")[1].strip(), line))
    lines += fresh.values()
    path.write_text(f"{head}{begin}\n" + "\n".join(lines) + f"\n{end}{tail}")


def doc_row(r: dict[str, object], budget: float, peak_mib: float, load: float) -> list[str]:
    """:data:`DOC_COLUMNS`' cells of one graph's result ``r``."""
    def ratio(value: object) -> str:
        return "-" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]

    gap = "-" if r["gap"] is None else f"{100 * float(r['gap']):.1f}%"  # type: ignore[arg-type]
    return [f"{r['graph']} ({budget:.0f} s)", f"{r['kernels']:,}",
            f"{r['bin']:,}", f"{r['build_s']:.1f}", f"{r['solve_s']:.1f}",
            f"{r['total_s']:.1f}", str(r["source"]), ratio(r["vs_greedy"]), gap,
            f"{r['bound']}, {r['term']}", ratio(r["vs_exact"]), f"{peak_mib:,.0f}",
            f"{load:.1f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="*", default=DEFAULT_SOURCES, metavar="SOURCE",
                        help="graphs (default: %(default)s)")
    parser.add_argument("--ratio", default="4:1", help="PMM:DRAM ratio (default 4:1)")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds, end to end (default 60)")
    parser.add_argument("--doc", action="store_true",
                        help="write each graph's row into docs/large-graphs.md's table")
    parser.add_argument("--exact", type=float, default=None,
                        help="also solve exactly with this time limit (seconds)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="kill a graph's process after this many seconds (default: never)")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest input: chain:100 with a 3 s budget")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        args.sources, args.budget = ["chain:100"], 3.0
    if args.one:
        print(json.dumps(measure(args.sources[0], args.ratio, args.budget, args.exact)))
        return 0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, ratio {args.ratio},"
          f" budget {args.budget:.0f} s")
    print(f"{'graph':<24}{'kern':>6}{'bin':>8}{'nnz':>9}{'greedy':>7}{'build':>7}{'solve':>7}"
          f"{'total':>7}{'fixed':>7}{'plan':>18}{'/greedy':>8}{'gap<=':>7}{'/exact':>7}"
          f"{'MiB':>7}{'load':>6}  bound, stop")
    failed = []
    for source in args.sources:
        command = [sys.executable, __file__, source, "--one", "--ratio", args.ratio,
                   "--budget", str(args.budget)]
        if args.exact:
            command += ["--exact", str(args.exact)]
        child = run_child(command, timeout=args.timeout)
        if child.returncode:
            failed.append(source)
            print(f"{source:<24} FAILED after {child.seconds:.0f} s, peak {child.peak_mib:.0f} "
                  f"MiB: {describe_failure(child)}", flush=True)
            continue
        r = json.loads(child.stdout.strip().splitlines()[-1])
        exact = "-" if r["vs_exact"] is None else f"{r['vs_exact']:.3f}"
        vs_greedy = "-" if r["vs_greedy"] is None else f"{r['vs_greedy']:.3f}"
        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.1f}%"
        load = os.getloadavg()[0]
        print(f"{r['graph']:<24}{r['kernels']:>6}{r['bin']:>8}{r['nnz']:>9}{r['greedy_s']:>7.1f}"
              f"{r['build_s']:>7.1f}{r['solve_s']:>7.1f}{r['total_s']:>7.1f}{r['fixed']:>7}"
              f" {r['source']:>17}{vs_greedy:>8}{gap:>7}{exact:>7}"
              f"{child.peak_mib:>7.0f}{load:>6.1f}  {r['bound']}, {r['term']}", flush=True)
        if args.doc:
            row = doc_row(r, args.budget, child.peak_mib, load)
            write_rows(DOC, "bench_large", DOC_COLUMNS, {row[0]: row})
    if failed:
        print(f"{len(failed)} of {len(args.sources)} graphs failed: {', '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
