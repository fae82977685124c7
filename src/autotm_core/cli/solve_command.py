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
    from autotm_core.planning import Comparison, Outcome

from autotm_core.cli.options import (
    add_command,
    add_costs,
    add_ilp_options,
    add_json,
    add_output,
    add_point,
    add_top,
    seconds,
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
                        help="plan even when the model looks too big for this machine's memory, "
                        "or a limit is above a pool's physical capacity (with a warning)")
    parser.add_argument("--physical-bound", action="store_true",
                        help="also report the physical lower bound no plan of any formulation "
                        "beats, and this plan's distance to it (an LP: seconds to tens of "
                        "seconds on large networks)")
    parser.add_argument("--physical-bound-seconds", type=seconds, default=None,
                        metavar="SECONDS",
                        help="--physical-bound, raised by up to SECONDS of branch and bound "
                        "on its LP with the big tensors whole (the integral bound)")
    add_output(parser)
    add_top(parser)
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.cli.options import ilp_settings, problem_of, report_width
    from autotm_core.cli.stderr import stderr_console
    from autotm_core.planning import compare_baselines, plan
    from autotm_core.plans import save_plan
    from autotm_core.report.solve_report import render_solve, solve_facts

    settings = ilp_settings(args)
    # the console warnings and log records print through: above the spinner, not on its line
    progress = stderr_console()
    with progress.status("loading the graph and the memory system") as status:
        problem = problem_of(args)
        outcome = plan(problem, args.formulation, settings, listener=_Progress(status))
        if args.output:
            save_plan(outcome.plan, args.output)
        if outcome.interrupted:  # after Ctrl-C: say what was kept, and stop at once
            return _interrupted(outcome, args, console)
        status.update("computing the baselines")
        comparisons: Sequence[Comparison] = compare_baselines(
            problem, addresses=outcome.plan.has_offsets)
        physical = None
        if args.physical_bound or args.physical_bound_seconds is not None:
            from autotm_core.planning.lower_bound import physical_lower_bound

            status.update("computing the physical lower bound")
            physical = physical_lower_bound(problem, recompute=settings.recompute,
                                            integral_seconds=args.physical_bound_seconds or 0.0)
    status_code = 0
    facts = solve_facts(outcome, comparisons, top=max(0, args.top), physical=physical)
    if args.output:
        facts["output"] = args.output
    if args.json:
        console.print_json(json.dumps(facts))
        return status_code
    console.print(render_solve(outcome, comparisons, top=max(0, args.top),
                               width=report_width(console), physical=physical))
    if args.output:
        console.print(f"plan written to {args.output}")
    return status_code


def _interrupted(outcome: Outcome, args: argparse.Namespace, console: Console) -> int:
    """After Ctrl-C: one short account of the plan kept (no baselines, no report: the user
    asked to stop), and status 130."""
    from autotm_core.units import format_seconds

    kept = ("the best verified plan found so far"
            + (" with addresses that fit" if outcome.plan.has_offsets else "")
            + f" ({outcome.source}, {format_seconds(outcome.step_seconds)} per step)")
    where = (f"written to {args.output}" if args.output
             else "not written (give -o FILE to keep it)")
    if args.json:
        console.print_json(json.dumps({"interrupted": True, "source": outcome.source,
                                       "step_seconds": outcome.step_seconds,
                                       "plan_seconds": outcome.plan_seconds,
                                       "output": args.output or None}))
    else:
        console.print(f"[bold red]interrupted[/] (Ctrl-C): {kept}, {where}", soft_wrap=True)
    return 130


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
