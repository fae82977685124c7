"""``baseline GRAPH --system S --policy P``: plan with a baseline, verify it, and report it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from autotm_core.cli.info_command import SOURCE_HELP

POLICIES = ("first-touch", "2lm", "greedy", "all-fast", "all-slow")
"""Names of the baselines, as ``--policy`` takes them."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "baseline", help="plan with a baseline (first-touch, 2lm, greedy, all-fast, all-slow)",
        description="Plan a graph with one of the baselines every result is compared with, verify "
        "the plan, and report its predicted step time, slowdown against all in the fastest pool "
        "(without a capacity limit), bytes moved and memory over time. See docs/baselines.md.",
    )
    parser.add_argument("graph", metavar="GRAPH", help=SOURCE_HELP)
    parser.add_argument("--system", required=True, metavar="PRESET_OR_FILE",
                        help="a memory-system preset (e.g. optane-2019) or a memory-system file")
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument("--fast-capacity", metavar="SIZE",
                       help="limit of the fastest pool, e.g. 16GiB, 512MiB (default: the system's)")
    limit.add_argument("--ratio", metavar="PMM:DRAM",
                       help="limit the fastest pool to peak live bytes / (PMM + 1), e.g. 4:1")
    parser.add_argument("--policy", required=True, choices=POLICIES, help="the baseline")
    parser.add_argument("-o", "--output", metavar="PLAN", help="write the plan to this file")
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file (default: the analytic roofline of the system)")
    parser.add_argument("--line-size", default="4KiB", metavar="SIZE",
                        help="2lm: cache line size (default 4KiB pages; 64 for hardware lines)")
    parser.add_argument("--ways", type=int, default=1, metavar="N",
                        help="2lm: lines per set, LRU (default 1: direct-mapped, as the hardware)")
    parser.add_argument("--cold", action="store_true",
                        help="2lm: start from an empty cache instead of a warmed one")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="kernels listed by time (default 10)")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.baselines import all_fast, run_baseline
    from autotm_core.baselines.two_level import two_level_plan
    from autotm_core.capacity import fast_capacity
    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.formats import resolve_system
    from autotm_core.plans import check_plan, save_plan
    from autotm_core.report.plan_report import render_simulation, simulation_facts
    from autotm_core.simulation import simulate
    from autotm_core.sources import load_source
    from autotm_core.units import parse_size

    graph = load_source(args.graph)
    system = resolve_system(args.system)
    capacity = fast_capacity(graph, nbytes=args.fast_capacity, ratio=args.ratio)
    cache = None
    if args.policy == "2lm":
        plan, cache = two_level_plan(graph, system, fast_capacity_nbytes=capacity,
                                     line_nbytes=parse_size(args.line_size), ways=args.ways,
                                     warm=not args.cold)
    else:
        plan = run_baseline(args.policy, graph, system, fast_capacity_nbytes=capacity)
    check_plan(plan, graph, system)
    if args.output:
        save_plan(plan, args.output)
    costs = resolve_costs(graph, system, costs_path=args.costs)
    sim = simulate(plan, graph, system, costs)
    ideal = simulate(all_fast(graph, system.with_capacity(system.fast.name, None)), graph,
                     system.with_capacity(system.fast.name, None), costs)
    facts = simulation_facts(sim, all_fast_seconds=ideal.step_seconds, top=max(0, args.top))
    facts["policy"] = args.policy
    facts["fast_capacity_nbytes"] = plan.capacities.get(system.fast.name)
    facts["attributes"] = dict(plan.attributes)
    if args.output:
        facts["output"] = args.output
    if cache is not None:
        _use_cache_model(facts, cache, sim.kernel_names, top=max(0, args.top))
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    width = max(20, min(100, console.width - 16))
    if cache is not None:
        console.print(_cache_table(facts))
    console.print(render_simulation(sim, facts, width=width))
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
