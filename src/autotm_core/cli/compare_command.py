"""``compare GRAPH --system S``: planners and solvers side by side on one graph and limit."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.info_command import SOURCE_HELP
from autotm_core.cli.sweep_command import add_planning_arguments, split


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare", help="planners, solvers and baselines side by side on one graph and limit",
        description="Plan one graph at one fast-memory limit with each planner (each ILP "
        "formulation with each solver, and each baseline) and compare predicted step time, "
        "slowdown against all in fast memory, bytes moved, planning time and the proved gap.",
    )
    parser.add_argument("graph", metavar="GRAPH", help=SOURCE_HELP)
    add_planning_arguments(parser)
    limit = parser.add_mutually_exclusive_group(required=True)
    limit.add_argument("--fast-capacity", metavar="SIZE", help="fast-memory limit, e.g. 16MiB")
    limit.add_argument("--ratio", metavar="PMM:DRAM", help="PMM:DRAM ratio, e.g. 4:1")
    parser.add_argument("--planners", default="static,synchronous,first-touch,greedy,2lm",
                        metavar="LIST", help="ILP formulations and baselines, comma-separated "
                        "(default static,synchronous,first-touch,greedy,2lm)")
    parser.add_argument("--solvers", default="highs", metavar="LIST",
                        help="ILP solvers to compare, comma-separated (default highs)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.report.sweep_report import compare_facts, render_compare
    from autotm_core.sweep.point import ILP_PLANNERS, SweepPoint, check_planner, run_point

    limit = args.ratio or args.fast_capacity
    points = []
    for planner in split(args.planners):
        check_planner(planner)
        for solver in split(args.solvers) if planner in ILP_PLANNERS else ["highs"]:
            points.append(SweepPoint(graph=args.graph, system=args.system, planner=planner,
                                     limit=limit, solver=solver,
                                     time_limit_seconds=args.time_limit, relative_gap=args.gap))
    results = []
    with console.status("planning") as status:
        for p in points:
            status.update(f"planning with {p.planner}" + (
                f" ({p.solver})" if p.planner in ILP_PLANNERS else ""))
            results.append(run_point(p))
    if args.json:
        console.print_json(json.dumps(compare_facts(results)))
    else:
        console.print(render_compare(results))
    return 0
