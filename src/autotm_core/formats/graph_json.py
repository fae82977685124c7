"""The graph file: ``autotm-core/graph``, versions 1 and 2 (documented in docs/formats.md).

Version 2 adds two optional kernel fields, ``module`` and ``rerun``; a graph that sets
neither is written as version 1, which every earlier reader reads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from autotm_core.errors import AutotmError, FormatError, GraphError, summarize_problems
from autotm_core.formats.document import (
    Fields,
    envelope,
    parse_document,
    read_document,
    write_document,
)
from autotm_core.ir import Graph, Kernel, Tensor, TensorKind, check_graph, reruns_safely

KIND = "graph"
VERSION = 2
VERSIONS = {1, 2}
_TENSOR_FIELDS = {"name", "nbytes", "kind", "shape", "dtype", "pools"}
_KERNEL_FIELDS = {"name", "op", "inputs", "outputs", "flops", "workspace_nbytes", "module",
                  "rerun"}
_KINDS = {kind.value: kind for kind in TensorKind}


def graph_to_document(graph: Graph) -> dict[str, Any]:
    """The JSON document of ``graph``; optional fields are left out when unset."""
    tensors = []
    for t in graph.tensors:
        record: dict[str, Any] = {"name": t.name, "nbytes": t.nbytes, "kind": t.kind.value}
        if t.shape is not None:
            record["shape"] = list(t.shape)
        if t.dtype is not None:
            record["dtype"] = t.dtype
        if t.pools is not None:
            record["pools"] = list(t.pools)
        tensors.append(record)
    kernels = []
    for k in graph.kernels:
        record = {"name": k.name, "op": k.op, "inputs": list(k.inputs), "outputs": list(k.outputs)}
        if k.flops is not None:
            record["flops"] = k.flops
        if k.workspace_nbytes:
            record["workspace_nbytes"] = k.workspace_nbytes
        if k.module:
            record["module"] = k.module
        if k.rerun != reruns_safely(k.op):
            record["rerun"] = k.rerun
        kernels.append(record)
    version = VERSION if any("module" in r or "rerun" in r for r in kernels) else 1
    document = {**envelope(KIND, version), "name": graph.name}
    if graph.captured_for:
        document["captured_for"] = graph.captured_for
    return {**document, "tensors": tensors, "kernels": kernels}


def save_graph(graph: Graph, path: str | os.PathLike[str]) -> None:
    """Write ``graph`` to ``path`` (atomically)."""
    write_document(path, graph_to_document(graph))


def load_graph(path: str | os.PathLike[str], *, verify: bool = True) -> Graph:
    """Read a graph file; every malformed record and every graph error is reported at once."""
    doc, fields = read_document(path, KIND, VERSIONS)
    return _graph_from(doc, fields, verify=verify)


def graph_from_text(text: str, origin: str = "<graph>", *, verify: bool = True) -> Graph:
    """Parse a graph document held in a string."""
    doc, fields = parse_document(text, origin, KIND, VERSIONS)
    return _graph_from(doc, fields, verify=verify)


def _graph_from(doc: Mapping[str, Any], fields: Fields, *, verify: bool) -> Graph:
    fields.unknown_keys(doc, {"format", "version", "name", "captured_for", "tensors", "kernels"},
                        "")
    name = fields.get(doc, "name", "", str)
    captured_for = fields.get(doc, "captured_for", "", str, required=False, default="")
    problems: list[str] = []
    tensors = []
    for i, raw in enumerate(fields.get(doc, "tensors", "", list)):
        try:
            tensors.append(_tensor_fast(raw))
        except Exception:  # re-read slowly for a message naming the field
            problems.append(_problem(_tensor, raw, f"tensors[{i}]", fields))
    kernels = []
    for i, raw in enumerate(fields.get(doc, "kernels", "", list)):
        try:
            kernels.append(_kernel_fast(raw))
        except Exception:
            problems.append(_problem(_kernel, raw, f"kernels[{i}]", fields))
    if problems:
        raise FormatError(summarize_problems(fields.origin, problems))
    graph = Graph(name=name, tensors=tensors, kernels=kernels, captured_for=captured_for)
    if verify:
        try:
            check_graph(graph)
        except GraphError as exc:
            raise GraphError(f"{fields.origin}: {exc.message}", problems=exc.problems) from None
    return graph


def _tensor_fast(raw: Any) -> Tensor:
    """The common case, a well-formed record.

    Anything odd raises and is re-read by :func:`_tensor`.
    """
    if not raw.keys() <= _TENSOR_FIELDS or not isinstance(raw["nbytes"], int):
        raise ValueError
    dtype = raw.get("dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise ValueError
    return Tensor(raw["name"], raw["nbytes"], _KINDS[raw.get("kind", "activation")],
                  raw.get("shape"), dtype, raw.get("pools"))


def _kernel_fast(raw: Any) -> Kernel:
    if not raw.keys() <= _KERNEL_FIELDS:
        raise ValueError
    rerun = raw.get("rerun")
    if rerun is not None and type(rerun) is not bool:
        raise ValueError
    op = raw["op"]
    return Kernel(raw["name"], op, raw.get("inputs", ()), raw.get("outputs", ()),
                  raw.get("flops"), raw.get("workspace_nbytes", 0), raw.get("module", ""),
                  reruns_safely(op) if rerun is None else rerun)


def _problem(read: Any, raw: object, where: str, fields: Fields) -> str:
    """The message of the error the careful reader ``read`` raises on ``raw``."""
    try:
        read(raw, where, fields)
    except FormatError as exc:  # already "origin: path: problem"; drop the origin
        return exc.message.split(": ", 1)[1]
    except AutotmError as exc:
        return f"{where}: {exc.message}"
    return f"{where}: cannot be read"


def _tensor(raw: object, where: str, fields: Fields) -> Tensor:
    obj = fields.object(raw, where)
    fields.unknown_keys(obj, _TENSOR_FIELDS, where)
    kind_name = fields.get(obj, "kind", where, str, required=False, default="activation")
    if kind_name not in _KINDS:
        raise fields.fail(
            f"{where}.kind",
            f"{kind_name!r} is not a tensor kind; use one of {', '.join(_KINDS)}",
        )
    return Tensor(
        name=fields.get(obj, "name", where, str),
        nbytes=fields.get(obj, "nbytes", where, (int, float)),
        kind=_KINDS[kind_name],
        shape=fields.get(obj, "shape", where, list, required=False),
        dtype=fields.get(obj, "dtype", where, str, required=False),
        pools=fields.get(obj, "pools", where, list, required=False),
    )


def _kernel(raw: object, where: str, fields: Fields) -> Kernel:
    obj = fields.object(raw, where)
    fields.unknown_keys(obj, _KERNEL_FIELDS, where)
    return Kernel(
        name=fields.get(obj, "name", where, str),
        op=fields.get(obj, "op", where, str),
        inputs=fields.get(obj, "inputs", where, list, required=False, default=[]),
        outputs=fields.get(obj, "outputs", where, list, required=False, default=[]),
        flops=fields.get(obj, "flops", where, (int, float), required=False),
        workspace_nbytes=fields.get(obj, "workspace_nbytes", where, int, required=False, default=0),
        module=fields.get(obj, "module", where, str, required=False, default=""),
        rerun=fields.get(obj, "rerun", where, bool, required=False,
                         default=reruns_safely(fields.get(obj, "op", where, str))),
    )
