"""``profile GRAPH --system S -o costs.json``: measure every kernel in every placement."""

from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from autotm_core.cli.options import (
    add_command,
    add_graph,
    add_json,
    add_output,
    add_system,
    check_pool_names,
    parse_pairs,
)


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/autotm-core/profiles``, else ``~/.cache/autotm-core/profiles``."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "autotm-core", "profiles")


DESCRIPTION = """\
Run each distinct kernel of a graph (its replay: the bytes it reads and writes, compute for
its FLOPs) in each placement of its tensors on NUMA-bound arenas, several times, and write
the median times as a cost file for 'solve --costs' and 'simulate --costs'. Measurements are
cached by kernel signature, NUMA placement and machine."""
"""What ``profile --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "profile", DESCRIPTION,
        help='measure every kernel in every placement of its tensors; write a cost file')
    add_graph(parser)
    add_system(parser)
    add_output(parser, "the cost file", required=True, metavar="FILE")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="timed runs per measurement, after one warm-up (default 3)")
    parser.add_argument("--cache", metavar="DIR", default=None,
                        help=f"profile cache folder (default {default_cache_dir()})")
    parser.add_argument("--no-cache", action="store_true",
                        help="neither read nor write the profile cache")
    parser.add_argument("--bind", action="append", default=[], metavar="POOL=NODE",
                        help="bind a pool to this NUMA node instead of the system's (repeatable)")
    parser.add_argument("--max-configs", type=int, default=256, metavar="N",
                        help="configurations per kernel above which only uniform placements and "
                        "single deviations from all-fast are profiled (default 256)")
    add_json(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autotm_core.presets import resolve_system
    from autotm_core.profiler.cache import ProfileCache
    from autotm_core.profiler.profile import profile_graph, save_profile
    from autotm_core.report.profile_report import profile_facts, render_profile
    from autotm_core.sources import load_source

    bind = parse_pairs(args.bind, "--bind", int)
    graph = load_source(args.graph)
    system = resolve_system(args.system)
    check_pool_names(bind, "--bind", system)
    cache = None if args.no_cache else ProfileCache(args.cache or default_cache_dir())
    columns = (TextColumn("measuring"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[kernel]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=args.json) as progress:
        task = progress.add_task("profile", total=None, kernel="")
        result = profile_graph(
            graph, system, repeat=args.repeat, cache=cache, bind=bind,
            max_configs=args.max_configs,
            progress=lambda done, total, name: progress.update(task, completed=done, total=total,
                                                               kernel=name),
        )
    save_profile(result, args.output, graph=graph, system=system)
    facts = profile_facts(result, graph=graph.name, system=system, output=args.output,
                          repeat=args.repeat)
    if args.json:
        console.print_json(json.dumps(facts))
    else:
        console.print(render_profile(facts))
    return 0
