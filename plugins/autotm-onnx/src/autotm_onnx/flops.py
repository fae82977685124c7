"""Floating-point operations of ONNX nodes (default domain), reusing autotm-core's estimators.

Dense algebra (MatMul, Gemm, Conv) uses :mod:`autotm_core.costs.flops` directly;
ConvTranspose, inference-time normalisation and ONNX's many elementwise ops are
added here. An op this table does not know keeps ``flops=None``, and the cost
model then applies its documented fallback (one flop per element written).
"""

from __future__ import annotations

from collections.abc import Sequence

from autotm_core.costs.flops import (
    ESTIMATORS,
    Estimator,
    conv,
    linear,
    matmul,
    memory_only,
    normalise_op,
    numel,
    per_element_of_largest,
    per_element_written,
)
from autotm_core.ir import Tensor


def conv_transpose(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(x) * Cout/groups * kh * kw``, weight ``(Cin, Cout/groups, kh, kw)``; + bias.

    Every input element is multiplied into a ``Cout/groups x kh x kw`` patch of the output.
    """
    w_shape = inputs[1].shape if len(inputs) >= 2 and outputs else None
    if not w_shape or w_shape[0] == 0:
        return None
    bias = numel(outputs[0]) if len(inputs) >= 3 else 0.0
    return 2.0 * numel(inputs[0]) * (numel(inputs[1]) / w_shape[0]) + bias


_ONE = per_element_written(1)
_FEW = per_element_written(4)  # transcendental functions: a few flops per element

ONNX_ESTIMATORS: dict[str, Estimator] = {
    "matmul": matmul, "matmulinteger": matmul, "gemm": linear,
    "conv": conv, "convinteger": conv, "convtranspose": conv_transpose,
    # inference-time normalisation: a per-channel scale and shift (statistics are given)
    "batchnormalization": per_element_written(2),
    "instancenormalization": per_element_of_largest(8),
    "groupnormalization": per_element_of_largest(8),
    "layernormalization": per_element_of_largest(8),
    "lpnormalization": per_element_of_largest(3),
    # pooling and reductions: each input element is read and combined once
    "maxpool": per_element_of_largest(1), "averagepool": per_element_of_largest(1),
    "lppool": per_element_of_largest(2), "globalaveragepool": per_element_of_largest(1),
    "globalmaxpool": per_element_of_largest(1), "globallppool": per_element_of_largest(2),
    **{op: per_element_of_largest(1) for op in (
        "reducesum", "reducemean", "reducemax", "reducemin", "reduceprod", "reducel1",
        "argmax", "argmin",
    )},
    **{op: per_element_of_largest(2) for op in (
        "reducel2", "reducesumsquare", "reducelogsum", "reducelogsumexp",
    )},
    # elementwise, one flop per element written
    **{op: _ONE for op in (
        "add", "sub", "mul", "div", "neg", "abs", "relu", "leakyrelu", "prelu", "max", "min",
        "sum", "mean", "clip", "sign", "floor", "ceil", "round", "mod", "equal", "less",
        "lessorequal", "greater", "greaterorequal", "and", "or", "xor", "not", "where",
        "reciprocal", "thresholdedrelu", "resize", "upsample", "shrink", "isnan", "isinf",
        "bitshift",
        "bitwiseand", "bitwiseor", "bitwisexor", "bitwisenot",
    )},
    **{op: _FEW for op in (
        "exp", "log", "sqrt", "pow", "sigmoid", "tanh", "erf", "elu", "selu", "celu",
        "softplus", "softsign", "hardsigmoid", "hardswish", "mish", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    )},
    "gelu": per_element_written(8),
    "softmax": per_element_of_largest(5), "logsoftmax": per_element_of_largest(5),
    "hardmax": per_element_of_largest(1),
    "dropout": memory_only,  # the identity at inference
    "quantizelinear": per_element_written(2), "dequantizelinear": per_element_written(2),
    "cast": memory_only,
    # data movement only
    **{op: memory_only for op in (
        "identity", "reshape", "flatten", "squeeze", "unsqueeze", "transpose", "concat",
        "split", "slice", "gather", "gatherelements", "gathernd", "scatter",
        "scatterelements", "scatternd", "expand", "tile", "pad", "shape", "size",
        "constantofshape", "range", "depthtospace", "spacetodepth",
        "onehot", "eyelike", "trilu", "compress", "reversesequence",
    )},
}
"""Estimator per lower-cased ONNX op type (default domain)."""


def node_flops(op: str, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """FLOPs of a node of kernel op kind ``op``, tensors in ONNX's positional order.

    ``None`` for ops of custom domains (``domain::op``) and ops neither table knows.
    """
    if "::" in op:
        return None
    estimator = ONNX_ESTIMATORS.get(op) or ESTIMATORS.get(normalise_op(op))
    return None if estimator is None else estimator(inputs, outputs)
