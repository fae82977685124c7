"""``solve GRAPH --system S LIMIT``: plan by ILP, with addresses, against the baselines."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
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
        with _status_from_logs(status, show_logs=args.debug, solver=args.solver):
            outcome = plan(problem, args.formulation, pin_to_fast=args.pin_to_fast,
                           progress=status.update, insist=args.insist, **settings)
        if args.output:
            save_plan(outcome.plan, args.output)
        comparisons: Sequence[Comparison] = ()
        if not outcome.interrupted:  # after Ctrl-C: report what was kept, and stop
            status.update("computing the baselines")
            comparisons = compare_baselines(problem)
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


class _StatusHandler(logging.Handler):
    """Shows the planner's progress messages in the spinner's line."""

    def __init__(self, status: Any, solver: str) -> None:
        super().__init__(logging.INFO)
        self.status, self.solver = status, solver

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("model:"):
            message += f"; solving with {self.solver} (Ctrl-C keeps the best plan found)"
        self.status.update(message)


@contextlib.contextmanager
def _status_from_logs(status: Any, *, show_logs: bool, solver: str) -> Iterator[None]:
    """While planning, INFO messages of the ILP planner update ``status`` instead of printing."""
    logger = logging.getLogger("autotm_core.ilp")
    handler = _StatusHandler(status, solver)
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    logger.propagate = show_logs
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
