"""``import FRONTEND SPEC``: turn a model into a graph file with a frontend plugin.

The SPEC and the options (``--option key=value``, repeated, plus
``--batch-size``) go to the frontend's ``load()``; the graph it returns is
saved with :func:`autotm_core.save_graph`.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from autotm_core.cli.options import add_command
from autotm_core.errors import UsageError

DESCRIPTION = """\
Load SPEC with the frontend plugin FRONTEND (see 'python -m autotm_core plugins') and save
the graph, e.g. 'import torch package.module:factory --batch-size 32 -o graph.json'."""
"""What ``import --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "import", DESCRIPTION,
                         help='capture a model with a frontend plugin and save its graph (.json)')
    parser.add_argument("frontend", metavar="FRONTEND", help="a frontend plugin's name, e.g. torch")
    parser.add_argument("spec", metavar="SPEC", help="what the frontend loads (its own syntax)")
    parser.add_argument(
        "--batch-size", type=int, metavar="N", help="batch size, passed to load() as batch_size"
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE",
        help="an option for the frontend (repeatable); values are passed as strings",
    )
    parser.add_argument(
        "--dim", action="append", default=[], metavar="NAME=SIZE",
        help="bind a symbolic dimension, e.g. --dim batch=32 (repeatable; passed as dims)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="graph file to write")
    parser.set_defaults(handler=run)


def parse_options(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a malformed or repeated key is an error."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(
                f"option {pair!r} is not KEY=VALUE", hint="write e.g. --option mode=train"
            )
        if key in options:
            raise UsageError(f"option {key!r} is given twice", hint="give each option once")
        options[key] = value
    return options


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.formats import save_graph
    from autotm_core.plugins import get_frontend
    from autotm_core.units import format_bytes

    options: dict[str, object] = dict(parse_options(args.option))
    if args.batch_size is not None:
        if args.batch_size < 1:
            raise UsageError(f"--batch-size {args.batch_size} must be at least 1")
        if "batch_size" in options:
            raise UsageError("batch_size is given both as --batch-size and as --option")
        options["batch_size"] = args.batch_size
    if args.dim:
        if "dims" in options:
            raise UsageError("dims is given both as --dim and as --option")
        options["dims"] = parse_options(args.dim)
    graph = get_frontend(args.frontend).load(args.spec, **options)
    save_graph(graph, args.output)
    console.print(
        f"wrote {args.output}: graph {graph.name!r}, {len(graph.kernels)} kernels, "
        f"{len(graph.tensors)} tensors, peak live {format_bytes(graph.liveness.peak_nbytes)}",
        highlight=False, soft_wrap=True,
    )
    return 0
