"""``plot PLAN --graph G --system S``: pictures of a plan (PNG, SVG) and an HTML report."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from autotm_core.cli.options import add_command, add_costs, add_plan_arguments, plan_inputs

DESCRIPTION = """\
Simulate a plan and draw it: bytes in each pool over kernels with the capacity line and
moves marked, and each kernel's time split into run time and moves; the HTML report adds the
baselines at the same limits and the plan by tensor kind. Pictures are PNG or SVG
by the file's suffix; the HTML report is one self-contained file. Needs the plots extra: pip
install autotm-core[plots]."""
"""What ``plot --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "plot", DESCRIPTION,
                         help='draw a plan: memory over time, time per kernel, an HTML report')
    add_plan_arguments(parser)
    parser.add_argument("--memory", metavar="FILE", help="memory over time (.png or .svg)")
    parser.add_argument("--kernels", dest="kernels_plot", metavar="FILE",
                        help="time per kernel (.png or .svg)")
    parser.add_argument("--html", metavar="FILE", help="a self-contained HTML report")
    add_costs(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.errors import UsageError
    from autotm_core.planning import load_problem
    from autotm_core.report import figures
    from autotm_core.report.plan_report import simulation_facts
    from autotm_core.simulation import simulate

    if not (args.memory or args.kernels_plot or args.html):
        raise UsageError("plot needs something to write",
                         hint="give --memory FILE.png, --kernels FILE.svg and/or --html FILE")
    figures.pyplot()  # fail at once, with the install hint, when matplotlib is missing
    plan, graph, system = plan_inputs(args)
    problem = load_problem(graph, system, costs_path=args.costs)
    sim = simulate(plan, graph, system, problem.costs)
    written = []
    if args.memory:
        written.append(figures.save_figure(figures.memory_figure(sim, plan), args.memory))
    if args.kernels_plot:
        written.append(figures.save_figure(figures.kernel_time_figure(sim), args.kernels_plot))
    if args.html:
        from autotm_core.planning import compare_baselines
        from autotm_core.planning.breakdown import kind_breakdown
        from autotm_core.report.html import plan_html, write_html

        facts = simulation_facts(sim, all_fast_seconds=problem.all_fast_seconds,
                                 reruns=len(plan.reruns))
        limited = problem.with_limit(_limit_of(plan, system))
        written.append(write_html(args.html, plan_html(
            plan, sim, facts, comparisons=compare_baselines(limited),
            breakdown=kind_breakdown(plan, graph, system, problem.costs, sim))))
    for path in written:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    return 0


def _limit_of(plan: Any, system: Any) -> str:
    """The plan's capacities as a ``--limit`` (each pool the plan bounds below the system)."""
    parts = [f"{pool}={nbytes}" for pool, nbytes in plan.capacities.items()
             if nbytes is not None and nbytes != system.pool(pool).capacity_nbytes]
    return ",".join(parts)
