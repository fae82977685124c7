"""Asynchronous against synchronous planning on the paper's workloads and a GPU (issue 15).

Per cell: the synchronous and the asynchronous plan, each by its own call of
:func:`autotm_core.planning.plan` under the same ``--time-limit`` (which bounds the
whole call: the asynchronous call plans static and synchronous on its way), with
addresses fitted; greedy's plan; the asynchronous model's bound (``-`` when the
solver proved none); and the physical lower bound
(:mod:`autotm_core.planning.lower_bound`): no less than every kernel at its
least time, and, split after any kernel, no less than the crossings out of
the fast pool needed up to it plus the crossings in needed after it (each side
no shorter than its own compute), over the fastest rates that can move them; with
recomputation on (the default), the bound that also holds for plans that rerun producers;
raised by up to ``--bound-seconds`` (300 s) of branch and bound on its LP with the big
tensors' columns integral (its time: ``bound wall``).
Prints each plan's distance to that bound and the load average.

    python benchmarks/bench_async.py                  # every cell, --time-limit 60
    python benchmarks/bench_async.py --cells vgg19-gpu gpt2-gpu --time-limit 120
    python benchmarks/bench_async.py --cells resnet50 --time-limit 5 --json   # the rows as JSON
    python benchmarks/bench_async.py --cells vgg19-gpu --bound-seconds 0   # the LP's bound alone
    python benchmarks/bench_async.py --smoke          # example:mlp, --time-limit 1
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rich.console import Console
from rich.table import Table

from autotm_core.cli.options import seconds
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.planning.lower_bound import physical_lower_bound

CELLS = {
    "inception_v4": ("zoo:inception_v4:batch=64", "optane-2019", "4:1"),
    "resnet50": ("zoo:resnet50:batch=64", "optane-2019", "4:1"),
    "densenet121": ("zoo:densenet121:batch=64", "optane-2019", "4:1"),
    "vgg19": ("zoo:vgg19:batch=128", "optane-2019", "4:1"),
    "vgg19-gpu": ("zoo:vgg19:batch=128", "gpu-h200", "4:1"),
    "gpt2-gpu": ("zoo:gpt2:batch=8,seq=1024,layers=12", "gpu-h200", "1:1"),
}
"""Cell name -> (graph, memory system, PMM:DRAM limit); 1:1 is half the peak."""

SMOKE_CELLS = {"mlp": ("example:mlp", "optane-2019", "4:1")}
"""The smallest cell (``--smoke``): that the benchmark runs, not a figure worth keeping."""


def bench(name: str, *, time_limit: float, bound_seconds: float = 0.0) -> dict[str, object]:
    """Plan cell ``name`` synchronously and asynchronously, and measure both; the physical
    bound with up to ``bound_seconds`` of its integral program."""
    source, system, limit = {**CELLS, **SMOKE_CELLS}[name]
    problem = load_problem(source, system, limit=limit)
    out: dict[str, object] = {"cell": name, "kernels": len(problem.graph.kernels)}
    settings = PlanSettings(time_limit_seconds=time_limit)
    for planner in ("synchronous", "asynchronous"):
        started = time.perf_counter()
        outcome = plan(problem, planner, settings)
        out[planner] = outcome.step_seconds
        out[f"{planner}_wall"] = time.perf_counter() - started
        out[f"{planner}_source"] = outcome.source
        if planner == "asynchronous":
            assert outcome.solve is not None
            out["bound"] = outcome.solve.bound_seconds
    out["greedy"] = plan(problem, "greedy").step_seconds
    # the bound on every plan the settings allow: with recomputation (the default), one
    # that also holds for plans that rerun producers
    started = time.perf_counter()
    out["physical"] = physical_lower_bound(problem, recompute=settings.recompute,
                                           integral_seconds=bound_seconds).seconds
    out["physical_wall"] = time.perf_counter() - started
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="*", default=list(CELLS), choices=list(CELLS),
                        help="cells to run (default: all)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="each call's time limit, seconds (default 60)")
    parser.add_argument("--bound-seconds", type=seconds, default=300.0,
                        help="the physical bound's integral program's time limit, seconds "
                        "(default 300; 0: the LP's bound alone)")
    parser.add_argument("--json", action="store_true",
                        help="print each cell's figures as one JSON list instead of a table")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest input: example:mlp on optane-2019 at 4:1, "
                        "--time-limit 1")
    args = parser.parse_args()
    if args.smoke:
        args.cells, args.time_limit, args.bound_seconds = list(SMOKE_CELLS), 1.0, 1.0
    if args.json:
        print(json.dumps([bench(name, time_limit=args.time_limit,
                                bound_seconds=args.bound_seconds) for name in args.cells],
                         indent=1))
        return
    console = Console(width=160)
    table = Table(title=f"asynchronous vs synchronous, --time-limit {args.time_limit:g}")
    for column in ("cell", "kernels", "sync step", "sync wall", "async step", "async wall",
                   "async/sync", "greedy", "async bound", "physical bound", "bound wall",
                   "async/physical", "async source"):
        table.add_column(column, justify="left" if column in ("cell", "async source") else "right")
    for name in args.cells:
        r = bench(name, time_limit=args.time_limit, bound_seconds=args.bound_seconds)
        sync, asyn, physical = (float(r["synchronous"]), float(r["asynchronous"]),  # type: ignore[arg-type]
                                float(r["physical"]))  # type: ignore[arg-type]
        bound = r["bound"]
        table.add_row(
            name, f"{r['kernels']:,}", f"{sync:.4f} s", f"{r['synchronous_wall']:.1f} s",
            f"{asyn:.4f} s", f"{r['asynchronous_wall']:.1f} s", f"{asyn / sync:.3f}",
            f"{r['greedy']:.4f} s", "-" if bound is None else f"{bound:.4f} s",
            f"{physical:.4f} s", f"{r['physical_wall']:.1f} s",
            f"{asyn / physical:.2f}x" if physical else "-",
            str(r["asynchronous_source"]))
        console.print(f"{name}: done (load average {os.getloadavg()[0]:.2f})")
    console.print(table)
    console.print(f"load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
