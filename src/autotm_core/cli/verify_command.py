"""``verify PLAN --graph G --system S``: check a plan against its graph and memory system."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape

from autotm_core.cli.options import add_command, add_plan_arguments, plan_inputs

DESCRIPTION = """\
Check a plan, independently of the planner that made it: tensors are where the kernels use
them, moves start where the tensor is, capacities and addresses hold."""
"""What ``verify --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "verify", DESCRIPTION,
                         help='check that a plan follows every rule (exit status 1 if not)')
    add_plan_arguments(parser)
    parser.add_argument("--all", action="store_true",
                        help=f"list every problem (default: the first {SHOWN} and a count)")
    parser.set_defaults(handler=run)


SHOWN = 15
"""Problems listed without --all (a plan checked against the wrong graph has thousands)."""


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.plans import MoveKind, verify_plan
    from autotm_core.units import format_bytes

    plan, graph, system = plan_inputs(args, check=False)
    problems = verify_plan(plan, graph, system)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        console.print(f"[bold red]INVALID[/] {escape(args.plan)}: {len(problems)} {noun}",
                      soft_wrap=True, highlight=False)
        listed = problems if args.all else problems[:SHOWN]
        for problem in listed:
            console.print(f"  - {escape(problem)}", soft_wrap=True, highlight=False)
        if len(listed) < len(problems):
            console.print(f"  ... and {len(problems) - len(listed):,} more (--all lists every "
                          "one; so many often means the plan is for another graph or system)",
                          soft_wrap=True, highlight=False)
        return 1
    sync = sum(m.kind is MoveKind.SYNC for m in plan.moves)
    limits = ", ".join(
        f"{name} {'unbounded' if cap is None else format_bytes(cap)}"
        for name, cap in plan.capacities.items()
    )
    from rich.table import Table

    console.print(f"[bold green]OK[/] {escape(args.plan)}: the plan keeps every rule",
                  highlight=False, soft_wrap=True)
    facts = Table.grid(padding=(0, 2))  # wraps at the console's width, one fact a row
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("  plan", f"by {escape(plan.planner or '(unnamed)')} for {escape(graph.name)} "
                  f"({len(graph.kernels):,} kernels) on {escape(system.name)}")
    facts.add_row("  residencies", f"{len(plan.residencies):,}")
    spanning = sum(m.spans_kernels for m in plan.moves)
    facts.add_row("  moves", f"{sync:,} sync and {len(plan.moves) - sync:,} async"
                  + (f" ({spanning:,} in flight over several kernels)" if spanning else ""))
    facts.add_row("  addresses", "with addresses" if plan.has_offsets else "without addresses")
    facts.add_row("  capacities", escape(limits))
    console.print(facts, highlight=False)
    return 0
