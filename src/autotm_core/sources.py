"""Resolving what a user names on the command line into a graph.

A source is either a path to a graph file (read by the ``json`` frontend) or
``FRONTEND:ARGUMENT``, e.g. ``example:mlp`` or ``zoo:resnet50``, handed to the
frontend plugin of that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autotm_core.ir import Graph
from autotm_core.plugins import get_frontend


def load_source(source: str, **options: Any) -> Graph:
    """The graph that ``source`` names (see the module docstring)."""
    frontend_name, sep, argument = source.partition(":")
    if not sep or Path(source).exists() or len(frontend_name) == 1:  # a path (C:\\ too)
        return get_frontend("json").load(source, **options)
    return get_frontend(frontend_name).load(argument, **options)
