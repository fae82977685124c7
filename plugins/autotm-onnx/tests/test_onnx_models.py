"""Models built with onnx.helper: sizes, kinds and FLOPs against hand computation."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from autotm_core.costs import estimate_flops, roofline_costs
from autotm_core.ir import TensorKind, verify_graph
from autotm_core.plugins import get_frontend
from autotm_core.presets import preset
from onnx import TensorProto

import onnx_models
from autotm_onnx import load
from autotm_onnx.dtypes import ELEMENT_TYPES

F32 = 4


def _sizes(graph):
    return {t.name: t.nbytes for t in graph.tensors}


def _kinds(graph):
    return {t.name: t.kind for t in graph.tensors}


def _check_plannable(graph):
    assert not verify_graph(graph)  # neither errors nor warnings
    estimate = estimate_flops(graph)
    assert estimate.n_fallback == 0
    costs = roofline_costs(graph, preset("optane-2019"))
    assert costs.constants.shape == (len(graph.kernels), 2)
    assert np.all(np.isfinite(costs.constants))


def test_mlp_sizes_kinds_and_flops(tmp_path):
    graph = load(onnx_models.save(onnx_models.mlp(), tmp_path / "mlp.onnx"))
    assert graph.name == "mlp"
    assert _sizes(graph) == {
        "w1": 32 * 16 * F32, "b1": 32 * F32, "w2": 32 * 10 * F32, "b2": 10 * F32,
        "x": 8 * 16 * F32, "h": 8 * 32 * F32, "r": 8 * 32 * F32, "y": 8 * 10 * F32,
    }
    kinds = _kinds(graph)
    assert {n for n, k in kinds.items() if k is TensorKind.PARAMETER} == {"w1", "b1", "w2", "b2"}
    assert kinds["x"] is TensorKind.INPUT
    assert kinds["y"] is TensorKind.OUTPUT
    assert kinds["h"] is kinds["r"] is TensorKind.ACTIVATION
    assert [(k.name, k.op, k.inputs, k.outputs) for k in graph.kernels] == [
        ("fc1", "gemm", ("x", "w1", "b1"), ("h",)),
        ("relu", "relu", ("h",), ("r",)),
        ("fc2", "gemm", ("r", "w2", "b2"), ("y",)),
    ]
    # Gemm: 2 M N K multiply-adds + M N bias additions; Relu: one per element
    assert [k.flops for k in graph.kernels] == [
        2 * 8 * 16 * 32 + 8 * 32, 8 * 32, 2 * 8 * 32 * 10 + 8 * 10,
    ]
    _check_plannable(graph)


def test_cnn_sizes_constant_and_flops():
    graph = load(onnx_models.cnn())
    sizes, kinds = _sizes(graph), _kinds(graph)
    assert sizes["w"] == 4 * 3 * 3 * 3 * F32
    assert sizes["x"] == 2 * 3 * 8 * 8 * F32
    assert sizes["c"] == sizes["n"] == sizes["r"] == 2 * 4 * 8 * 8 * F32
    assert sizes["p"] == 2 * 4 * 4 * 4 * F32
    assert sizes["g"] == 2 * 4 * F32
    assert sizes["y"] == 2 * 4 * F32
    assert sizes["shape"] == 2 * 8  # two int64
    assert kinds["shape"] is TensorKind.CONSTANT
    assert kinds["mean"] is kinds["var"] is TensorKind.PARAMETER
    assert kinds["y"] is TensorKind.OUTPUT
    # the Constant node is no kernel; every other node is one, in order
    assert [k.op for k in graph.kernels] == [
        "conv", "batchnormalization", "relu", "maxpool", "globalaveragepool", "reshape",
    ]
    flops = {k.name: k.flops for k in graph.kernels}
    out = 2 * 4 * 8 * 8
    assert flops["conv"] == 2 * out * (3 * 3 * 3) + out  # + bias
    assert flops["bn"] == 2 * out
    assert flops["gap"] == 2 * 4 * 4 * 4
    assert flops["flatten"] == 0
    _check_plannable(graph)


def test_attention_block_shapes_and_flops():
    graph = load(onnx_models.attention())
    tensors = {t.name: t for t in graph.tensors}
    assert tensors["q"].shape == (2, 2, 5, 4)
    assert tensors["k"].shape == (2, 2, 4, 5)
    assert tensors["scores"].shape == (2, 2, 5, 5)
    assert tensors["y"].shape == (2, 5, 8)
    assert tensors["scores"].nbytes == tensors["probs"].nbytes == 2 * 2 * 5 * 5 * F32
    assert tensors["heads_shape"].nbytes == 4 * 8
    assert tensors["heads_shape"].dtype == "int64"
    flops = {k.name: k.flops for k in graph.kernels}
    assert flops["proj_q"] == 2 * (2 * 5) * 8 * 8
    assert flops["scores"] == 2 * (2 * 2 * 5 * 5) * 4
    assert flops["context"] == 2 * (2 * 2 * 5 * 4) * 5
    assert flops["softmax"] == 5 * (2 * 2 * 5 * 5)
    assert flops["perm_k"] == flops["split_q"] == 0
    _check_plannable(graph)


def test_conv_transpose_flops():
    graph = load(onnx_models.conv_transpose())
    assert graph.tensor("y").shape == (1, 2, 6, 6)
    # each of the 36 input elements is multiplied into a 2 x 2 x 2 patch: 288 multiply-adds
    assert graph.kernel("up").flops == 2 * 36 * (2 * 2 * 2)
    assert graph.kernel("up").op == "convtranspose"


def test_symbolic_batch_bound_through_dims(tmp_path):
    path = onnx_models.save(onnx_models.mlp("batch"), tmp_path / "mlp.onnx")
    graph = load(path, dims={"batch": 3})
    assert graph.tensor("x").shape == (3, 16)
    assert graph.tensor("h").nbytes == 3 * 32 * F32
    assert graph.tensor("y").nbytes == 3 * 10 * F32
    assert load(path, dims="batch=5").tensor("x").nbytes == 5 * 16 * F32
    assert load(path, dims=["batch=6"]).tensor("y").nbytes == 6 * 10 * F32
    assert load(path, batch_size=7).tensor("r").nbytes == 7 * 32 * F32
    # the caller's model is not modified by binding
    model = onnx_models.mlp("batch")
    load(model, dims={"batch": 2})
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_found_through_the_entry_point():
    frontend = get_frontend("onnx")
    assert frontend.unavailable_reason() is None
    graph = frontend.load(onnx_models.mlp(), name="named")
    assert graph.name == "named"


def test_custom_domain_op_kept_with_declared_shape():
    value_info = [onnx.helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 4])]
    model = onnx_models.with_nodes(
        [
            onnx.helper.make_node("FusedThing", ["x", "w"], ["h"], name="fused", domain="com.x"),
            onnx.helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        value_info=value_info, domains=("com.x",),
    )
    graph = load(model)
    assert graph.kernel("fused").op == "com.x::fusedthing"
    assert graph.kernel("fused").flops is None  # the cost model's fallback decides
    assert graph.tensor("h").nbytes == 4 * 4 * F32


def test_duplicate_inputs_and_unnamed_nodes():
    model = onnx_models.with_nodes([
        onnx.helper.make_node("Mul", ["x", "x"], ["s"]),
        onnx.helper.make_node("Add", ["s", "w"], ["y"]),
    ])
    graph = load(model)
    assert [(k.name, k.inputs) for k in graph.kernels] == [
        ("mul_0", ("x",)), ("add_1", ("s", "w")),
    ]


@pytest.mark.parametrize(
    ("elem_type", "shape", "nbytes", "dtype"),
    [
        (TensorProto.FLOAT16, (3, 5), 30, "float16"),
        (TensorProto.BFLOAT16, (3, 5), 30, "bfloat16"),
        (TensorProto.DOUBLE, (3, 5), 120, "float64"),
        (TensorProto.INT64, (3, 5), 120, "int64"),
        (TensorProto.BOOL, (3, 5), 15, "bool"),
        (TensorProto.UINT8, (3, 5), 15, "uint8"),
        (TensorProto.COMPLEX128, (3, 5), 240, "complex128"),
        (TensorProto.INT4, (3, 5), 8, "int4"),  # 15 nibbles, packed two per byte
        (TensorProto.FLOAT8E4M3FN, (3, 5), 15, "float8_e4m3fn"),
    ],
)
def test_element_sizes(elem_type, shape, nbytes, dtype):
    graph = load(onnx_models.identity(elem_type, list(shape)))
    assert graph.tensor("x").nbytes == graph.tensor("y").nbytes == nbytes
    assert graph.tensor("y").dtype == dtype


def test_every_onnx_element_type_is_mapped():
    names = set(TensorProto.DataType.keys()) - {"UNDEFINED", "STRING"}
    assert names <= set(ELEMENT_TYPES)


def test_unread_output_without_a_size_is_left_out(caplog):
    value_info = [onnx.helper.make_tensor_value_info("h", TensorProto.FLOAT, [4, 4])]
    model = onnx_models.with_nodes(
        [
            onnx.helper.make_node("Split2", ["x"], ["h", "scratch"], name="split", domain="com.x"),
            onnx.helper.make_node("Relu", ["h"], ["y"], name="relu"),
        ],
        value_info=value_info, domains=("com.x",),
    )
    graph = load(model)
    assert graph.kernel("split").outputs == ("h",)
    assert "leaving out 'scratch'" in caplog.text
