"""Benchmark the exact synchronous ILP planner (HiGHS, 1% gap) as graphs grow.

Per graph, at a PMM:DRAM ratio (default 4:1, AutoTM's limit peak / (ratio + 1))
on the optane-2019 preset: the model's size, the seconds to build the matrix
form, to build the Pyomo model from it (what other solvers and ``build_model``
users pay; not used on the HiGHS path), the hand-off to HiGHS and the solve,
the end-to-end seconds of ``plan_graph`` (build, warm start, solve, decode,
verify, simulate), and the plan's step time against the greedy baseline and
all-fast (the ideal).

    python benchmarks/bench_ilp_scaling.py [SOURCE ...] [--ratio 4:1] [--time-limit S]

SOURCE is ``chain:LAYERS`` (``examples.networks.training_chain``, 3 x LAYERS + 1
kernels) or any graph source (``zoo:resnet50:batch=32``). Default: chain:333,
chain:1666, zoo:resnet50:batch=32, zoo:densenet121:batch=8.
"""

from __future__ import annotations

import argparse
import os
import time

from autotm_core.baselines import all_fast, greedy
from autotm_core.capacity import fast_capacity
from autotm_core.costs import resolve_costs
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_pyomo
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.memory import preset
from autotm_core.simulation import simulate
from autotm_core.sources import load_source

DEFAULT_SOURCES = ["chain:333", "chain:1666", "zoo:resnet50:batch=32", "zoo:densenet121:batch=8"]


def load(source: str):
    if source.startswith("chain:"):
        return training_chain(int(source.split(":", 1)[1]))
    return load_source(source)


def run(source: str, ratio: str, time_limit: float, pyomo: bool) -> dict[str, object]:
    graph = load(source)
    capacity = fast_capacity(graph, ratio=ratio)
    system = preset("optane-2019").with_capacity("dram", capacity)
    costs = resolve_costs(graph, system)
    started = time.perf_counter()
    index = build_program(graph, costs, system, None, FormulationOptions())
    matrix_seconds = time.perf_counter() - started
    pyomo_seconds = float("nan")
    if pyomo:
        started = time.perf_counter()
        to_pyomo(index.lp)
        pyomo_seconds = time.perf_counter() - started
    del index
    started = time.perf_counter()
    result = plan_graph(graph, system, costs=costs, time_limit_seconds=time_limit,
                        relative_gap=0.01)
    total = time.perf_counter() - started
    greedy_seconds = float(simulate(greedy(graph, system), graph, system, costs).step_seconds)
    unlimited = preset("optane-2019")
    fast_seconds = float(simulate(all_fast(graph, unlimited), graph, unlimited,
                                  resolve_costs(graph, unlimited)).step_seconds)
    solve = result.solve
    return {
        "graph": source, "kernels": len(graph.kernels), "vars": result.n_variables,
        "bin": result.n_binaries, "rows": result.n_constraints, "nnz": result.n_nonzeros,
        "matrix_s": matrix_seconds, "pyomo_s": pyomo_seconds, "handoff_s": solve.handoff_seconds,
        "solve_s": solve.solve_seconds, "total_s": total, "term": solve.termination.value,
        "gap": solve.gap, "warm": result.warm_started,
        "vs_greedy": result.step_seconds / greedy_seconds,
        "vs_fast": result.step_seconds / fast_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=DEFAULT_SOURCES)
    parser.add_argument("--ratio", default="4:1")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--no-pyomo", action="store_true", help="skip timing the Pyomo build")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, ratio {args.ratio}")
    header = (f"{'graph':<26}{'kern':>6}{'vars':>8}{'bin':>7}{'rows':>8}{'nnz':>9}"
              f"{'matrix':>8}{'pyomo':>7}{'handoff':>8}{'solve':>8}{'total':>8}"
              f"{'gap':>8}{'warm':>5}{'/greedy':>8}{'/fast':>7}  stop")
    print(header)
    for source in args.sources:
        r = run(source, args.ratio, args.time_limit, not args.no_pyomo)
        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.2f}%"
        print(f"{r['graph']:<26}{r['kernels']:>6}{r['vars']:>8}{r['bin']:>7}{r['rows']:>8}"
              f"{r['nnz']:>9}{r['matrix_s']:>8.2f}{r['pyomo_s']:>7.2f}{r['handoff_s']:>8.2f}"
              f"{r['solve_s']:>8.2f}{r['total_s']:>8.2f}{gap:>8}{'y' if r['warm'] else 'n':>5}"
              f"{r['vs_greedy']:>8.3f}{r['vs_fast']:>7.3f}  {r['term']}", flush=True)


if __name__ == "__main__":
    main()
