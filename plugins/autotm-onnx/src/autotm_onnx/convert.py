"""An ONNX model (an inference graph) into a verified autotm-core :class:`Graph`.

Mapping rules (docs/frontends-onnx.md has the full list):

- initializers are PARAMETER tensors; graph inputs that are not initializers are
  INPUT tensors; values listed as graph outputs are OUTPUT tensors (unless they
  are already an input, an initializer or a constant, which keep that kind);
- a ``Constant`` node is no kernel: its value becomes a CONSTANT tensor;
- every other node is one kernel, in the model's (topological) order, whose op is
  the lower-cased ONNX op type, or ``domain::op`` for a non-default domain;
- sizes are exact: shape x element size of the value's element type;
- initializers and graph inputs no node reads are left out (logged), and so are
  node outputs no node reads whose size shape inference does not give (e.g. the
  mask of an old ``Dropout``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from autotm_core.costs import Dialect, op_flops
from autotm_core.errors import GraphError
from autotm_core.ir import Graph, GraphBuilder, Tensor, TensorKind

from autotm_onnx.dims import bind_dims
from autotm_onnx.shapes import ValueType, ValueTypes, infer_shapes
from autotm_onnx.structure import DEFAULT_DOMAINS, check_structure

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto

log = logging.getLogger(__name__)


def kernel_op(node: NodeProto) -> str:
    """The kernel op of ``node``: ``op_type`` lower-cased, ``domain::op`` outside the default."""
    op = node.op_type.lower()
    return op if node.domain in DEFAULT_DOMAINS else f"{node.domain}::{op}"


def _is_constant(node: NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS


def convert_model(model: ModelProto, *, name: str, dims: Mapping[str, int]) -> Graph:
    """The graph of ``model`` (modified in place: dimensions bound) with the name ``name``."""
    check_structure(model)
    bind_dims(model, dims)
    inferred = infer_shapes(model)
    return _Converter(inferred, name).build()


class _Converter:
    def __init__(self, model: ModelProto, name: str) -> None:
        self._graph = model.graph
        self._types = ValueTypes(model)
        self._builder = GraphBuilder(name)
        self._tensors: dict[str, Tensor] = {}
        self._outputs = {value.name for value in self._graph.output}
        self._read = {name for node in self._graph.node for name in node.input if name}
        self._read |= self._outputs

    def build(self) -> Graph:
        graph = self._graph
        initializers = {t.name for t in graph.initializer}
        for tensor in graph.initializer:
            value_type = self._types.of_initializer(
                tensor.name, dims=tensor.dims, elem_type=tensor.data_type)
            self._declare(tensor.name, TensorKind.PARAMETER, value_type)
        for sparse in graph.sparse_initializer:  # planned as their dense equivalent
            initializers.add(sparse.values.name)
            value_type = self._types.of_initializer(
                sparse.values.name, dims=sparse.dims, elem_type=sparse.values.data_type)
            self._declare(sparse.values.name, TensorKind.PARAMETER, value_type)
        for value in graph.input:
            if value.name not in initializers:
                self._declare(value.name, TensorKind.INPUT)
        names: set[str] = set()
        for position, node in enumerate(graph.node):
            if _is_constant(node):
                self._declare(node.output[0], TensorKind.CONSTANT)
            else:
                self._kernel(node, position, names)
        return self._builder.build()

    def _declare(self, name: str, kind: TensorKind, value_type: ValueType | None = None) -> None:
        if name not in self._read and kind is not TensorKind.ACTIVATION:
            log.info("leaving out %s %r: no node reads it", kind.value, name)
            return
        if value_type is None:
            value_type = self._types.of(name)
        if kind is TensorKind.ACTIVATION and name in self._outputs:
            kind = TensorKind.OUTPUT
        self._builder.tensor(name, nbytes=value_type.nbytes, kind=kind,
                             shape=value_type.shape, dtype=value_type.dtype)
        self._tensors[name] = Tensor(name=name, nbytes=value_type.nbytes, kind=kind,
                                     shape=value_type.shape, dtype=value_type.dtype)

    def _kernel(self, node: NodeProto, position: int, names: set[str]) -> None:
        outputs = []
        for name in node.output:
            if not name:
                continue
            try:
                self._declare(name, TensorKind.ACTIVATION)
            except GraphError:
                if name in self._read:
                    raise
                log.warning("leaving out %r, an output of node %r that no node reads: shape "
                            "inference gives it no size", name, node.name or position)
                continue
            outputs.append(name)
        inputs = [name for name in node.input if name]
        op = kernel_op(node)
        flops = op_flops(op, inputs=[self._tensors[n] for n in inputs],
                         outputs=[self._tensors[n] for n in outputs], dialect=Dialect.ONNX)
        name = node.name or f"{op.rsplit('::', 1)[-1]}_{position}"
        if name in names:
            name = f"{name}#{position}"
        names.add(name)
        self._builder.kernel(name, op=op, inputs=list(dict.fromkeys(inputs)),
                             outputs=outputs, flops=flops)

