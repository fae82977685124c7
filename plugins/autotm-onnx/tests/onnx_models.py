"""Small ONNX models built with onnx.helper, shared by the tests (sizes are hand-computed there)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), *, opset=17, value_info=(), domains=()):
    graph = helper.make_graph(nodes, "test-graph", inputs, outputs, list(initializers),
                              value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, 1) for d in domains)]
    return helper.make_model(graph, opset_imports=opsets)


def _weight(name, *shape, dtype=np.float32):
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def mlp(batch: int | str = 8) -> onnx.ModelProto:
    """x (batch, 16) -> Gemm(W1 (32, 16), transB) -> Relu -> Gemm(W2 (32, 10)) -> y (batch, 10)."""
    return _model(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
            helper.make_node("Relu", ["h"], ["r"], name="relu"),
            helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2"),
        ],
        [helper.make_tensor_value_info("x", F, [batch, 16])],
        [helper.make_tensor_value_info("y", F, [batch, 10])],
        [_weight("w1", 32, 16), _weight("b1", 32), _weight("w2", 32, 10), _weight("b2", 10)],
    )


def cnn() -> onnx.ModelProto:
    """x (2,3,8,8) -> Conv 3x3 pad 1, BatchNorm, Relu, MaxPool 2, GlobalAvgPool -> y (2,4)."""
    shape = helper.make_tensor("shape_value", TensorProto.INT64, [2], [2, 4])
    return _model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                             kernel_shape=[3, 3]),
            helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"],
                             name="bn"),
            helper.make_node("Relu", ["n"], ["r"], name="relu"),
            helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                             strides=[2, 2]),
            helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
            helper.make_node("Constant", [], ["shape"], name="const", value=shape),
            helper.make_node("Reshape", ["g", "shape"], ["y"], name="flatten"),
        ],
        [helper.make_tensor_value_info("x", F, [2, 3, 8, 8])],
        [helper.make_tensor_value_info("y", F, None)],
        [_weight("w", 4, 3, 3, 3), _weight("b", 4), _weight("scale", 4), _weight("bias", 4),
         _weight("mean", 4), _weight("var", 4)],
    )


def attention() -> onnx.ModelProto:
    """x (2,5,8): Q, K, V projections, 2 heads of 4, softmax(Q K^T) V, heads merged back."""
    nodes = []
    for proj in ("q", "k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", f"w{proj}"], [f"{proj}_flat"], name=f"proj_{proj}"),
            helper.make_node("Reshape", [f"{proj}_flat", "heads_shape"], [f"{proj}_heads"],
                             name=f"split_{proj}"),
            helper.make_node("Transpose", [f"{proj}_heads"], [proj], name=f"perm_{proj}",
                             perm=[0, 2, 3, 1] if proj == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("MatMul", ["q", "k"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["context"], name="context"),
        helper.make_node("Transpose", ["context"], ["merged"], name="merge", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["merged", "out_shape"], ["y"], name="join"),
    ]
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [2, 5, 8])],
        [helper.make_tensor_value_info("y", F, None)],
        [_weight("wq", 8, 8), _weight("wk", 8, 8), _weight("wv", 8, 8),
         numpy_helper.from_array(np.array([2, 5, 2, 4], dtype=np.int64), "heads_shape"),
         numpy_helper.from_array(np.array([2, 5, 8], dtype=np.int64), "out_shape")],
    )


def conv_transpose() -> onnx.ModelProto:
    """x (1,4,3,3) -> ConvTranspose, weight (4,2,2,2), stride 2 -> y (1,2,6,6)."""
    return _model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2])],
        [helper.make_tensor_value_info("x", F, [1, 4, 3, 3])],
        [helper.make_tensor_value_info("y", F, None)],
        [_weight("w", 4, 2, 2, 2)],
    )


def identity(elem_type: int, shape, *, opset: int = 21) -> onnx.ModelProto:
    """y = Identity(x), x of ``elem_type`` and ``shape``."""
    return _model(
        [helper.make_node("Identity", ["x"], ["y"], name="id")],
        [helper.make_tensor_value_info("x", elem_type, shape)],
        [helper.make_tensor_value_info("y", elem_type, None)],
        opset=opset,
    )


def with_nodes(nodes, *, opset=17, value_info=(), domains=()) -> onnx.ModelProto:
    """x (4, 4) float through ``nodes`` to y, with initializer w (4, 4)."""
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", F, [4, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        [_weight("w", 4, 4)],
        opset=opset, value_info=value_info, domains=domains,
    )


def save(model: onnx.ModelProto, path) -> str:
    """Write ``model`` to ``path``; returns the path as a string."""
    onnx.save(model, str(path))
    return str(path)
