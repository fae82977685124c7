"""FLOPs estimators against their formulas; the fallback warns once per op kind."""

from __future__ import annotations

import logging

import attrs
import pytest

from autotm_core import Graph, GraphBuilder, Kernel, Tensor, TensorKind
from autotm_core.costs import estimate_flops, normalise_op, numel, op_flops
from autotm_core.examples import build_example


def t(name: str, shape: tuple[int, ...] | None, *, nbytes: int | None = None,
      dtype: str | None = "float32") -> Tensor:
    size = nbytes if nbytes is not None else 4 * _prod(shape or ())
    return Tensor(name, size, TensorKind.ACTIVATION, shape, dtype)


def _prod(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


def flops(op: str, inputs: list[Tensor], outputs: list[Tensor]) -> float | None:
    return op_flops(op, inputs=inputs, outputs=outputs)


def test_linear_with_bias() -> None:
    x, w, b, out = t("x", (8, 16)), t("w", (32, 16)), t("b", (32,)), t("o", (8, 32))
    assert flops("linear", [x, w, b], [out]) == 2 * 8 * 16 * 32 + 8 * 32
    assert flops("linear", [x, w], [out]) == 2 * 8 * 16 * 32


def test_linear_needs_no_shapes() -> None:
    x, w, out = t("x", None, nbytes=4 * 2 * 4 * 16), t("w", None, nbytes=4 * 16 * 32), \
        t("o", None, nbytes=4 * 2 * 4 * 32)
    assert flops("addmm", [x, w], [out]) == pytest.approx(2 * 2 * 4 * 16 * 32)


def test_linear_backward_counts_each_gradient() -> None:
    g, x, w = t("g", (8, 32)), t("x", (8, 16)), t("w", (16, 32))
    dw, db, dx = t("dw", (16, 32)), t("db", (32,)), t("dx", (8, 16))
    mnk = 8 * 16 * 32
    assert flops("linear_backward", [g, x, w], [dw, db, dx]) == pytest.approx(4 * mnk + 8 * 32)
    assert flops("linear_backward", [g, x, w], [dw]) == pytest.approx(2 * mnk)


def test_bmm() -> None:
    a, b, out = t("a", (4, 8, 16)), t("b", (4, 16, 32)), t("o", (4, 8, 32))
    assert flops("bmm", [a, b], [out]) == 2 * 4 * 8 * 32 * 16
    mm = flops("aten::mm", [t("a", (8, 16)), t("b", (16, 32))], [t("o", (8, 32))])
    assert mm == 2 * 8 * 16 * 32


def test_conv2d_and_backward() -> None:
    x, w, out = t("x", (2, 3, 8, 8)), t("w", (6, 3, 3, 3)), t("o", (2, 6, 8, 8))
    forward = 2 * 2 * 6 * 8 * 8 * 3 * 3 * 3
    assert flops("conv2d", [x, w], [out]) == forward
    dx, dw = t("dx", (2, 3, 8, 8)), t("dw", (6, 3, 3, 3))
    assert flops("conv2d_backward", [out, x, w], [dx, dw]) == 2 * forward
    assert flops("conv2d_backward", [out, x, w], [dw]) == forward


def test_conv2d_without_weight_shape_falls_back() -> None:
    x, w, out = t("x", (2, 3, 8, 8)), t("w", None, nbytes=4 * 162), t("o", (2, 6, 8, 8))
    assert flops("conv2d", [x, w], [out]) is None


@pytest.mark.parametrize(
    ("op", "per_element"),
    [("relu", 1), ("add", 1), ("mul", 1), ("gelu", 8), ("sigmoid", 4), ("relu_backward", 1)],
)
def test_elementwise_per_element_written(op: str, per_element: int) -> None:
    a, b, out = t("a", (4, 5)), t("b", (5,)), t("o", (4, 5))
    assert flops(op, [a, b], [out]) == per_element * 20


@pytest.mark.parametrize(
    ("op", "per_element"),
    [("batch_norm", 8), ("layer_norm", 8), ("softmax", 5), ("cross_entropy", 5),
     ("max_pool2d", 1), ("avg_pool2d", 1), ("batch_norm_backward", 12)],
)
def test_per_element_of_largest_tensor(op: str, per_element: int) -> None:
    x, gamma, out = t("x", (2, 4, 6, 6)), t("g", (4,)), t("o", (2, 4, 3, 3))
    assert flops(op, [x, gamma], [out]) == per_element * 2 * 4 * 6 * 6


def test_attention() -> None:
    q, k, v = t("q", (2, 4, 16, 8)), t("k", (2, 4, 32, 8)), t("v", (2, 4, 32, 8))
    out = t("o", (2, 4, 16, 8))
    scores = 2 * 4 * 16 * 32
    assert flops("scaled_dot_product_attention", [q, k, v], [out]) == 4 * scores * 8 + 5 * scores
    backward = flops("attention_backward", [out, q, k, v], [q, k, v])
    assert backward == 2 * (4 * scores * 8 + 5 * scores)


@pytest.mark.parametrize(("op", "per_element"), [("adam", 10), ("sgd", 2), ("sgd_momentum", 3)])
def test_optimizers_per_parameter_element(op: str, per_element: int) -> None:
    p, g, m = t("p", (10, 3)), t("g", (10, 3)), t("m", (10, 3))
    assert flops(op, [p, g, m], [p, m]) == per_element * 30


def test_embedding_and_copies() -> None:
    table, ids, out = t("table", (100, 8)), t("ids", (4,), dtype="int64"), t("o", (4, 8))
    assert flops("embedding", [table, ids], [out]) == 32
    assert flops("reshape", [table], [out]) == 0
    assert flops("torch.cat", [table, out], [t("c", (104, 8))]) == 0


def test_normalise_op() -> None:
    assert normalise_op("aten::relu_") == "relu"
    assert normalise_op("Conv_backward") == "conv2d_backward"
    assert normalise_op("torch.nn.functional.linear") == "linear"
    assert normalise_op("__iadd__") == "__iadd__"


def test_numel_without_shape() -> None:
    assert numel(t("h", None, nbytes=64, dtype="float16")) == 32
    assert numel(t("h", None, nbytes=64, dtype=None)) == 16


def _unknown_ops_graph() -> Graph:
    b = GraphBuilder("unknown")
    x = b.tensor("x", shape=(4, 8), dtype="float32", kind=TensorKind.INPUT)
    h = x
    for i in range(3):
        out = b.tensor(f"h{i}", shape=(4, 8), dtype="float32")
        b.kernel(f"frob{i}", op="frobnicate", inputs=[h], outputs=[out])
        h = out
    raw = b.tensor("raw", nbytes=40, kind=TensorKind.OUTPUT)
    b.kernel("zap", op="zap", inputs=[h], outputs=[raw])
    b.kernel("relu", op="relu", inputs=[h], outputs=[b.tensor("r", shape=(4, 8), dtype="float16",
                                                              kind=TensorKind.OUTPUT)])
    return b.build()


def test_unknown_op_falls_back_and_warns_once_per_kind(caplog: pytest.LogCaptureFixture) -> None:
    graph = _unknown_ops_graph()
    with caplog.at_level(logging.WARNING, logger="autotm_core.costs.flops"):
        estimate = estimate_flops(graph)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "'frobnicate' (3 kernel(s), first 'frob0'): unknown op kind" in warnings[0].getMessage()
    assert "'zap'" in warnings[1].getMessage()
    assert estimate.fallback_ops == {"frobnicate": 3, "zap": 1}
    assert estimate.fallback_kernels.tolist() == [0, 1, 2, 3]
    assert estimate.n_fallback == 4
    # 32 elements written; 40 bytes with no shape nor dtype count as 10 elements.
    assert estimate.flops.tolist() == [32, 32, 32, 10, 32]
    assert not estimate.given.any()


def test_given_flops_are_used_as_they_are(caplog: pytest.LogCaptureFixture) -> None:
    graph = _unknown_ops_graph()
    graph = attrs.evolve(graph, kernels=[attrs.evolve(k, flops=7.0) for k in graph.kernels])
    estimate = estimate_flops(graph)
    assert estimate.flops.tolist() == [7.0] * 5
    assert estimate.given.all()
    assert estimate.n_fallback == 0
    assert not caplog.records


def test_known_op_without_shapes_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    tensors = [Tensor("x", 64, TensorKind.INPUT), Tensor("w", 64, TensorKind.PARAMETER),
               Tensor("y", 64, TensorKind.OUTPUT)]
    graph = Graph("g", tensors, [Kernel("c", "conv2d", ["x", "w"], ["y"])])
    estimate = estimate_flops(graph)
    assert estimate.fallback_ops == {"conv2d": 1}
    assert estimate.flops.tolist() == [16.0]
    assert "shapes" in caplog.records[0].getMessage()


@pytest.mark.parametrize("example", ["mlp", "cnn"])
def test_examples_need_no_fallback(example: str, caplog: pytest.LogCaptureFixture) -> None:
    graph = build_example(example)
    stripped = attrs.evolve(graph, kernels=[attrs.evolve(k, flops=None) for k in graph.kernels])
    estimate = estimate_flops(stripped)
    assert estimate.n_fallback == 0
    assert not caplog.records
    assert (estimate.flops > 0).all()
