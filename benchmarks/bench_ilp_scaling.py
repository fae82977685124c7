"""Benchmark the exact synchronous ILP planner (HiGHS, 1% gap) as graphs grow.

Per graph, at a PMM:DRAM ratio (default 4:1, AutoTM's limit peak / (ratio + 1))
on the optane-2019 preset: the model's size, the seconds to build the matrix
form, to build the Pyomo model from it (what CBC and ``build_model`` users pay;
not used on the HiGHS and GLPK paths), the hand-off to HiGHS and the solve,
the end-to-end seconds of ``plan_graph`` (build, warm start, solve, decode,
verify, simulate), and the plan's step time against the greedy baseline and
all-fast (the ideal).

    python benchmarks/bench_ilp_scaling.py [SOURCE ...] [--ratio 4:1] [--time-limit S]

With ``--build-only`` nothing is solved: per graph, the best of ``--repeat``
runs (default 3) of each step from the graph to a Pyomo ``ConcreteModel``
(``build_model``'s work): the cost table, the matrix form (``build_program``),
the Pyomo model from it (``to_matrix_problem`` and ``to_pyomo``), their sum,
the process's CPU seconds for them, and ``to_pyomo`` as a fraction of the
matrix build (CPU seconds and the ratio are steadier than wall seconds on a
shared machine).

    python benchmarks/bench_ilp_scaling.py chain:1666 --build-only --repeat 5

SOURCE is ``chain:LAYERS`` (``examples.networks.training_chain``, 3 x LAYERS + 1
kernels: chain:1666 has 4,999) or any graph source (``zoo:resnet50:batch=32``).
Default: chain:333, chain:1666, zoo:resnet50:batch=32, zoo:densenet121:batch=8.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import time

import attrs

from autotm_core.capacity import fast_capacity
from autotm_core.costs import resolve_costs
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import LinearProgram, to_matrix_problem
from autotm_core.ilp.options import FormulationOptions
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.presets import preset
from autotm_core.solvers.pyomo import to_pyomo
from autotm_core.sources import load_source

DEFAULT_SOURCES = ["chain:333", "chain:1666", "zoo:resnet50:batch=32", "zoo:densenet121:batch=8"]


def load(source: str):
    if source.startswith("chain:"):
        return training_chain(int(source.split(":", 1)[1]))
    return load_source(source)


def run(source: str, ratio: str, time_limit: float, pyomo: bool) -> dict[str, object]:
    problem = load_problem(load(source), "optane-2019", limit=ratio)
    graph, system, costs = problem.graph, problem.limited_system, problem.costs
    started = time.perf_counter()
    index = build_program(graph, costs, system, None, FormulationOptions())
    matrix_seconds = time.perf_counter() - started
    pyomo_seconds = float("nan")
    if pyomo:
        started = time.perf_counter()
        to_pyomo(to_matrix_problem(index.lp))
        pyomo_seconds = time.perf_counter() - started
    del index
    started = time.perf_counter()
    outcome = plan(problem, "synchronous",
                   PlanSettings(mode="exact", addresses=False, time_limit_seconds=time_limit,
                                relative_gap=0.01))
    total = time.perf_counter() - started
    greedy = plan(problem, "greedy")
    solve, model = outcome.solve, outcome.model
    assert solve is not None and model is not None
    return {
        "graph": source, "kernels": len(graph.kernels), "vars": model.variables,
        "bin": model.binaries, "rows": model.constraints, "nnz": model.nonzeros,
        "matrix_s": matrix_seconds, "pyomo_s": pyomo_seconds, "handoff_s": solve.handoff_seconds,
        "solve_s": solve.solve_seconds, "total_s": total, "term": solve.termination,
        "gap": solve.gap, "warm": solve.warm_started,
        "vs_greedy": outcome.step_seconds / greedy.step_seconds,
        "vs_fast": outcome.slowdown,
    }


@attrs.frozen
class BuildTimes:
    """Seconds of each step from a graph to its Pyomo model (the best of some runs)."""

    source: str
    """The graph source."""
    kernels: int
    """Kernels of the graph."""
    lp: LinearProgram
    """The model in matrix form (for its size)."""
    costs_seconds: float
    """``resolve_costs``."""
    matrix_seconds: float
    """``build_program``: the matrix form."""
    pyomo_seconds: float
    """``to_pyomo``: the Pyomo model from the matrix form (its arrays included)."""
    cpu_seconds: float
    """This process's CPU seconds for all three (less sensitive than wall time to other
    jobs on a shared machine)."""

    @property
    def total_seconds(self) -> float:
        """Graph to Pyomo model (what ``build_model`` does, given the graph)."""
        return self.costs_seconds + self.matrix_seconds + self.pyomo_seconds


def build_times(source: str, ratio: str, repeat: int) -> BuildTimes:
    """Best-of-``repeat`` seconds of each step from ``source``'s graph to a Pyomo model."""
    graph = load(source)
    capacity = fast_capacity(graph, ratio=ratio)  # also computes the graph's liveness
    system = preset("optane-2019").with_capacity("dram", capacity)
    best = [math.inf] * 4
    for _ in range(repeat):
        cpu = time.process_time()
        started = time.perf_counter()
        costs = resolve_costs(graph, system)
        built = time.perf_counter()
        index = build_program(graph, costs, system, None, FormulationOptions())
        matrix = time.perf_counter()
        model = to_pyomo(to_matrix_problem(index.lp))
        done = time.perf_counter()
        cpu = time.process_time() - cpu
        best = [min(b, s) for b, s in zip(
            best, (built - started, matrix - built, done - matrix, cpu), strict=True)]
        lp = index.lp
        del model, index
        gc.collect()  # the next run starts without this one's garbage
    return BuildTimes(source, len(graph.kernels), lp, *best)


def print_build_times(sources: list[str], ratio: str, repeat: int) -> None:
    print(f"{'graph':<26}{'kern':>6}{'vars':>8}{'rows':>8}{'nnz':>9}{'costs':>7}{'matrix':>8}"
          f"{'pyomo':>7}{'total':>7}{'cpu':>7}  pyomo/matrix  (seconds, best of {repeat})")
    for source in sources:
        r = build_times(source, ratio, repeat)
        print(f"{r.source:<26}{r.kernels:>6}{r.lp.n_vars:>8}{r.lp.n_rows:>8}"
              f"{r.lp.n_nonzeros:>9}{r.costs_seconds:>7.2f}{r.matrix_seconds:>8.2f}"
              f"{r.pyomo_seconds:>7.2f}{r.total_seconds:>7.2f}{r.cpu_seconds:>7.2f}"
              f"  {r.pyomo_seconds / r.matrix_seconds:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=DEFAULT_SOURCES)
    parser.add_argument("--ratio", default="4:1")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--no-pyomo", action="store_true", help="skip timing the Pyomo build")
    parser.add_argument("--build-only", action="store_true",
                        help="time only the steps from graph to Pyomo model; solve nothing")
    parser.add_argument("--repeat", type=int, default=3, help="--build-only: runs per graph")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, ratio {args.ratio}")
    if args.build_only:
        print_build_times(args.sources, args.ratio, max(1, args.repeat))
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        return
    header = (f"{'graph':<26}{'kern':>6}{'vars':>8}{'bin':>7}{'rows':>8}{'nnz':>9}"
              f"{'matrix':>8}{'pyomo':>7}{'handoff':>8}{'solve':>8}{'total':>8}"
              f"{'gap':>8}{'warm':>5}{'/greedy':>8}{'/fast':>7}  stop")
    print(header)
    for source in args.sources:
        r = run(source, args.ratio, args.time_limit, not args.no_pyomo)
        gap = f"{100 * r['gap']:.2f}%" if isinstance(r["gap"], float) else "-"
        print(f"{r['graph']:<26}{r['kernels']:>6}{r['vars']:>8}{r['bin']:>7}{r['rows']:>8}"
              f"{r['nnz']:>9}{r['matrix_s']:>8.2f}{r['pyomo_s']:>7.2f}{r['handoff_s']:>8.2f}"
              f"{r['solve_s']:>8.2f}{r['total_s']:>8.2f}{gap:>8}{'y' if r['warm'] else 'n':>5}"
              f"{r['vs_greedy']:>8.3f}{r['vs_fast']:>7.3f}  {r['term']}", flush=True)


if __name__ == "__main__":
    main()
