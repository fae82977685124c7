"""The plan file: ``autotm-core/plan``, versions 1 and 2 (see docs/formats.md); version 2
adds ``reruns``, and a plan without reruns is written as version 1.

A plan round-trips losslessly through this file, attributes included as long
as they are JSON values (lists, not tuples).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from autotm_core.errors import FormatError
from autotm_core.formats.document import Fields, envelope, read_document, write_document
from autotm_core.plans.model import Move, MoveKind, Plan, Rerun, Residency

KIND = "plan"
VERSION = 2
VERSIONS = {1, 2}
_TOP = {"format", "version", "graph", "system", "planner", "capacities", "residencies", "moves",
        "configs", "attributes", "workspaces", "reruns"}
_RESIDENCY = {"tensor", "pool", "first", "last", "offset"}
_MOVE = {"tensor", "from", "to", "kernel", "kind"}
_KINDS = {kind.value: kind for kind in MoveKind}


def plan_to_document(plan: Plan) -> dict[str, Any]:
    """The JSON document of ``plan``."""
    residencies = []
    for r in plan.residencies:
        row: dict[str, Any] = {"tensor": r.tensor, "pool": r.pool, "first": r.first, "last": r.last}
        if r.offset is not None:
            row["offset"] = r.offset
        residencies.append(row)
    return {
        **envelope(KIND, VERSION if plan.reruns else 1),
        "graph": plan.graph,
        "system": plan.system,
        "planner": plan.planner,
        "capacities": dict(plan.capacities),
        "residencies": residencies,
        "moves": [
            {"tensor": m.tensor, "from": m.source, "to": m.target, "kernel": m.kernel,
             "kind": m.kind.value}
            for m in plan.moves
        ],
        "configs": [list(row) for row in plan.configs],
        "attributes": dict(plan.attributes),
        **({"workspaces": [{"kernel": k, "offset": o} for k, o in plan.workspace_offsets.items()]}
           if plan.workspace_offsets else {}),
        **({"reruns": [{"kernel": r.kernel, "before": r.before} for r in plan.reruns]}
           if plan.reruns else {}),
    }


def save_plan(plan: Plan, path: str | os.PathLike[str]) -> None:
    """Write ``plan`` to ``path`` (atomically)."""
    document = plan_to_document(plan)
    try:
        json.dumps(document["attributes"])
    except (TypeError, ValueError) as exc:
        raise FormatError(
            f"{path}: attributes: {exc}",
            hint="plan attributes must be JSON values: numbers, strings, lists, objects, null",
        ) from None
    write_document(path, document)


def load_plan(path: str | os.PathLike[str]) -> Plan:
    """Read a plan file; errors name the file and the field."""
    doc, fields = read_document(path, KIND, VERSIONS)
    return plan_from_document(doc, fields)


def plan_from_document(doc: Mapping[str, Any], fields: Fields) -> Plan:
    """The plan in a parsed ``autotm-core/plan`` document."""
    fields.unknown_keys(doc, _TOP, "")
    capacities = {}
    for name, value in fields.get(doc, "capacities", "", dict).items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise fields.fail(f"capacities.{name}", "expected a whole number of bytes or null")
        capacities[name] = value
    residencies = []
    for where, obj in fields.entries(doc, "residencies", _RESIDENCY):
        residencies.append(Residency(
            tensor=fields.get(obj, "tensor", where, str),
            pool=fields.get(obj, "pool", where, str),
            first=fields.get(obj, "first", where, int),
            last=fields.get(obj, "last", where, int),
            offset=fields.get(obj, "offset", where, int, required=False),
        ))
    moves = []
    for where, obj in fields.entries(doc, "moves", _MOVE, required=False):
        kind = fields.get(obj, "kind", where, str, required=False, default="sync")
        if kind not in _KINDS:
            raise fields.fail(f"{where}.kind", f"is {kind!r}; expected one of {', '.join(_KINDS)}")
        moves.append(Move(
            tensor=fields.get(obj, "tensor", where, str),
            source=fields.get(obj, "from", where, str),
            target=fields.get(obj, "to", where, str),
            kernel=fields.get(obj, "kernel", where, int),
            kind=_KINDS[kind],
        ))
    configs = []
    for k, raw in enumerate(fields.get(doc, "configs", "", list)):
        row = fields.list(raw, f"configs[{k}]")
        for i, name in enumerate(row):
            if not isinstance(name, str):
                raise fields.fail(f"configs[{k}][{i}]", "expected a pool name (a string)")
        configs.append(tuple(row))
    workspaces = {}
    for where, obj in fields.entries(doc, "workspaces", {"kernel", "offset"}, required=False):
        kernel = fields.get(obj, "kernel", where, int)
        if kernel in workspaces:
            raise fields.fail(f"{where}.kernel", f"kernel {kernel} has two workspace offsets")
        workspaces[kernel] = fields.get(obj, "offset", where, int)
    reruns = [Rerun(kernel=fields.get(obj, "kernel", where, int),
                    before=fields.get(obj, "before", where, int))
              for where, obj in fields.entries(doc, "reruns", {"kernel", "before"},
                                               required=False)]
    return Plan(
        graph=fields.get(doc, "graph", "", str),
        system=fields.get(doc, "system", "", str),
        planner=fields.get(doc, "planner", "", str, required=False, default=""),
        capacities=capacities,
        residencies=residencies,
        moves=moves,
        configs=configs,
        attributes=dict(fields.get(doc, "attributes", "", dict, required=False, default={})),
        workspace_offsets=workspaces,
        reruns=reruns,
    )
