"""``run PLAN --graph G --system S``: execute a plan on real memory pools and measure it."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_json,
    add_plan_arguments,
    add_top,
    parse_pairs,
    plan_inputs,
)

DESCRIPTION = """\
Verify a plan, make one NUMA-bound, pre-faulted arena per pool, run the graph's replay
kernels with the plan's placements and copies (asynchronous ones on a copy thread), and
report measured against predicted time per kernel and in total. The bytes read are checked
against a replay with every tensor in one pool."""
"""What ``run --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "run", DESCRIPTION,
        help='execute a plan on NUMA-bound arenas and compare measured with predicted time')
    add_plan_arguments(parser)
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="timed repetitions of the step, after one warm-up (default 5)")
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file for the prediction (default: the roofline)")
    parser.add_argument("--bind", action="append", default=[], metavar="POOL=NODE",
                        help="bind a pool to this NUMA node instead of the system's (repeatable)")
    parser.add_argument("--arena", action="append", default=[], metavar="POOL=SIZE",
                        help="make a bounded pool's arena this size instead of its capacity; it "
                        "must hold the plan's offsets (repeatable), e.g. pmm=1GiB")
    parser.add_argument("--flops-scale", type=float, default=1.0, metavar="X",
                        help="scale every kernel's compute (default 1)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the comparison with the one-pool replay")
    add_json(parser)
    add_top(parser, "by measured time")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import Progress

    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.executor.run import execute
    from autotm_core.report.run_report import render_run, run_facts
    from autotm_core.units import parse_size

    bind = parse_pairs(args.bind, "--bind", int)
    arenas = parse_pairs(args.arena, "--arena", parse_size)
    plan, graph, system = plan_inputs(args, check=False)  # execute verifies it
    costs = resolve_costs(graph, system, costs_path=args.costs)
    with Progress(console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("running the step", total=args.repeat)
        report = execute(
            plan, graph, system, repeat=args.repeat, costs=costs, bind=bind, arena_nbytes=arenas,
            flops_scale=args.flops_scale, check=not args.no_check,
            progress=lambda done, total: progress.update(task, completed=done),
        )
    facts = run_facts(report, top=max(0, args.top))
    if args.json:
        console.print_json(json.dumps(facts))
    else:
        console.print(render_run(facts))
    return 0 if report.check is None or report.check.matches else 1
