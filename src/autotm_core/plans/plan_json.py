"""The plan file: ``autotm-core/plan``, versions 1 to 3 (see docs/formats.md); version 2
adds ``reruns``, version 3 a move's ``until`` (copies spanning kernels). A plan is written
in the lowest version that holds it: 1 without reruns or spanning copies.

A plan round-trips losslessly through this file, attributes included as long
as they are JSON values (lists, not tuples).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import attrs

from autotm_core.errors import FormatError
from autotm_core.formats.document import Fields, envelope, read_document, write_document
from autotm_core.plans.model import Move, MoveKind, Plan, Rerun, Residency

KIND = "plan"
VERSIONS = {1, 2, 3}
UNTIL_VERSION = 3
"""The first version whose moves may say ``until``."""
_TOP = {"format", "version", "graph", "system", "planner", "capacities", "residencies", "moves",
        "configs", "attributes", "workspaces", "reruns"}
_RESIDENCY = {"tensor", "pool", "first", "last", "offset"}
_MOVE_UNTIL = {"tensor", "from", "to", "kernel", "kind", "until"}
_KINDS = {kind.value: kind for kind in MoveKind}


def plan_to_document(plan: Plan) -> dict[str, Any]:
    """The JSON document of ``plan``."""
    residencies = []
    for r in plan.residencies:
        row: dict[str, Any] = {"tensor": r.tensor, "pool": r.pool, "first": r.first, "last": r.last}
        if r.offset is not None:
            row["offset"] = r.offset
        residencies.append(row)
    spanning = plan.has_spanning_copies
    version = UNTIL_VERSION if spanning else 2 if plan.reruns else 1
    moves = []
    for m in plan.moves:
        move: dict[str, Any] = {"tensor": m.tensor, "from": m.source, "to": m.target,
                                "kernel": m.kernel, "kind": m.kind.value}
        if m.until != m.default_until:
            move["until"] = m.until
        moves.append(move)
    return {
        **envelope(KIND, version),
        "graph": plan.graph,
        "system": plan.system,
        "planner": plan.planner,
        "capacities": dict(plan.capacities),
        "residencies": residencies,
        "moves": moves,
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
    spanning = doc.get("version") == UNTIL_VERSION
    for where, obj in fields.entries(doc, "moves", _MOVE_UNTIL, required=False):
        if "until" in obj and not spanning:
            raise fields.fail(f"{where}.until", f"needs plan version {UNTIL_VERSION} (copies "
                              f"spanning kernels); this file says {doc.get('version')!r}")
        kind = fields.get(obj, "kind", where, str, required=False, default="sync")
        if kind not in _KINDS:
            raise fields.fail(f"{where}.kind", f"is {kind!r}; expected one of {', '.join(_KINDS)}")
        move = Move(
            tensor=fields.get(obj, "tensor", where, str),
            source=fields.get(obj, "from", where, str),
            target=fields.get(obj, "to", where, str),
            kernel=fields.get(obj, "kernel", where, int),
            kind=_KINDS[kind],
        )
        until = fields.get(obj, "until", where, int, required=False)
        moves.append(move if until is None else attrs.evolve(move, until=until))
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
