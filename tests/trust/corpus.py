"""Malformed inputs: graphs, memory systems, cost tables, plans, grid files, each wrong one way.

Every case starts from a valid document of its kind (:func:`base`) and changes one
thing: the text (truncated, empty, not JSON, a duplicate key), the envelope, a
type, a number (negative, NaN, infinite, huge, fractional), or a reference (an
unknown pool, kernel or tensor, an offset out of range). None of them may be
accepted, and none may crash.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import attrs

KINDS = ("graph", "system", "costs", "plan", "grid")
"""What each case is."""

_GRAPH = {
    "format": "autotm-core/graph", "version": 1, "name": "update",
    "tensors": [{"name": "w", "nbytes": 262144, "kind": "parameter"},
                {"name": "y", "nbytes": 131072, "kind": "activation"}],
    "kernels": [{"name": "k0", "op": "matmul", "inputs": ["w"], "outputs": ["y"], "flops": 1e6},
                {"name": "k1", "op": "sgd", "inputs": ["w", "y"], "outputs": ["w"], "flops": 1e6},
                {"name": "k2", "op": "matmul", "inputs": ["w"], "flops": 1e6},
                {"name": "k3", "op": "matmul", "inputs": ["w"], "flops": 1e6}],
}
_SYSTEM = {
    "format": "autotm-core/memory-system", "version": 1, "name": "tiny-two",
    "flops_per_second": 1e12,
    "pools": [{"name": "fast", "capacity_nbytes": 524288, "read_bytes_per_second": 1e11,
               "write_bytes_per_second": 1e11, "latency_seconds": 1e-7},
              {"name": "slow", "capacity_nbytes": None, "read_bytes_per_second": 3e10,
               "write_bytes_per_second": 1e10, "latency_seconds": 3e-7}],
    "copies": [{"from": "slow", "to": "fast", "sync_bytes_per_second": 6e10,
                "async_bytes_per_second": 2e10}],
}
_PLAN = {
    "format": "autotm-core/plan", "version": 1, "graph": "update", "system": "tiny-two",
    "capacities": {"fast": 524288, "slow": None},
    "residencies": [{"tensor": "w", "pool": "fast", "first": 0, "last": 3, "offset": 0},
                    {"tensor": "y", "pool": "fast", "first": 0, "last": 1, "offset": 262144}],
    "moves": [], "configs": [["fast", "fast"], ["fast", "fast"], ["fast"], ["fast"]],
}
_GRID = {
    "format": "autotm-core/grid", "version": 1, "name": "tiny", "relative_gap": 0.01,
    "experiments": [{"name": "one", "system": "optane-2019", "graphs": ["example:chain-2"],
                     "limits": ["4:1"], "planners": ["all-slow"]}],
}


def base(kind: str) -> dict[str, Any]:
    """A valid document of ``kind`` (the cost table is built from the base graph and system)."""
    if kind == "costs":
        from autotm_core.costs import costs_to_document, roofline_costs
        from autotm_core.formats.graph_json import graph_from_text

        from .tiny import two_pools

        graph = graph_from_text(json.dumps(_GRAPH))
        system = two_pools(fast=524288)
        return costs_to_document(roofline_costs(graph, system), graph=graph, system=system)
    return copy.deepcopy({"graph": _GRAPH, "system": _SYSTEM, "plan": _PLAN, "grid": _GRID}[kind])


@attrs.frozen
class Bad:
    """One malformed input."""

    kind: str
    """Which of :data:`KINDS` it is."""
    name: str
    """What is wrong with it."""
    text: str
    """The file's contents."""
    expect: str = "refused"
    """``refused``: reading it fails (a plan: reading or verifying it); ``used``: it reads,
    but using it from the command line fails; ``legal``: odd but allowed, it must only not
    crash."""


Edit = Callable[[dict[str, Any]], object]
"""Changes a document in place."""


def _at(doc: Any, path: str) -> tuple[Any, Any]:
    """The container of ``path`` (``a.0.b``) and the last key."""
    *head, last = path.split(".")
    for part in head:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc, int(last) if isinstance(doc, list) else last


def put(path: str, value: object) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        where, key = _at(doc, path)
        where[key] = value
    return edit


def drop(path: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        where, key = _at(doc, path)
        del where[key]
    return edit


def append(path: str, value: object) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        where, key = _at(doc, path)
        where[key].append(copy.deepcopy(value))
    return edit


def twice(path: str) -> Edit:
    """Repeat the first element of the list at ``path``."""
    def edit(doc: dict[str, Any]) -> None:
        where, key = _at(doc, path)
        where[key].append(copy.deepcopy(where[key][0]))
    return edit


_NUMBERS = {"negative": -1, "fraction": 0.5, "nan": float("nan"), "infinite": float("inf"),
            "huge": 10**30, "string": "64", "bool": True, "null": None}
"""Wrong values of a number field, by name."""


def _envelope(kind: str) -> list[Bad]:
    text = json.dumps(base(kind))
    first_key = text.index(",")  # after "format": ...
    duplicated = text[:first_key] + ', "format": "autotm-core/other"' + text[first_key:]
    other = "autotm-core/plan" if kind != "plan" else "autotm-core/graph"
    return [
        Bad(kind, "empty file", ""),
        Bad(kind, "truncated", text[: len(text) // 2]),
        Bad(kind, "not JSON", "format: autotm-core\n"),
        Bad(kind, "a list", json.dumps([base(kind)])),
        Bad(kind, "duplicate key", duplicated),
        Bad(kind, "another kind", json.dumps({**base(kind), "format": other})),
        *(_one(kind, f"envelope {n}", e) for n, e in [
            ("version 9", put("version", 9)), ("version '1'", put("version", "1")),
            ("version true", put("version", True)), ("no format", drop("format")),
            ("no version", drop("version")), ("unknown field", put("colour", "blue"))]),
    ]


def _one(kind: str, name: str, edit: Edit, expect: str = "refused") -> Bad:
    doc = base(kind)
    edit(doc)
    return Bad(kind, name, json.dumps(doc), expect)


def corpus() -> list[Bad]:
    """Every malformed input of every kind."""
    from .corpus_cases import CASES

    out = [bad for kind in KINDS for bad in _envelope(kind)]
    for kind, numbers, edits in CASES:
        for path, legal in numbers:
            out += [_one(kind, f"{path} {n}", put(path, v), "legal" if n in legal else "refused")
                    for n, v in _NUMBERS.items()]
        out += [_one(kind, name, edit, *expect) for name, edit, *expect in edits]
    return out
