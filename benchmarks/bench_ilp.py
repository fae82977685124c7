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

from autotm_core.baselines import greedy
from autotm_core.capacity import fast_capacity
from autotm_core.costs import resolve_costs
from autotm_core.memory import preset
from autotm_core.report.solve_report import all_fast_seconds
from autotm_core.simulation import simulate
from autotm_core.sources import load_source

DEFAULT_GRAPHS = ("example:chain-333", "example:chain-1666", "zoo:densenet121", "zoo:densenet264")
"""About 1,000 and 5,000 kernels of the synthetic chain; the zoo's 1,396 and 3,052 kernels."""


def bench(source: str, *, ratio: str, time_limit: float | None, gap: float) -> dict[str, object]:
    """Plan ``source`` and measure it."""
    from autotm_core.ilp.fitting import plan_with_addresses

    graph = load_source(source)
    system = preset("optane-2019")
    capacity = fast_capacity(graph, ratio=ratio)
    costs = resolve_costs(graph, system)
    started = time.perf_counter()
    fitted = plan_with_addresses(graph, system, fast_capacity_nbytes=capacity, costs=costs,
                                 solver="highs", relative_gap=gap, time_limit_seconds=time_limit)
    total = time.perf_counter() - started
    result = fitted.result
    limited = system.with_capacity(system.fast.name, capacity)
    greedy_seconds = simulate(greedy(graph, system, fast_capacity_nbytes=capacity), graph,
                              limited, costs).step_seconds
    ideal = all_fast_seconds(graph, system, costs)
    return {
        "graph": source, "kernels": len(graph.kernels),
        "build": result.build_seconds,
        "handoff": result.solve.handoff_seconds, "solve": result.solve.solve_seconds,
        "rounds_seconds": " + ".join(f"{r.seconds:.1f}" for r in fitted.rounds), "total": total,
        "rounds": len(fitted.rounds), "variables": result.n_variables,
        "binaries": result.n_binaries, "rows": result.n_constraints,
        "nonzeros": result.n_nonzeros, "termination": result.solve.termination.value,
        "gap": result.solve.gap, "slowdown": result.step_seconds / ideal,
        "vs_greedy": greedy_seconds / result.step_seconds, "warm": result.warm_started,
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
