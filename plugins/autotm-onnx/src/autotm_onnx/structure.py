"""Checks of an ONNX graph's structure before shape inference.

ONNX requires a graph's nodes in topological order, each value written once;
autotm-onnx also refuses control flow (If, Loop, Scan: nodes holding subgraphs),
whose kernels would run a data-dependent number of times, and ops or opsets the
installed ``onnx`` does not know (its shape inference would silently skip them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autotm_core.errors import GraphError

if TYPE_CHECKING:
    from onnx import GraphProto, ModelProto, NodeProto

DEFAULT_DOMAINS = ("", "ai.onnx")
"""Names of ONNX's default operator set."""
CHECKED_DOMAINS = (*DEFAULT_DOMAINS, "ai.onnx.ml")
"""Domains whose operator schemas the ``onnx`` package knows, so each node's op can be checked."""


def node_label(node: NodeProto, position: int) -> str:
    """How errors name a node: its name (or its position) and its op."""
    name = node.name or f"#{position}"
    return f"node {name!r} ({_qualified(node)})"


def _qualified(node: NodeProto) -> str:
    return node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}::{node.op_type}"


def opset_versions(model: ModelProto) -> dict[str, int]:
    """The opset version of each domain the model imports ('' for the default)."""
    versions: dict[str, int] = {}
    for opset in model.opset_import:
        domain = "" if opset.domain in DEFAULT_DOMAINS else opset.domain
        versions[domain] = opset.version
    return versions


def check_structure(model: ModelProto) -> None:
    """Raise :class:`GraphError` for control flow, unknown ops/opsets or a non-topological order."""
    versions = opset_versions(model)
    _check_opsets(versions)
    graph = model.graph
    for position, node in enumerate(graph.node):
        _check_no_subgraph(node, position)
        _check_schema(node, position, versions)
    check_topological_order(graph)


def _check_opsets(versions: dict[str, int]) -> None:
    import onnx.defs

    newest = onnx.defs.onnx_opset_version()
    default = versions.get("")
    if default is not None and not 1 <= default <= newest:
        raise GraphError(
            f"the model imports ONNX opset {default}; the installed onnx "
            f"{onnx.__version__} knows opsets 1 to {newest}",
            hint="upgrade onnx (pip install -U onnx), or export the model at a lower opset",
        )


def _check_no_subgraph(node: NodeProto, position: int) -> None:
    from onnx import AttributeProto

    for attribute in node.attribute:
        if attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
            raise GraphError(
                f"{node_label(node, position)} holds a subgraph (attribute {attribute.name!r}); "
                "autotm-onnx does not plan control flow (If, Loop, Scan)",
                hint="export the model without data-dependent control flow (e.g. unroll loops, "
                "fold constant conditions with onnx-simplifier), then import it again",
            )


def _check_schema(node: NodeProto, position: int, versions: dict[str, int]) -> None:
    import onnx.defs

    if node.domain not in CHECKED_DOMAINS:
        return  # a custom domain: its outputs need shapes in the model's value_info
    domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
    version = versions.get(domain)
    if version is None:
        raise GraphError(
            f"{node_label(node, position)} belongs to domain {domain or 'ai.onnx'!r}, "
            "which the model does not import",
            hint="add the domain to the model's opset_import (the file may be truncated)",
        )
    try:
        onnx.defs.get_schema(node.op_type, version, domain)
    except onnx.defs.SchemaError:
        raise GraphError(
            f"{node_label(node, position)}: op {node.op_type!r} does not exist in opset "
            f"{version} of domain {domain or 'ai.onnx'!r}",
            hint="check the op's name and the model's opset (an op newer than the opset is "
            "refused too); re-export at a suitable opset",
        ) from None


def check_topological_order(graph: GraphProto) -> None:
    """Raise :class:`GraphError` naming the node and value when a value is read before written."""
    producer: dict[str, int] = {}
    for position, node in enumerate(graph.node):
        for name in node.output:
            if name:
                producer.setdefault(name, position)
    available = {v.name for v in graph.input}
    available.update(t.name for t in graph.initializer)
    available.update(t.values.name for t in graph.sparse_initializer)
    written: dict[str, int] = {}
    for position, node in enumerate(graph.node):
        for name in node.input:
            if not name or name in available:
                continue
            label = node_label(node, position)
            later = producer.get(name)
            if later is not None:
                raise GraphError(
                    f"{label} reads value {name!r} before "
                    f"{node_label(graph.node[later], later)} produces it; ONNX requires the "
                    "nodes in topological order",
                    hint="re-export the model, or sort its nodes topologically (e.g. with "
                    "onnx-graphsurgeon's toposort) and import it again",
                )
            raise GraphError(
                f"{label} reads value {name!r}, which no node produces and which is neither a "
                "graph input nor an initializer",
                hint="declare the value as a graph input or initializer "
                "(the file may be truncated)",
            )
        for name in node.output:
            if not name:
                continue
            if name in written or name in available:
                first = written.get(name)
                where = (
                    "a graph input or initializer" if first is None
                    else node_label(graph.node[first], first)
                )
                raise GraphError(
                    f"{node_label(node, position)} writes value {name!r}, already written by "
                    f"{where}; ONNX values are assigned once",
                    hint="rename one of the values and import the model again",
                )
            written[name] = position
            available.add(name)
    for output in graph.output:
        if output.name not in available:
            raise GraphError(
                f"graph output {output.name!r} is produced by no node and is neither a graph "
                "input nor an initializer",
                hint="fix the model's outputs (the file may be truncated)",
            )
