"""``baseline GRAPH --system S --policy P``: plan with a baseline, verify it, and report it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from autotm_core.cli.options import (
    add_command,
    add_costs,
    add_insist,
    add_json,
    add_output,
    add_point,
    add_top,
    problem_of,
    report_width,
)

DESCRIPTION = """\
Plan a graph with one of the baselines every result is compared with, verify the plan, and
report its predicted step time, slowdown against all in the fastest pool (without a capacity
limit), bytes moved and memory over time. See docs/baselines.md."""
"""What ``baseline --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from autotm_core.planning import BASELINE_PLANNERS

    parser = add_command(subparsers, "baseline", DESCRIPTION,
                         help='plan with a baseline (first-touch, 2lm, greedy, all-fast, all-slow)')
    add_point(parser, limit_required=False)
    parser.add_argument("--planner", "--policy", dest="planner", required=True,
                        choices=BASELINE_PLANNERS, help="the baseline")
    add_output(parser)
    add_costs(parser)
    parser.add_argument("--line-size", default="4KiB", metavar="SIZE",
                        help="2lm: cache line size (default 4KiB pages; 64 for hardware lines)")
    parser.add_argument("--ways", type=int, default=1, metavar="N",
                        help="2lm: lines per set, LRU (default 1: direct-mapped, as the hardware)")
    parser.add_argument("--cold", action="store_true",
                        help="2lm: start from an empty cache instead of a warmed one")
    add_insist(parser)
    add_top(parser)
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.planning import CacheOptions, PlanSettings, plan
    from autotm_core.plans import save_plan
    from autotm_core.report.plan_report import render_simulation, simulation_facts
    from autotm_core.units import parse_size

    cache = CacheOptions(line_nbytes=parse_size(args.line_size), ways=args.ways,
                         warm=not args.cold)
    problem = problem_of(args)
    outcome = plan(problem, args.planner, PlanSettings(cache=cache))
    if args.output:
        save_plan(outcome.plan, args.output)
    facts = simulation_facts(outcome.simulation, all_fast_seconds=outcome.all_fast_seconds,
                             top=max(0, args.top), reruns=len(outcome.plan.reruns))
    facts["policy"] = facts["planner_name"] = args.planner
    facts["fast_capacity_nbytes"] = problem.fast_capacity_nbytes
    facts["attributes"] = dict(outcome.plan.attributes)
    if args.output:
        facts["output"] = args.output
    if outcome.cache is not None:
        _use_cache_model(facts, outcome.cache, outcome.simulation.kernel_names,
                         top=max(0, args.top))
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    if outcome.cache is not None:
        console.print(_cache_table(facts))
    console.print(render_simulation(outcome.simulation, facts, width=report_width(console)))
    if args.output:
        console.print(f"plan written to {args.output}")
    return 0


def _use_cache_model(
    facts: dict[str, Any], cache: Any, names: tuple[str, ...], *, top: int
) -> None:
    """Replace the simulator's times (those of all-slow without a cache) by the 2LM model's."""
    import numpy as np

    seconds = cache.kernel_seconds
    total = float(seconds.sum())
    facts["step_seconds"] = facts["kernel_seconds"] = facts["effective_seconds"] = total
    if facts["all_fast_seconds"]:
        facts["slowdown"] = facts["step_seconds"] / facts["all_fast_seconds"]
    facts["top_kernels"] = [
        {"index": int(k), "name": names[k], "kernel_seconds": float(seconds[k]),
         "sync_seconds": 0.0, "async_seconds": 0.0, "effective_seconds": float(seconds[k])}
        for k in np.argsort(-seconds, kind="stable")[:top]
    ]
    facts["cache"] = cache.attributes()


def _cache_table(facts: dict[str, Any]) -> Table:
    from autotm_core.units import format_bytes

    c = facts["cache"]
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    size = "unbounded" if c["cache_nbytes"] is None else format_bytes(c["cache_nbytes"])
    ways = "direct-mapped" if c["ways"] == 1 else f"{c['ways']}-way LRU"
    table.add_row("2LM cache", f"{size}, {format_bytes(c['line_nbytes'])} lines, {ways}")
    table.add_row("hit rate", f"{c['hit_rate']:.1%} of {c['accesses']:,} line accesses")
    table.add_row("slow-pool traffic", f"{format_bytes(c['slow_read_nbytes'])} filled, "
                  f"{format_bytes(c['slow_write_nbytes'])} written back")
    table.add_row("", "times below are the cache model's; memory charts show the plan (all-slow)")
    return table
