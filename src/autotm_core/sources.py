"""Resolving what a user names on the command line into a graph.

A source is either a path to a graph file (read by the ``json`` frontend) or
``FRONTEND:ARGUMENT``, e.g. ``example:mlp`` or ``zoo:resnet50``, handed to the
frontend plugin of that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autotm_core.errors import FormatError
from autotm_core.ir import Graph
from autotm_core.plugins import get_frontend


def load_source(source: str, **options: Any) -> Graph:
    """The graph that ``source`` names (see the module docstring)."""
    frontend_name, sep, argument = source.partition(":")
    if not sep or Path(source).exists() or len(frontend_name) == 1:  # a path (C:\\ too)
        if not sep and not Path(source).exists():
            _suggest(source)
        return get_frontend("json").load(source, **options)
    return get_frontend(frontend_name).load(argument, **options)


def _suggest(name: str) -> None:
    """A bare name that is no file but names an example or a zoo network: one error saying
    how to write it (``example:mlp``, ``zoo:resnet50``)."""
    from autotm_core.examples import EXAMPLES
    from autotm_core.zoo.catalog import NETWORKS

    base = name.split(",")[0]
    for frontend, names in (("example", EXAMPLES), ("zoo", NETWORKS)):
        if base in names or (frontend == "example" and base.startswith("chain-")):
            raise FormatError(f"{name}: no such file",
                              hint=f"to use the built-in graph, write {frontend}:{name}")
