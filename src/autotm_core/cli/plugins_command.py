"""``plugins``: the frontends and solvers installed, and whether each can run."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autotm_core.cli.options import add_command
from autotm_core.plugins import FRONTENDS_GROUP, SOLVERS_GROUP, frontends, solvers


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers, "plugins",
        f"List the entry points of the groups {FRONTENDS_GROUP} and {SOLVERS_GROUP}.",
        help="list the frontend and solver plugins found, and why any cannot run")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, console: Console) -> int:
    for title, group, entries in (
        ("frontends", FRONTENDS_GROUP, frontends()),
        ("solvers", SOLVERS_GROUP, solvers()),
    ):
        table = Table(title=f"{title} ({group})", title_justify="left")
        table.add_column("name", style="bold")
        table.add_column("distribution")
        table.add_column("usable")
        table.add_column("description / reason", overflow="fold")  # a reason is never cut short
        for name, entry in entries.items():
            if entry.usable:
                table.add_row(escape(name), escape(entry.distribution), "[green]yes[/]",
                              escape(getattr(entry.plugin, "description", "")))
            else:  # escaped: an install hint's extras ("autotm-core[cbc]") are not markup
                table.add_row(escape(name), escape(entry.distribution), "[red]no[/]",
                              f"[red]{escape(str(entry.error))}[/]")
        if not entries:
            table.add_row("-", "-", "-", "none installed")
        console.print(table)
    return 0
