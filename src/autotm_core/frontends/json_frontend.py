"""The JSON frontend: reads an ``autotm-core/graph`` file."""

from __future__ import annotations

import os
from typing import Any

from autotm_core.formats.graph_json import load_graph
from autotm_core.ir import Graph


class JsonFrontend:
    """Loads a graph file written by autotm-core or any tool that follows docs/formats.md."""

    name = "json"
    description = "an autotm-core graph file (.json)"

    def unavailable_reason(self) -> str | None:
        """Always usable: it needs nothing beyond autotm-core."""
        return None

    def load(self, source: str | os.PathLike[str], **options: Any) -> Graph:
        """Read and verify the graph file ``source``."""
        return load_graph(source, verify=options.get("verify", True))
