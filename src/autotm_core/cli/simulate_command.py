"""``simulate PLAN --graph G --system S``: predicted step time, traffic and memory of a plan."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.verify_command import add_plan_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate", help="predict a plan's step time, moves and memory over time",
        description="Verify a plan, then predict its step time (kernels, sync moves, async moves "
        "overlapping kernels), bytes moved per direction and each pool's use over time.",
    )
    add_plan_arguments(parser)
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file (default: the analytic roofline of the system)")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="kernels listed by time (default 10)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    import numpy as np

    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.errors import PlanError
    from autotm_core.formats import resolve_system
    from autotm_core.plans import check_plan, load_plan
    from autotm_core.report.plan_report import render_simulation, simulation_facts
    from autotm_core.simulation import simulate
    from autotm_core.sources import load_source

    plan = load_plan(args.plan)
    graph = load_source(args.graph)
    system = resolve_system(args.system)
    check_plan(plan, graph, system)
    costs = resolve_costs(graph, system, costs_path=args.costs)
    sim = simulate(plan, graph, system, costs)
    try:  # the ideal every slowdown is measured against, capacity aside
        fastest = np.zeros(len(graph.liveness.kernel_tensors), dtype=np.int64)
        all_fast: float | None = float(costs.seconds_all(fastest).sum())
    except PlanError:
        all_fast = None  # the cost table does not allow every tensor in the fastest pool
    facts = simulation_facts(sim, all_fast_seconds=all_fast, top=max(0, args.top))
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    console.print(render_simulation(sim, facts, width=max(20, min(100, console.width - 16))))
    return 0
