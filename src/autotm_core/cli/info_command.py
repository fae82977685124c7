"""``info GRAPH``: a summary of a graph, its tensors and its memory over time."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from autotm_core.sources import load_source

SOURCE_HELP = (
    "a graph file (.json), or FRONTEND:ARGUMENT for a frontend plugin, e.g. example:mlp, "
    "example:chain-1000"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "info", help="summarise a graph: tensors by kind, peak live bytes, memory over time",
        description="Load and verify a graph, then summarise it.",
    )
    parser.add_argument("graph", metavar="GRAPH", help=SOURCE_HELP)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.report.graph_summary import graph_facts, render_graph_summary

    graph = load_source(args.graph)
    facts = graph_facts(graph)
    if args.json:
        console.print_json(json.dumps(facts))
        return 0
    console.print(render_graph_summary(graph, facts, width=max(20, min(100, console.width - 16))))
    return 0
