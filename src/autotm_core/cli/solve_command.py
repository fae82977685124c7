"""``solve GRAPH --system S (--fast-capacity SIZE | --ratio R)``: plan by ILP, with addresses."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.console import Console

from autotm_core.cli.info_command import SOURCE_HELP

if TYPE_CHECKING:
    from autotm_core.ilp.planner import PlanResult
    from autotm_core.large import LargePlanResult

FORMULATIONS = ("static", "synchronous", "asynchronous")
"""Values of ``--formulation``."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "solve", help="plan where every tensor lives and when it moves, by ILP",
        description="Plan a graph by integer linear programming (AutoTM's formulations), give "
        "every tensor in a capacity-limited pool an address that fits (re-solving with tightened "
        "limits where the packing overflows), verify the plan, and report it against all in the "
        "fastest pool and the baselines. See docs/formulations.md.",
    )
    parser.add_argument("graph", metavar="GRAPH", help=SOURCE_HELP)
    parser.add_argument("--system", required=True, metavar="PRESET_OR_FILE",
                        help="a memory-system preset (e.g. optane-2019) or a memory-system file")
    limit = parser.add_mutually_exclusive_group(required=True)
    limit.add_argument("--fast-capacity", metavar="SIZE",
                       help="limit of the fastest pool, e.g. 16GiB, 512MiB")
    limit.add_argument("--ratio", metavar="PMM:DRAM",
                       help="limit the fastest pool to peak live bytes / (PMM + 1), e.g. 4:1")
    parser.add_argument("--formulation", choices=FORMULATIONS, default="synchronous",
                        help="static (no moves), synchronous (blocking moves at uses, default) or "
                        "asynchronous (moves may overlap nearby kernels)")
    parser.add_argument("--solver", default="highs", metavar="NAME",
                        help="solver plugin: highs (default), cbc, glpk, or a third party's")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                        help="stop the solver after this long and keep its best plan "
                        "(reported as not proven optimal)")
    parser.add_argument("--gap", type=float, default=0.01, metavar="FRACTION",
                        help="stop at this relative gap to the bound (default 0.01: 1%%)")
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file (default: the analytic roofline of the system)")
    parser.add_argument("--pin-to-fast", action="store_true",
                        help="keep parameters, inputs and outputs in the fastest pool (as AutoTM)")
    parser.add_argument("--no-addresses", action="store_true",
                        help="skip address assignment (capacity then holds in aggregate only)")
    parser.add_argument("--max-rounds", type=int, default=8, metavar="N",
                        help="address-fitting solves before giving up (default 8)")
    parser.add_argument("--mode", choices=("exact", "approximate", "auto"), default="auto",
                        help="exact ILP; approximate (the ILP warm-started from greedy within "
                        "--time-limit, 60 s by default, with a proven bound); auto: exact up to "
                        "2,000 kernels (default: auto)")
    parser.add_argument("-o", "--output", metavar="PLAN", help="write the plan to this file")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="kernels listed by time (default 10)")
    parser.add_argument("--json", action="store_true", help="print the facts as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.capacity import fast_capacity
    from autotm_core.costs.resolve import resolve_costs
    from autotm_core.errors import UsageError
    from autotm_core.formats import resolve_system
    from autotm_core.ilp.options import FormulationOptions
    from autotm_core.plans import save_plan
    from autotm_core.plugins import get_solver
    from autotm_core.report.solve_report import (
        all_fast_seconds,
        baseline_facts,
        large_facts,
        render_solve,
        solve_facts,
    )
    from autotm_core.sources import load_source

    if args.gap < 0 or (args.time_limit is not None and args.time_limit <= 0):
        raise UsageError(f"--gap {args.gap} / --time-limit {args.time_limit} is out of range",
                         hint="give a gap >= 0 (0.01 is 1%) and a time limit > 0 seconds")
    if args.max_rounds < 1:
        raise UsageError(f"--max-rounds {args.max_rounds} is out of range", hint="give at least 1")
    progress = Console(stderr=True)
    with progress.status("loading the graph and the memory system") as status:
        graph = load_source(args.graph)
        system = resolve_system(args.system)
        capacity = fast_capacity(graph, nbytes=args.fast_capacity, ratio=args.ratio)
        get_solver(args.solver)  # fail now, saying what to install, rather than after building
        costs = resolve_costs(graph, system, costs_path=args.costs)
        options = FormulationOptions(formulation=args.formulation, pin_to_fast=args.pin_to_fast)
        kwargs: dict[str, Any] = dict(
            fast_capacity_nbytes=capacity, options=options, solver=args.solver,
            time_limit_seconds=args.time_limit, relative_gap=args.gap, costs=costs)
        status.update(f"building the {args.formulation} model of {graph.name} "
                      f"({len(graph.kernels):,} kernels)")
        from autotm_core.planning import PlanMode, resolve_mode

        approximate = resolve_mode(graph, args.mode) is PlanMode.APPROXIMATE
        result: LargePlanResult | PlanResult
        with _status_from_logs(status, show_logs=args.debug, solver=args.solver):
            if approximate:
                from autotm_core.large import plan_large

                status.update(f"planning {graph.name} ({len(graph.kernels):,} kernels) "
                              "approximately, warm-started from greedy")
                result, fitted = plan_large(
                    graph, system, fast_capacity_nbytes=capacity, options=options,
                    time_budget_seconds=args.time_limit or 60.0, relative_gap=args.gap,
                    costs=costs), None
            elif args.no_addresses:
                from autotm_core.ilp.planner import plan_graph

                result, fitted = plan_graph(graph, system, **kwargs), None
            else:
                from autotm_core.ilp.fitting import plan_with_addresses

                fitted = plan_with_addresses(
                    graph, system, max_rounds=args.max_rounds,
                    on_round=lambda r: status.update(
                        f"round {r.round}: the packing "
                        + ("fits" if r.fits else "overflows; re-solving with tightened limits")),
                    **kwargs)
                result = fitted.result
        plan = result.plan if fitted is None else fitted.plan
        if args.output:
            save_plan(plan, args.output)
        status.update("computing the baselines")
        ideal = all_fast_seconds(graph, system, costs)
        baselines = baseline_facts(graph, system, costs, fast_capacity_nbytes=capacity)
    if approximate:
        facts = large_facts(result, all_fast=ideal, baselines=baselines, top=max(0, args.top))
    else:
        facts = solve_facts(result, all_fast=ideal, baselines=baselines, fitted=fitted,
                            top=max(0, args.top))
    facts["fast_capacity_nbytes"] = capacity
    if args.output:
        facts["output"] = args.output
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    width = max(20, min(100, console.width - 16))
    console.print(render_solve(result.simulation, facts, width=width))
    if args.output:
        console.print(f"plan written to {args.output}")
    return 0


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
