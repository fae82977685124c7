"""``simulate PLAN --graph G --system S``: predicted step time, traffic and memory of a plan."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_costs,
    add_json,
    add_plan_arguments,
    add_top,
    plan_inputs,
    report_width,
)

DESCRIPTION = """\
Verify a plan, then predict its step time (kernels, sync moves, async moves overlapping
kernels), bytes moved per direction and each pool's use over time."""
"""What ``simulate --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "simulate", DESCRIPTION,
                         help="predict a plan's step time, moves and memory over time")
    add_plan_arguments(parser)
    add_costs(parser)
    add_json(parser)
    add_top(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.planning import load_problem
    from autotm_core.report.plan_report import render_simulation, simulation_facts
    from autotm_core.simulation import simulate

    plan, graph, system = plan_inputs(args)
    problem = load_problem(graph, system, costs_path=args.costs)
    sim = simulate(plan, graph, system, problem.costs)
    facts = simulation_facts(sim, all_fast_seconds=problem.all_fast_seconds, top=max(0, args.top),
                             reruns=len(plan.reruns))
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    console.print(render_simulation(sim, facts, width=report_width(console)))
    return 0
