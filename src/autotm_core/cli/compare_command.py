"""``compare GRAPH --system S``: planners and solvers side by side on one graph and limit."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_ilp_options,
    add_insist,
    add_json,
    add_point,
)

DESCRIPTION = """\
Plan one graph at one limit with each planner (each ILP formulation with each solver, and
each baseline), as 'solve' and 'baseline' plan it, and compare predicted step time, slowdown
against all in fast memory, bytes moved, planning time and the proved gap; then, per
planner, each tensor kind's share of the time added over all in fast memory and its bytes
in the fastest pool (--json: the whole breakdown by kind of each plan)."""
"""What ``compare --help`` says the command does."""

DEFAULT_PLANNERS = ("static,synchronous,first-touch,greedy,2lm,checkpoint-layers,"
                    "offload-activations,recompute-only")
"""The planners ``compare`` plans when ``--planners`` is not given."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "compare", DESCRIPTION,
                         help='planners, solvers and baselines side by side on one graph and limit')
    add_point(parser, limit_required=True)
    add_ilp_options(parser, time_limit=60.0, solver=False)
    parser.add_argument("--planners", default=DEFAULT_PLANNERS, metavar="LIST",
                        help="ILP formulations and baselines, comma-separated "
                        f"(default {DEFAULT_PLANNERS})")
    parser.add_argument("--solvers", default="highs", metavar="LIST",
                        help="ILP solvers to compare, comma-separated (default highs)")
    add_insist(parser)
    add_json(parser, "the results")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.cli.options import check_point, ilp_settings, limit_of, split
    from autotm_core.planning import get_planner, load_problem
    from autotm_core.planning.breakdown import KindBreakdown, plan_breakdown
    from autotm_core.report.sweep_report import compare_facts, render_compare
    from autotm_core.sweep.point import SweepPoint, plan_point

    settings = ilp_settings(args)
    limit = str(limit_of(args))
    check_point(load_problem(args.graph, args.system, limit=limit), insist=args.insist)
    points = []
    for name in split(args.planners):
        planner = get_planner(name)
        for solver in split(args.solvers) if planner.is_ilp else ["highs"]:
            points.append(SweepPoint(
                graph=args.graph, system=args.system, planner=name, limit=limit, solver=solver,
                time_limit_seconds=settings.time_limit_seconds,
                relative_gap=settings.relative_gap, mode=settings.mode.value,
                addresses=settings.addresses, recompute=settings.recompute))
    results = []
    breakdowns: list[KindBreakdown | None] = []
    with console.status("planning") as status:
        for p in points:
            status.update(f"planning with {p.planner}" + (
                f" ({p.solver})" if get_planner(p.planner).is_ilp else ""))
            result, made = plan_point(p)
            results.append(result)
            breakdowns.append(None if made is None else plan_breakdown(
                load_problem(p.graph, p.system, limit=p.limit), made,
                step_seconds=result.step_seconds))
    if args.json:
        console.print_json(json.dumps(compare_facts(results, breakdowns)))
    else:
        console.print(render_compare(results, breakdowns, width=console.width))
    return 0
