"""``solve GRAPH --system S LIMIT``: plan by ILP, with addresses, against the baselines."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from rich.status import Status

    from autotm_core.ilp.search import SearchEvent
    from autotm_core.planning import Comparison

from autotm_core.cli.options import (
    add_command,
    add_costs,
    add_ilp_options,
    add_json,
    add_output,
    add_point,
    add_top,
)

DESCRIPTION = """\
Plan a graph by integer linear programming (AutoTM's formulations), give every tensor in a
capacity-limited pool an address that fits (re-solving with tightened limits where the
packing overflows), verify the plan, and report it against all in the fastest pool and the
baselines. See docs/formulations.md."""
"""What ``solve --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from autotm_core.planning import DEFAULT_MAX_ROUNDS, ILP_PLANNERS

    parser = add_command(subparsers, "solve", DESCRIPTION,
                         help="plan where every tensor lives and when it moves, by ILP")
    add_point(parser, limit_required=True)
    parser.add_argument("--formulation", choices=ILP_PLANNERS, default="synchronous",
                        help="static (no moves), synchronous (blocking moves at uses, default) or "
                        "asynchronous (moves may overlap nearby kernels)")
    add_ilp_options(parser)
    add_costs(parser)
    parser.add_argument("--pin-to-fast", action="store_true",
                        help="keep parameters, inputs and outputs in the fastest pool (as AutoTM)")
    parser.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS, metavar="N",
                        help=f"address-fitting solves before giving up (default "
                        f"{DEFAULT_MAX_ROUNDS})")
    parser.add_argument("--insist", action="store_true",
                        help="plan even when the model looks too big for this machine's memory")
    add_output(parser)
    add_top(parser)
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.cli.options import ilp_settings, problem_of, report_width
    from autotm_core.planning import compare_baselines, plan
    from autotm_core.plans import save_plan
    from autotm_core.report.solve_report import render_solve, solve_facts

    settings = ilp_settings(args)
    progress = Console(stderr=True)
    with progress.status("loading the graph and the memory system") as status:
        problem = problem_of(args)
        outcome = plan(problem, args.formulation, settings, listener=_Progress(status))
        if args.output:
            save_plan(outcome.plan, args.output)
        comparisons: Sequence[Comparison] = ()
        if not outcome.interrupted:  # after Ctrl-C: report what was kept, and stop
            status.update("computing the baselines")
            comparisons = compare_baselines(problem, addresses=outcome.plan.has_offsets)
    status_code = 130 if outcome.interrupted else 0
    facts = solve_facts(outcome, comparisons, top=max(0, args.top))
    if args.output:
        facts["output"] = args.output
    if args.json:
        console.print_json(json.dumps(facts))
        return status_code
    console.print(render_solve(outcome, comparisons, top=max(0, args.top),
                               width=report_width(console)))
    if args.output:
        console.print(f"plan written to {args.output}")
    if outcome.interrupted:
        console.print("[bold red]interrupted[/] (Ctrl-C): the best verified plan found so far"
                      + (" with addresses that fit" if outcome.plan.has_offsets else "")
                      + " is the one reported" + (" and written" if args.output else ""),
                      soft_wrap=True)
    return status_code


class _Progress:
    """Shows the search's events in the spinner's line."""

    def __init__(self, status: Status) -> None:
        self.status = status
        self.best = ""

    def __call__(self, event: SearchEvent) -> None:
        from autotm_core.ilp.search import IncumbentFound, ModelBuilt, PhaseStarted
        from autotm_core.units import format_seconds

        if isinstance(event, IncumbentFound):
            self.best = (f"; best so far {format_seconds(event.step_seconds)} "
                         f"({event.source})")
            return
        if isinstance(event, ModelBuilt):
            line = (f"{event.stage} model: {event.variables:,} variables ({event.binaries:,} "
                    f"binary), {event.rows:,} rows, built in {event.seconds:.2f} s")
        elif isinstance(event, PhaseStarted):
            line = f"{event.stage}: {event.says}" if event.stage else event.says
        else:
            return
        self.status.update(line + self.best + " (Ctrl-C keeps the best plan found)")
