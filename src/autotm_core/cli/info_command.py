"""``info GRAPH``: a summary of a graph, its tensors and its memory over time."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.cli.options import add_command, add_graph, add_json, report_width

DESCRIPTION = """\
Load and verify a graph, then summarise it."""
"""What ``info --help`` says the command does."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "info", DESCRIPTION,
        help='summarise a graph: tensors by kind, peak live bytes, memory over time')
    add_graph(parser)
    add_json(parser, "the summary")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.report.graph_summary import graph_facts, render_graph_summary
    from autotm_core.sources import load_source

    graph = load_source(args.graph)
    facts = graph_facts(graph)
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    console.print(render_graph_summary(graph, facts, width=report_width(console)))
    return 0
