"""Bad input: one clear AutotmError each, naming what is wrong and saying what to do."""

from __future__ import annotations

import onnx
import pytest
from autotm_core.errors import AutotmError, FormatError, GraphError, UsageError
from onnx import TensorProto, helper

import onnx_models
from autotm_onnx import OnnxFrontend, load
from autotm_onnx.convert import convert_model
from autotm_onnx.reading import parse_model


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        load(tmp_path / "absent.onnx")
    with pytest.raises(FormatError, match="not a file"):
        load(tmp_path)


def test_not_a_path():
    with pytest.raises(FormatError, match=r"path or an onnx\.ModelProto, not int"):
        load(42)


@pytest.mark.parametrize("content", [b"", b"hello, this is text\n", b"\x08\x07\x12\x05onnx\x1a"])
def test_not_an_onnx_protobuf(tmp_path, content):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=r"bad\.onnx: not an ONNX model") as info:
        load(path)
    assert info.value.hint


def test_every_truncation_is_a_clear_error(tmp_path):
    data = onnx_models.mlp().SerializeToString()
    accepted = []
    for size in range(len(data)):
        try:
            convert_model(parse_model(data[:size], where="cut"), name="cut", dims={})
        except (FormatError, GraphError):
            continue
        accepted.append(size)
    assert accepted == []
    path = tmp_path / "cut.onnx"
    for size in (1, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:size])
        with pytest.raises(FormatError, match=r"cut\.onnx: not an ONNX model"):
            load(path)


def test_opset_newer_than_onnx_knows():
    model = onnx_models.mlp()
    model.opset_import[0].version = 1000
    with pytest.raises(GraphError, match="opset 1000") as info:
        load(model)
    assert "upgrade onnx" in info.value.hint


def test_op_missing_from_the_opset():
    model = onnx_models.with_nodes([helper.make_node("Gelu", ["x"], ["y"], name="act")], opset=17)
    message = r"node 'act' \(Gelu\): op 'Gelu' does not exist in opset 17"
    with pytest.raises(GraphError, match=message):
        load(model)


def test_shape_inference_rejects_incompatible_shapes():
    model = onnx_models.with_nodes([
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Reshape", ["h", "w"], ["y"], name="bad_reshape"),  # float shape
    ])
    with pytest.raises(GraphError, match=r"shape inference rejects the model.*bad_reshape"):
        load(model)


def test_nodes_out_of_topological_order():
    model = onnx_models.with_nodes([
        helper.make_node("Relu", ["h"], ["y"], name="relu"),
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
    ])
    with pytest.raises(GraphError, match=r"node 'relu' \(Relu\) reads value 'h' before node 'mm'"):
        load(model)


def test_value_written_twice():
    model = onnx_models.with_nodes([
        helper.make_node("Relu", ["x"], ["y"], name="a"),
        helper.make_node("Relu", ["x"], ["y"], name="b"),
    ])
    with pytest.raises(GraphError, match="writes value 'y', already written by node 'a'"):
        load(model)


def test_subgraphs_are_refused():
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["out"])], "branch", [],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 4])],
    )
    model = onnx_models.with_nodes([
        helper.make_node("ReduceSum", ["x"], ["s"], name="total", keepdims=0),
        helper.make_node("Greater", ["s", "s"], ["c"], name="cmp"),
        helper.make_node("If", ["c"], ["y"], name="branchy", then_branch=branch,
                         else_branch=branch),
    ])
    with pytest.raises(GraphError, match=r"node 'branchy' \(If\) holds a subgraph") as info:
        load(model)
    assert "control flow" in str(info.value)


def test_unbound_symbolic_dimension_names_value_and_dim():
    message = "value 'x' has the unbound symbolic dimension 'batch'"
    with pytest.raises(GraphError, match=message) as e:
        load(onnx_models.mlp("batch"))
    assert "--dim batch=" in e.value.hint


def test_data_dependent_shape_is_named():
    model = onnx_models.with_nodes([
        helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
        helper.make_node("Cast", ["nz"], ["y"], name="cast", to=TensorProto.FLOAT),
    ])
    message = "value 'nz': shape inference could not compute dimension 1"
    with pytest.raises(GraphError, match=message):
        load(model)


def test_untyped_custom_op_output_is_named():
    model = onnx_models.with_nodes(
        [helper.make_node("Mystery", ["x"], ["m"], name="m", domain="com.x"),
         helper.make_node("Relu", ["m"], ["y"], name="relu")],
        domains=("com.x",),
    )
    with pytest.raises(GraphError, match="value 'm' has no type"):
        load(model)


def test_string_tensors_are_refused():
    with pytest.raises(GraphError, match="value 'x' is a string tensor"):
        load(onnx_models.identity(TensorProto.STRING, [2]))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dims": {"bacth": 2}}, "no symbolic dimension 'bacth'.*'batch'"),
        ({"dims": "batch"}, "'batch' is not NAME=SIZE"),
        ({"dims": {"batch": 0}}, "size 0 must be a whole number >= 1"),
        ({"dims": "batch=many"}, "size 'many' is not a whole number"),
        ({"dims": 3}, "must map dimension names to sizes"),
        ({"batch_size": 2, "dims": {"batch": 3}}, "bound to 3 and to --batch-size 2"),
        ({"mode": "train"}, "no option 'mode'"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(UsageError, match=message):
        OnnxFrontend().load(onnx_models.mlp("batch"), **options)


def test_batch_size_needs_a_symbolic_leading_dimension():
    with pytest.raises(UsageError, match=r"found: none") as info:
        load(onnx_models.mlp(), batch_size=2)
    assert "--dim" in info.value.hint


def test_unavailable_without_onnx(monkeypatch):
    import autotm_onnx.frontend as frontend_module

    real = frontend_module.importlib.util.find_spec
    monkeypatch.setattr(frontend_module.importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnx" else real(name, *a))
    frontend = OnnxFrontend()
    assert "pip install onnx" in frontend.unavailable_reason()
    with pytest.raises(AutotmError, match="pip install onnx"):
        frontend.load("model.onnx")


def test_errors_do_not_leak_onnx_exceptions(tmp_path):
    """A model saved by onnx but semantically empty still gives an AutotmError."""
    model = onnx.ModelProto(ir_version=8)
    path = tmp_path / "empty.onnx"
    onnx.save(model, str(path))
    with pytest.raises(FormatError, match="no graph"):
        load(path)
