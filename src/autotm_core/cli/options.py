"""Options every command shares, each written once, and the inputs they load.

A command adds what it takes (``add_graph``, ``add_system``, ``add_limit``,
``add_ilp_options``, ...) and turns the parsed values into library objects with
:func:`problem_of`, :func:`plan_inputs` and :func:`ilp_settings`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotm_core.capacity import Limit
    from autotm_core.ir import Graph
    from autotm_core.memory import MemorySystem
    from autotm_core.planning import PlanSettings, Problem
    from autotm_core.plans import Plan

SOURCE_HELP = (
    "a graph file (.json), or FRONTEND:ARGUMENT for a frontend plugin, e.g. example:mlp, "
    "example:chain-1000, zoo:resnet50:batch=8"
)
SYSTEM_HELP = "a memory-system preset (e.g. optane-2019) or a memory-system file (.json)"


def add_graph(parser: argparse.ArgumentParser) -> None:
    """The GRAPH argument."""
    parser.add_argument("graph", metavar="GRAPH", help=SOURCE_HELP)


def add_system(parser: argparse.ArgumentParser, *, required: bool = True,
               flag: str = "--system") -> None:
    """``--system PRESET_OR_FILE``."""
    parser.add_argument(flag, required=required, metavar="SYSTEM", help=SYSTEM_HELP)


def add_limit(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """``--fast-capacity SIZE``, ``--ratio SLOW:FAST`` or ``--limit POOL=LIMIT,...`` (one)."""
    limit = parser.add_mutually_exclusive_group(required=required)
    own = "" if required else " (default: the system's own capacities)"
    limit.add_argument("--fast-capacity", metavar="SIZE",
                       help=f"limit of the fastest pool, e.g. 16GiB, 512MiB{own}")
    limit.add_argument("--ratio", metavar="SLOW:FAST",
                       help="limit the fastest pool to peak live bytes / (SLOW/FAST + 1): "
                       "slow:fast memory, e.g. 4:1 (PMM:DRAM on Optane, host:HBM on a GPU); "
                       "0:1 is the peak live bytes")
    limit.add_argument("--limit", metavar="POOL=LIMIT,...",
                       help="per-pool limits, each a size or a slow:fast ratio, e.g. "
                       "hbm=4:1,dram=4:1")


def add_point(parser: argparse.ArgumentParser, *, limit_required: bool) -> None:
    """GRAPH, ``--system`` and the limit: the point a command plans (see :func:`problem_of`)."""
    add_graph(parser)
    add_system(parser)
    add_limit(parser, required=limit_required)


def add_costs(parser: argparse.ArgumentParser) -> None:
    """``--costs FILE``."""
    parser.add_argument("--costs", metavar="FILE",
                        help="a kernel cost file (default: the analytic roofline of the system)")


def add_output(parser: argparse.ArgumentParser, what: str = "the plan", *,
               required: bool = False, metavar: str = "PLAN") -> None:
    """``-o / --output FILE``."""
    parser.add_argument("-o", "--output", required=required, metavar=metavar,
                        help=f"write {what} to this file")


def add_json(parser: argparse.ArgumentParser, what: str = "the facts") -> None:
    """``--json``."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def count(text: str) -> int:
    """An ``argparse`` type: a whole number >= 0 (else a usage error naming the option)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give 0 or more")
    return value


def seconds(text: str) -> float:
    """An ``argparse`` type: a finite number of seconds >= 0 (else a usage error naming the
    option)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{value} seconds: give a finite number, 0 or more")
    return value


def add_top(parser: argparse.ArgumentParser, what: str = "by time") -> None:
    """``--top N``: how many kernels a report lists."""
    parser.add_argument("--top", type=count, default=10, metavar="N",
                        help=f"kernels listed {what} (default 10)")


def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    """The PLAN, --graph and --system arguments of the commands that read a plan."""
    parser.add_argument("plan", metavar="PLAN", help="a plan file (.json)")
    parser.add_argument("--graph", required=True, metavar="GRAPH", help=SOURCE_HELP)
    add_system(parser)


def add_ilp_options(parser: argparse.ArgumentParser, *, time_limit: float | None = None,
                    solver: bool = True) -> None:
    """``--solver``, ``--time-limit``, ``--gap``, ``--mode``, ``--no-addresses`` and
    ``--recompute``."""
    if solver:
        parser.add_argument("--solver", default="highs", metavar="NAME",
                            help="solver plugin: highs (default), cbc, glpk, or a third party's")
    default = "none" if time_limit is None else f"{time_limit:g}"
    parser.add_argument("--time-limit", type=float, default=time_limit, metavar="SECONDS",
                        help="stop planning after this long, counting every formulation, "
                        "address-fitting round and solve, and keep the best plan (reported "
                        f"as not proven optimal; default {default})")
    parser.add_argument("--gap", type=float, default=0.01, metavar="FRACTION",
                        help="stop at this relative gap to the bound (default 0.01: 1%%)")
    parser.add_argument("--mode", choices=("exact", "approximate", "auto"), default="auto",
                        help="exact ILP; approximate (planned a stretch at a time within "
                        "--time-limit, 60 s by default, with a proven bound); auto: exact up to "
                        "2,000 kernels (default: auto)")
    parser.add_argument("--no-addresses", action="store_true",
                        help="skip address assignment (capacity then holds in aggregate only)")
    parser.add_argument("--async-window", type=int, default=15, metavar="KERNELS",
                        help="asynchronous plans: how many kernels ahead of a use a fetch may "
                        "be issued, and after one an eviction may complete (default 15)")
    parser.add_argument("--async-spans", action=argparse.BooleanOptionalAction, default=True,
                        help="asynchronous plans: copies in flight over several kernels "
                        "(default: on; --no-async-spans: each copy overlaps one kernel, as in "
                        "AutoTM)")
    # None: not given (on, but a grid file's own setting holds)
    parser.add_argument("--recompute", action=argparse.BooleanOptionalAction, default=None,
                        help="let the plan drop activations and recompute them (rerun their "
                        "producers) before later uses, where that beats keeping or moving them "
                        "(default: on; --no-recompute keeps and moves only)")


def split(text: str) -> list[str]:
    """The non-empty items of a comma-separated list."""
    return [item.strip() for item in text.split(",") if item.strip()]


def parse_pairs(values: list[str], what: str,
                convert: Callable[[str], int]) -> dict[str, int]:
    """``POOL=VALUE`` options as a dict; one :class:`UsageError` naming a malformed one."""
    from autotm_core.errors import UsageError

    out = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            if not sep or not name:
                raise ValueError(value)
            out[name] = convert(number)
        except (ValueError, UsageError):
            raise UsageError(f"{what} {value!r} is not POOL=VALUE",
                             hint=f"e.g. {what} pmm=0" if what == "--bind" else
                             f"e.g. {what} pmm=1GiB") from None
    return out


def check_pool_names(pairs: dict[str, int], what: str, system: MemorySystem) -> None:
    """One :class:`UsageError` for the first pool in ``pairs`` (from option ``what``) that
    ``system`` does not have, naming the pools it has."""
    from autotm_core.errors import UsageError

    names = [pool.name for pool in system.pools]
    for name in pairs:
        if name not in names:
            raise UsageError(f"{what} names pool {name!r}, but memory system {system.name!r} "
                             f"has no such pool", hint=f"its pools are {', '.join(names)}")


OUTPUT_OPTIONS = {"output": "-o", "csv": "--csv", "html": "--html", "plot": "--plot",
                  "memory": "--memory", "kernels_plot": "--kernels"}
"""Every option naming a file a command writes, by its ``dest``."""


def check_outputs(args: argparse.Namespace) -> None:
    """One :class:`UsageError` for the first output path that cannot be written, before any
    work starts (see :func:`autotm_core.formats.document.check_output_path`)."""
    from autotm_core.formats.document import check_output_path

    for dest, option in OUTPUT_OPTIONS.items():
        path = getattr(args, dest, None)
        if isinstance(path, str) and path:
            check_output_path(path, option)


def limit_of(args: argparse.Namespace) -> Limit:
    """The :class:`~autotm_core.capacity.Limit` of ``--fast-capacity``/``--ratio``/``--limit``."""
    from autotm_core.capacity import Limit

    return Limit.from_options(nbytes=args.fast_capacity, ratio=args.ratio, pools=args.limit)


def problem_of(args: argparse.Namespace) -> Problem:
    """The :class:`~autotm_core.planning.Problem` of GRAPH, --system, the limit and --costs;
    a limit above a pool's own capacity is refused unless ``--insist`` (see
    :func:`check_limits`)."""
    from autotm_core.planning import load_problem

    problem = load_problem(args.graph, args.system, limit=limit_of(args),
                           costs_path=getattr(args, "costs", None))
    check_point(problem, insist=bool(getattr(args, "insist", False)))
    return problem


INSIST_HINT = ("give a limit the pool can hold, or add --insist to plan for the larger pool "
               "anyway (a what-if: such a plan does not fit this hardware)")
"""What to do about a limit above a pool's capacity."""


def check_point(problem: Problem, *, insist: bool) -> None:
    """One :class:`UsageError` when the limit gives a pool more than the system's own
    capacity (``--fast-capacity 200GiB`` on a 141 GB GPU); with ``insist``, a one-line
    warning on standard error instead. A warning too when the graph was captured for
    another kind of device than the system's."""
    from autotm_core.capacity import over_capacity
    from autotm_core.cli.stderr import warn
    from autotm_core.errors import UsageError
    from autotm_core.memory import capture_mismatch

    beyond = over_capacity(problem.limit, problem.graph, problem.system)
    if beyond and not insist:
        more = f" (and {len(beyond) - 1} more)" if len(beyond) > 1 else ""
        raise UsageError(beyond[0] + more, hint=INSIST_HINT)
    mismatch = capture_mismatch(problem.graph, problem.system)
    warn([f"{text}: planned anyway (--insist)" for text in beyond]
         + ([mismatch] if mismatch else []))


def add_insist(parser: argparse.ArgumentParser) -> None:
    """``--insist``: plan a limit above a pool's own capacity (a what-if)."""
    parser.add_argument("--insist", action="store_true",
                        help="plan even when a limit gives a pool more than the memory "
                        "system's own capacity (a what-if), with a warning")


OPTION_OF_SETTING = {"relative_gap": "--gap", "time_limit_seconds": "--time-limit",
                     "max_rounds": "--max-rounds", "async_window": "--async-window"}
"""The command-line option that sets each field of
:class:`~autotm_core.planning.PlanSettings` a message may name."""


def ilp_settings(args: argparse.Namespace) -> PlanSettings:
    """The settings of :func:`add_ilp_options` (and ``--max-rounds``, ``--pin-to-fast`` and
    ``--insist`` where a command has them), checked now, before anything is loaded; the
    solver too (an unknown one is refused before any work)."""
    from autotm_core.errors import SettingError, UsageError
    from autotm_core.planning import DEFAULT_MAX_ROUNDS, PlanSettings
    from autotm_core.plugins import get_solver
    from autotm_core.solvers.base import DEFAULT_SOLVER

    max_rounds = getattr(args, "max_rounds", None)
    try:
        settings = PlanSettings(
            time_limit_seconds=args.time_limit, relative_gap=args.gap, mode=args.mode,
            addresses=not args.no_addresses, solver=getattr(args, "solver", None) or DEFAULT_SOLVER,
            max_rounds=DEFAULT_MAX_ROUNDS if max_rounds is None else max_rounds,
            pin_to_fast=bool(getattr(args, "pin_to_fast", False)),
            recompute=getattr(args, "recompute", None) is not False,
            async_window=getattr(args, "async_window", 15),
            async_spans=bool(getattr(args, "async_spans", True)),
            insist=bool(getattr(args, "insist", False)))
    except SettingError as exc:
        raise UsageError(f"{OPTION_OF_SETTING.get(exc.setting, exc.setting)} {exc.detail}",
                         hint=exc.hint) from None
    get_solver(settings.solver)
    return settings


def plan_inputs(args: argparse.Namespace, *,
                check: bool = True) -> tuple[Plan, Graph, MemorySystem]:
    """The plan, graph and system of :func:`add_plan_arguments`, the plan verified against them
    (one :class:`~autotm_core.errors.PlanError` listing what is wrong) unless ``check`` is off."""
    from autotm_core.plans import check_plan, load_plan
    from autotm_core.presets import resolve_system
    from autotm_core.sources import load_source

    plan = load_plan(args.plan)
    graph = load_source(args.graph)
    system = resolve_system(args.system)
    if check:
        check_plan(plan, graph, system)
    return plan, graph, system


def report_width(console: Any) -> int:
    """Width of the charts in a report on ``console`` (room left for their labels)."""
    from autotm_core.report.charts import CHART_MARGIN

    return max(20, min(100, console.width - CHART_MARGIN))


def add_command(subparsers: argparse._SubParsersAction, name: str, description: str, *,
                help: str) -> argparse.ArgumentParser:
    """A command's parser: ``name``, its one-line ``help`` and its ``description``; it takes
    ``--debug`` too, so that it may come after the command as well as before."""
    parser = subparsers.add_parser(name, help=help, description=" ".join(description.split()))
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks and debug logs (as before the command)")
    return parser
