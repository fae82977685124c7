"""Versioned JSON file formats (see docs/formats.md)."""

from autotm_core.formats.document import read_document, write_document
from autotm_core.formats.graph_json import (
    graph_from_text,
    graph_to_document,
    load_graph,
    save_graph,
)
from autotm_core.formats.system_json import (
    load_system,
    save_system,
    system_to_document,
)

__all__ = [
    "graph_from_text",
    "graph_to_document",
    "load_graph",
    "load_system",
    "read_document",
    "save_graph",
    "save_system",
    "system_to_document",
    "write_document",
]
