"""Benchmark the approximate planner (``autotm_core.ilp.approximate.plan_approximate``) as
graphs grow.

Per graph, at a PMM:DRAM ratio (default 4:1) on the optane-2019 preset, each in
its own process (so peak memory is that graph's): seconds for greedy, for
building the model with its reductions and warm start, for the solver, end to
end; what the reductions fixed; the plan's step time against greedy and against
the proven lower bound (the worst-case gap); with ``--exact S``, also against
the exact planner (``plan_graph``, 0.1% gap, S seconds); and peak memory.

    python benchmarks/bench_large.py [SOURCE ...] [--ratio 4:1] [--budget 60] [--exact S]

SOURCE is ``chain:KERNELS`` (``examples.networks.training_chain`` with about
KERNELS kernels) or any graph source (``zoo:densenet264:batch=2``).
Default: chain:1000 chain:5000 chain:20000.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

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
    row: dict[str, object] = {
        "graph": source, "kernels": len(graph.kernels), "bin": result.n_binaries,
        "nnz": result.n_nonzeros, "greedy_s": result.baseline_seconds,
        "build_s": result.build_seconds, "solve_s": result.solve_seconds,
        "total_s": result.total_seconds, "fixed": result.reductions.columns.size,
        "fast_t": result.reductions.always_fast_tensors,
        "fetch": result.reductions.unprofitable_fetches, "source": result.source,
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
    row["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=DEFAULT_SOURCES)
    parser.add_argument("--ratio", default="4:1")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds, end to end")
    parser.add_argument("--exact", type=float, default=None,
                        help="also solve exactly with this time limit (seconds)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.sources[0], args.ratio, args.budget, args.exact)))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, ratio {args.ratio},"
          f" budget {args.budget:.0f} s")
    print(f"{'graph':<24}{'kern':>6}{'bin':>8}{'nnz':>9}{'greedy':>7}{'build':>7}{'solve':>7}"
          f"{'total':>7}{'fixed':>7}{'plan':>7}{'/greedy':>8}{'gap<=':>7}{'/exact':>7}"
          f"{'MiB':>6}  bound, stop")
    for source in args.sources:
        command = [sys.executable, __file__, source, "--one", "--ratio", args.ratio,
                   "--budget", str(args.budget)]
        if args.exact:
            command += ["--exact", str(args.exact)]
        started = time.perf_counter()
        out = subprocess.run(command, capture_output=True, text=True, check=False)
        if out.returncode:
            print(f"{source:<24} failed after {time.perf_counter() - started:.0f} s: "
                  f"{out.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        exact = "-" if r["vs_exact"] is None else f"{r['vs_exact']:.3f}"
        print(f"{r['graph']:<24}{r['kernels']:>6}{r['bin']:>8}{r['nnz']:>9}{r['greedy_s']:>7.1f}"
              f"{r['build_s']:>7.1f}{r['solve_s']:>7.1f}{r['total_s']:>7.1f}{r['fixed']:>7}"
              f"{r['source']:>7}{r['vs_greedy']:>8.3f}{100 * r['gap']:>6.1f}%{exact:>7}"
              f"{r['peak_mib']:>6.0f}  {r['bound']}, {r['term']}", flush=True)


if __name__ == "__main__":
    main()
