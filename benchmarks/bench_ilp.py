"""End-to-end speed of the synchronous ILP planner (issue 4's figures).

Plans training graphs of about 1,000 and 5,000 kernels
(``examples.networks.training_chain(333)`` and ``(1666)``) and zoo graphs of
similar size at PMM:DRAM 4:1 on ``optane-2019`` with HiGHS to a 1% gap, with
addresses fitted (``plan_with_addresses``), and prints per graph: model build,
hand-off and solve seconds of the last fitting round, each round's seconds,
the wall-clock total (rounds, packing and verification), the model size, and
the slowdown against all in the fastest pool and against the greedy baseline.

    python benchmarks/bench_ilp.py                      # chain-333, chain-1666, zoo graphs
    python benchmarks/bench_ilp.py chain-333 zoo:densenet121 --time-limit 120
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from autotm_core.planning import PlanSettings, load_problem, plan

DEFAULT_GRAPHS = ("example:chain-333", "example:chain-1666", "zoo:densenet121", "zoo:densenet264")
"""About 1,000 and 5,000 kernels of the synthetic chain; the zoo's 1,396 and 3,052 kernels."""


def bench(source: str, *, ratio: str, time_limit: float | None, gap: float) -> dict[str, object]:
    """Plan ``source`` exactly, with addresses, as ``solve --mode exact`` does, and measure it."""
    problem = load_problem(source, "optane-2019", limit=ratio)
    started = time.perf_counter()
    outcome = plan(problem, "synchronous",
                   PlanSettings(mode="exact", relative_gap=gap, time_limit_seconds=time_limit))
    total = time.perf_counter() - started
    greedy = plan(problem, "greedy")
    solve, model, addresses = outcome.solve, outcome.model, outcome.addresses
    assert solve is not None and model is not None and addresses is not None
    return {
        "graph": source, "kernels": len(problem.graph.kernels),
        "build": solve.build_seconds,
        "handoff": solve.handoff_seconds, "solve": solve.solve_seconds,
        "rounds_seconds": " + ".join(f"{r.seconds:.1f}" for r in addresses.rounds),
        "total": total, "rounds": len(addresses.rounds), "variables": model.variables,
        "binaries": model.binaries, "rows": model.constraints,
        "nonzeros": model.nonzeros, "termination": solve.termination,
        "gap": solve.gap, "slowdown": outcome.slowdown,
        "vs_greedy": greedy.step_seconds / outcome.step_seconds, "warm": solve.warm_started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="*", default=list(DEFAULT_GRAPHS),
                        help="graph sources (chain-N means example:chain-N)")
    parser.add_argument("--ratio", default="4:1", help="PMM:DRAM ratio (default 4:1)")
    parser.add_argument("--time-limit", type=float, default=None, help="solver limit, seconds")
    parser.add_argument("--gap", type=float, default=0.01, help="relative gap (default 0.01)")
    args = parser.parse_args()
    console = Console()
    table = Table(title=f"synchronous ILP, optane-2019, PMM:DRAM {args.ratio}, HiGHS, "
                  f"gap {args.gap:.0%}")
    for column in ("graph", "kernels", "build s", "hand-off s", "solve s", "per round s",
                   "total s", "rounds", "vars", "binaries", "rows", "nonzeros", "termination",
                   "gap", "warm", "slowdown", "greedy / ilp"):
        table.add_column(column, justify="left" if column in ("graph", "termination") else "right")
    for source in args.graphs:
        source = f"example:{source}" if source.startswith("chain-") else source
        with console.status(f"planning {source}"):
            r = bench(source, ratio=args.ratio, time_limit=args.time_limit, gap=args.gap)
        console.print(f"{source}: {r}")
        table.add_row(
            str(r["graph"]), f"{r['kernels']:,}", f"{r['build']:.2f}", f"{r['handoff']:.2f}",
            f"{r['solve']:.2f}", str(r["rounds_seconds"]), f"{r['total']:.2f}",
            str(r["rounds"]), f"{r['variables']:,}", f"{r['binaries']:,}", f"{r['rows']:,}",
            f"{r['nonzeros']:,}", str(r["termination"]),
            "-" if r["gap"] is None else f"{r['gap']:.2%}", "yes" if r["warm"] else "no",
            f"{r['slowdown']:.3f}x", f"{r['vs_greedy']:.3f}x",
        )
    console.print(table)


if __name__ == "__main__":
    main()
