"""``run PLAN --graph G --system S``: execute a plan on real memory pools and measure it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from rich.console import Console

from autotm_core.cli.verify_command import add_plan_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="execute a plan on NUMA-bound arenas and compare measured with predicted time",
        description="Verify a plan, make one NUMA-bound, pre-faulted arena per pool, run the "
        "graph's replay kernels with the plan's placements and copies (asynchronous ones on a "
        "copy thread), and report measured against predicted time per kernel and in total. The "
        "bytes read are checked against a replay with every tensor in one pool.",
    )
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
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="kernels listed by measured time (default 10)")
    parser.set_defaults(handler=run)


def _pairs(values: list[str], what: str, convert: Callable[[str], int]) -> dict[str, int]:
    from autotm_core.errors import UsageError

    out = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            if not sep or not name:
                raise ValueError(value)
            out[name] = convert(number)
        except (ValueError, UsageError):
            raise UsageError(f"{what} {value!r} is not POOL=VALUE",
                             hint=f"e.g. {what} pmm=0" if what == "--bind" else
                             f"e.g. {what} pmm=1GiB") from None
    return out


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import Progress

    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.executor.run import execute
    from autotm_core.formats import resolve_system
    from autotm_core.plans import load_plan
    from autotm_core.report.run_report import render_run, run_facts
    from autotm_core.sources import load_source
    from autotm_core.units import parse_size

    bind = _pairs(args.bind, "--bind", int)
    arenas = _pairs(args.arena, "--arena", parse_size)
    plan = load_plan(args.plan)
    graph = load_source(args.graph)
    system = resolve_system(args.system)
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
