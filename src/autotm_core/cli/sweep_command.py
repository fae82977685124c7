"""``sweep GRAPH... --system S``: plan over fast-memory limits and planners; the trade-off."""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import Any

from rich.console import Console

from autotm_core.cli.options import (
    SOURCE_HELP,
    add_command,
    add_ilp_options,
    add_json,
    add_output,
    add_system,
    split,
)

DEFAULT_RATIOS = "0:1,1:1,2:1,4:1,8:1"
"""Slow:fast ratios swept when neither --ratios nor --capacities is given (the paper's, and
more)."""
DEFAULT_PLANNERS = "synchronous,first-touch"
"""Planners swept when --planners is not given."""
DEFAULT_TIME_LIMIT = 60.0
"""ILP time limit of each point when --time-limit is not given (without --grid)."""


DESCRIPTION = """\
Plan each graph at each fast-memory limit with each planner (as 'solve' and 'baseline' plan
a point), and report slowdown against fast-memory size with the knee of each curve marked,
the memory cost of each point, and the cheapest point within a slowdown budget. Or plan
every experiment of a grid file (--grid). Every finished point is written to the results
file at once: interrupt with Ctrl-C and rerun the same command to resume."""
"""What ``sweep --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "sweep", DESCRIPTION,
        help='plan over fast-memory sizes: the trade-off curve, its knee, the price')
    parser.add_argument("graphs", nargs="*", metavar="GRAPH", help=SOURCE_HELP)
    parser.add_argument("--grid", metavar="FILE",
                        help="plan every point of a grid file instead (see docs/formats.md); "
                        "GRAPH, --system, the limits and --planners come from it")
    parser.add_argument("--only", action="append", metavar="EXPERIMENT",
                        help="with --grid: plan only this experiment (repeatable)")
    add_system(parser, required=False)
    limits = parser.add_mutually_exclusive_group()
    limits.add_argument("--ratios", metavar="LIST",
                        help=f"slow:fast memory ratios (PMM:DRAM on Optane), comma-separated "
                        f"(default {DEFAULT_RATIOS})")
    limits.add_argument("--capacities", metavar="LIST",
                        help="fast-memory sizes, comma-separated, e.g. 8MiB,16MiB,32MiB")
    parser.add_argument("--planners", metavar="LIST",
                        help="ILP formulations (static, synchronous, asynchronous) and baselines "
                        "(first-touch, 2lm, greedy, all-slow, all-fast), comma-separated "
                        f"(default {DEFAULT_PLANNERS})")
    add_ilp_options(parser, time_limit=DEFAULT_TIME_LIMIT)
    # None: not given, so a grid's own settings hold (the defaults apply without --grid)
    parser.set_defaults(time_limit=None, gap=None, mode=None, solver=None)
    add_output(parser, "the results (JSON) after each point; resumed when it exists",
               metavar="FILE")
    parser.add_argument("--csv", metavar="FILE", help="also write the points as CSV")
    parser.add_argument("--html", metavar="FILE", help="a self-contained HTML report")
    parser.add_argument("--plot", metavar="FILE", help="the trade-off curve (.png or .svg)")
    parser.add_argument("--budget", type=float, metavar="SLOWDOWN",
                        help="name the cheapest point within this slowdown, e.g. 1.3")
    parser.add_argument("--price-ratio", type=float, default=2.1, metavar="R",
                        help="price per byte of fast over slow memory (default 2.1, the paper's "
                        "DRAM/PMM)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help="plan points in parallel on N local processes")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="plan points on a Dask cluster, e.g. tcp://10.0.0.5:8786 "
                       "(pip install autotm-core[cluster])")
    add_json(parser, "the results")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.errors import FormatError, UsageError
    from autotm_core.report.sweep_report import render_sweep
    from autotm_core.sweep import PriceModel, run_sweep

    if args.price_ratio <= 0:
        raise UsageError(f"--price-ratio must be positive, not {args.price_ratio}",
                         hint="e.g. --price-ratio 2.1 (DRAM costs 2.1 times PMM per byte)")
    points = _grid_points(args) if args.grid else _points(args)
    if not args.scheduler:  # a cluster's graphs may be too big to load here
        _warn_beyond_the_system(points)
    if args.html or args.plot:
        from autotm_core.report.figures import pyplot

        pyplot()  # before hours of solving, not after
    price = PriceModel(fast_per_slow=args.price_ratio)
    with _executor(args) as executor, _progress(console, len(points), quiet=args.json) as step:
        try:
            results = run_sweep(points, results_path=args.output, executor=executor,
                                on_result=step)
        except UsageError as exc:
            if not args.grid:
                raise
            # the command line was checked before; what a point refuses now is the grid file's
            raise FormatError(f"{args.grid}: {exc.message}", hint=exc.hint) from exc
    if args.csv:
        from autotm_core.sweep import write_csv

        write_csv(args.csv, results.points)
    _pictures(args, results, price)
    if args.json:
        console.print_json(json.dumps(_facts(results, price, args.budget)))
    else:
        console.print(render_sweep(results, price=price, budget=args.budget,
                                   width=console.width))
        for path in (args.output, args.csv, args.html, args.plot):
            if path:
                console.print(f"wrote {path}", highlight=False, soft_wrap=True)
        if results.interrupted and args.output:
            console.print("rerun the same command to resume from the points kept")
    return 130 if results.interrupted else 0


def _warn_beyond_the_system(points: list[Any]) -> None:
    """A warning line for each graph and limit that gives a pool more than the system's own
    capacity (a sweep plans such points, as what-ifs, rather than refuse them), and for each
    graph captured for another kind of device than the system's."""
    from autotm_core.capacity import over_capacity
    from autotm_core.cli.stderr import warn
    from autotm_core.errors import AutotmError
    from autotm_core.memory import capture_mismatch
    from autotm_core.planning import load_problem

    seen: dict[tuple[str, str, str], None] = {}
    for p in points:
        seen.setdefault((p.graph, p.system, p.limit), None)
    lines = []
    for graph, system, limit in seen:
        try:
            problem = load_problem(graph, system, limit=limit)
            beyond = over_capacity(problem.limit, problem.graph, problem.system)
        except AutotmError:  # the sweep itself reports what is wrong with the point, its way
            continue
        lines += [f"{graph}: {text} (a what-if: the plan does not fit this hardware)"
                  for text in beyond]
        mismatch = capture_mismatch(problem.graph, problem.system)
        if mismatch and mismatch not in lines:
            lines.append(mismatch)
    warn(lines)


def _points(args: argparse.Namespace) -> list[Any]:
    from autotm_core.cli.options import ilp_settings
    from autotm_core.errors import UsageError
    from autotm_core.sweep import sweep_points

    if args.only:
        raise UsageError("--only picks experiments of a grid file", hint="give --grid FILE too")
    if not args.graphs or not args.system:
        raise UsageError("sweep needs graphs and --system, or a grid file",
                         hint="e.g. sweep example:mlp --system optane-2019, or sweep --grid "
                         "FILE")
    limits = split(args.capacities) if args.capacities else split(args.ratios or DEFAULT_RATIOS)
    for item in [] if args.capacities else limits:
        if ":" not in item or "=" in item:
            raise UsageError(f"--ratios: {item!r} is not a slow:fast ratio",
                             hint="write slow:fast memory with a colon, e.g. --ratios "
                             "1:1,4:1,8:1 (sizes go to --capacities)")
    defaults = {"time_limit": DEFAULT_TIME_LIMIT, "gap": 0.01, "mode": "auto", "solver": "highs"}
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    settings = ilp_settings(args)
    return sweep_points(graphs=args.graphs, system=args.system,
                        planners=split(args.planners or DEFAULT_PLANNERS), limits=limits,
                        solver=settings.solver, time_limit_seconds=settings.time_limit_seconds,
                        relative_gap=settings.relative_gap, mode=settings.mode.value,
                        addresses=settings.addresses, recompute=settings.recompute)


def _grid_points(args: argparse.Namespace) -> list[Any]:
    from autotm_core.errors import UsageError
    from autotm_core.plugins import get_solver, solvers
    from autotm_core.sweep.grid import load_grid

    given = [flag for flag, value in (("GRAPH", args.graphs), ("--system", args.system),
                                      ("--ratios", args.ratios),
                                      ("--capacities", args.capacities),
                                      ("--planners", args.planners)) if value]
    if given:
        raise UsageError(f"--grid takes the graphs, system, limits and planners from the grid "
                         f"file; drop {', '.join(given)}",
                         hint="or sweep without --grid")
    if args.solver is not None and args.solver not in solvers():
        get_solver(args.solver)  # an unknown --solver is the command line's error, not the grid's
    grid = load_grid(args.grid).select(experiments=args.only).with_settings(
        solver=args.solver, time_limit_seconds=args.time_limit, relative_gap=args.gap,
        mode=args.mode, addresses=False if args.no_addresses else None,
        recompute=args.recompute)
    return grid.points()


def _executor(args: argparse.Namespace) -> Any:
    from autotm_core.sweep.parallel import dask_executor, local_executor

    if args.scheduler:
        return dask_executor(args.scheduler)
    if args.workers is not None and args.workers != 1:
        return local_executor(args.workers)
    return contextlib.nullcontext(None)


@contextlib.contextmanager
def _progress(console: Console, total: int, *, quiet: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if quiet:
        yield lambda result, resumed: None
        return
    with Progress(TextColumn("[bold]sweep[/]"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                  transient=True) as progress:
        task = progress.add_task("", total=total)

        def step(result: Any, resumed: bool) -> None:
            p = result.point
            what = "resumed" if resumed else result.status
            progress.update(task, advance=1,
                            description=f"{p.planner} at {p.limit}: {what}")

        yield step


def _pictures(args: argparse.Namespace, results: Any, price: Any) -> None:
    if args.html:
        from autotm_core.report.html import sweep_html, write_html

        write_html(args.html, sweep_html(results, price=price, budget=args.budget))
    if args.plot:
        from autotm_core.report.figures import save_figure, tradeoff_figure

        curves = results.curves()

        def name(c: Any) -> str:
            return f"{c.planner} ({c.graph})" if len(args.graphs) > 1 else c.planner

        save_figure(tradeoff_figure(
            {name(c): [(r.fast_capacity_nbytes, r.slowdown) for r in c.points] for c in curves},
            knees={name(c): (c.knee.fast_capacity_nbytes, c.knee.slowdown)
                   for c in curves if c.knee is not None},
            budget=args.budget), args.plot)


def _facts(results: Any, price: Any, budget: float | None) -> dict[str, Any]:
    best = None if budget is None else price.cheapest_within(results.points, budget)
    knees = results.knee_keys()
    return {
        "interrupted": results.interrupted,
        "price_ratio": price.fast_per_slow,
        "budget": budget,
        "cheapest_within_budget": None if best is None else best.point.key,
        "points": [{**r.to_json(), "knee": r.point.key in knees,
                    "memory_cost": price.cost_of(r)} for r in results.points],
    }
