"""The op table: one entry per op, every spelling resolving to one entry, both dialects."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from autotm_core import Tensor, TensorKind, UsageError
from autotm_core.costs import (
    OPS,
    Dialect,
    PerElement,
    flops_per_element,
    normalise_op,
    op_flops,
    op_info,
)


def t(name: str, shape: tuple[int, ...]) -> Tensor:
    return Tensor(name, 4 * math.prod(shape), TensorKind.ACTIVATION, shape, "float32")


def _repeated(names: list[str]) -> list[str]:
    return [name for name, count in Counter(names).items() if count > 1]


def test_every_spelling_names_one_op() -> None:
    ir = [op for op in OPS if not op.onnx_only]
    assert not _repeated([op.name for op in OPS])
    assert not _repeated([name for op in ir for name in (op.name, *op.aliases)])
    assert not _repeated([op_type for op in OPS for op_type in op.onnx])


@pytest.mark.parametrize("op", [op for op in OPS if not op.onnx_only], ids=lambda op: op.name)
def test_aliases_normalise_to_their_op(op) -> None:
    for spelling in (op.name, *op.aliases):
        assert normalise_op(spelling) == op.name
        assert normalise_op(f"aten::{spelling}_") == op.name
        assert op_info(spelling) is op
    for op_type in op.onnx:
        assert op_info(op_type, dialect=Dialect.ONNX) is op


def test_backward_is_found_through_the_ops_aliases() -> None:
    assert op_info("Conv_backward") is op_info("conv2d_backward")
    assert normalise_op("aten::nll_loss_backward") == "cross_entropy_backward"
    assert normalise_op("bmm_backward") == "matmul_backward"


def test_onnx_only_ops_are_unknown_in_the_ir_dialect() -> None:
    # torch graphs spell these too (aten::sqrt in Adam): they keep the fallback there
    for op in ("sqrt", "aten::sqrt", "neg", "batchnormalization", "convtranspose"):
        assert op_info(op) is None
    assert op_info("sqrt", dialect=Dialect.ONNX) is not None


def test_onnx_meanings_come_first() -> None:
    x, y = t("x", (4, 5)), t("y", (4, 5))
    # Dropout at inference is the identity; in a training graph it masks and scales
    assert op_flops("dropout", inputs=[x], outputs=[y], dialect=Dialect.ONNX) == 0
    assert op_flops("dropout", inputs=[x], outputs=[y]) == 2 * 20
    # Sum and Mean of ONNX are n-ary and elementwise; sum and mean of torch reduce
    assert op_info("sum", dialect=Dialect.ONNX) is op_info("add")
    assert op_info("sum") is op_info("reduce_sum")
    # ONNX falls back to the IR spellings (gemm is linear) and knows no other domain
    assert op_info("gemm", dialect=Dialect.ONNX) is op_info("linear")
    assert op_info("com.x::relu", dialect=Dialect.ONNX) is None


def test_conv_transpose() -> None:
    x, w, b, out = t("x", (1, 4, 3, 3)), t("w", (4, 2, 2, 2)), t("b", (2,)), t("y", (1, 2, 6, 6))
    forward = 2 * (4 * 3 * 3) * (2 * 2 * 2)
    assert op_flops("convtranspose", inputs=[x, w], outputs=[out], dialect=Dialect.ONNX) == forward
    with_bias = op_flops("convtranspose", inputs=[x, w, b], outputs=[out], dialect=Dialect.ONNX)
    assert with_bias == forward + 2 * 6 * 6


def test_unknown_op_has_no_flops() -> None:
    assert op_info("frobnicate") is None
    assert op_flops("frobnicate", inputs=[], outputs=[t("y", (2,))]) is None


@pytest.mark.parametrize(
    ("op", "per_element"),
    [("gelu", 8), ("gelu_backward", 12), ("batch_norm", 8), ("causal_softmax", 5),
     ("reduce_sum", 1), ("sgd_update", 2), ("concat", 0)],
)
def test_flops_per_element(op: str, per_element: float) -> None:
    assert flops_per_element(op) == per_element
    assert isinstance(op_info(op).flops, PerElement)  # type: ignore[union-attr]


@pytest.mark.parametrize("op", ["linear", "frobnicate", "neg"])
def test_flops_per_element_refuses_other_ops(op: str) -> None:
    with pytest.raises(UsageError, match=repr(op)):
        flops_per_element(op)
