"""The op table: every op kind autotm-core knows, its spellings, and how to count its FLOPs.

One :class:`OpInfo` per op: its normalised name, the other spellings graphs
use for it (the zoo's, torch/ATen's, ...), the ONNX op types that are it, and
its FLOP estimator (:mod:`autotm_core.costs.estimators`). The cost model, the
zoo and the ONNX and torch frontends all look ops up here, and nowhere else.

Two dialects of op names:

- :attr:`Dialect.IR`, the names kernels carry in graphs (the zoo's, torch's,
  a graph file's). A name is normalised first (:func:`normalise_op`): lower
  case, namespace dropped (``aten::``, ``torch.nn.functional.``), a trailing
  ``_`` (in-place) dropped, aliases mapped, and ``<op>_backward`` kept as a
  suffix, so that a backward kernel is found through its op's aliases
  (``Conv_backward`` is ``conv2d_backward``).
- :attr:`Dialect.ONNX`, the lower-cased op types of ONNX's default domain (the
  ONNX frontend's kernel ops). They are looked up among the entries' ``onnx``
  spellings first, then as IR names; an op of another domain (``domain::op``)
  is unknown.

Some ops are known under their ONNX op types only (``onnx_only``): counted in
ONNX graphs, but not in the IR dialect, where torch graphs spell the same
names (``aten::sqrt``, ``aten::neg``) and count them by the fallback, one flop
per element written. docs/cost-models.md lists the table.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

import attrs

from autotm_core.costs.estimators import (
    MEMORY_ONLY,
    Basis,
    Estimator,
    PerElement,
    attention,
    attention_backward,
    conv,
    conv_backward,
    conv_transpose,
    linear,
    linear_backward,
    matmul,
    matmul_backward,
)
from autotm_core.errors import UsageError
from autotm_core.ir import Tensor


class Dialect(enum.Enum):
    """Whose spelling of op kinds a name is."""

    IR = "ir"
    """Kernel ops of graphs: the zoo's, torch/ATen's, a graph file's (normalised first)."""
    ONNX = "onnx"
    """Lower-cased ONNX op types (``domain::op`` outside the default domain)."""


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class OpInfo:
    """One op kind: its names and how its FLOPs are counted."""

    name: str
    """Normalised name, unique in the table (``conv2d``, ``relu_backward``)."""
    flops: Estimator
    """FLOPs of a kernel of this op from its input and output tensors (None: shapes missing)."""
    aliases: tuple[str, ...] = attrs.field(default=(), converter=_names)
    """Other IR spellings, normalised (lower case, no namespace): ``mm``, ``addmm``, ``cat``."""
    onnx: tuple[str, ...] = attrs.field(default=(), converter=_names)
    """ONNX op types (lower case) that are this op, besides :attr:`name` and :attr:`aliases`."""
    onnx_only: bool = False
    """Known under :attr:`onnx` spellings only: :attr:`name` is no IR spelling (module doc)."""


def _op(name: str, flops: Estimator, *, backward: Estimator | None = None,
        aliases: Sequence[str] = (), onnx: Sequence[str] = ()) -> list[OpInfo]:
    """An op, and its ``<name>_backward`` when ``backward`` counts it."""
    ops = [OpInfo(name, flops, aliases=aliases, onnx=onnx)]
    if backward is not None:
        ops.append(OpInfo(f"{name}_backward", backward))
    return ops


def _onnx_only(flops: Estimator, *op_types: str) -> list[OpInfo]:
    return [OpInfo(op_type, flops, onnx=(op_type,), onnx_only=True) for op_type in op_types]


def _written(flops: float) -> PerElement:
    return PerElement(flops, Basis.WRITTEN)


def _largest(flops: float) -> PerElement:
    return PerElement(flops, Basis.LARGEST)


def _parameter(flops: float) -> PerElement:
    return PerElement(flops, Basis.PARAMETER)


OPS: tuple[OpInfo, ...] = (
    # dense algebra
    *_op("linear", linear, backward=linear_backward, aliases=("gemm", "addmm", "dense")),
    *_op("matmul", matmul, backward=matmul_backward, aliases=("mm", "bmm"),
         onnx=("matmulinteger",)),
    *_op("conv2d", conv, backward=conv_backward, aliases=("conv", "convolution"),
         onnx=("convinteger",)),
    *_op("conv1d", conv, backward=conv_backward),
    *_op("conv3d", conv, backward=conv_backward),
    *_op("attention", attention, backward=attention_backward,
         aliases=("scaled_dot_product_attention", "sdpa", "multi_head_attention")),
    # elementwise, per element written; ONNX's n-ary Sum and Mean add once per element written
    *_op("relu", _written(1), backward=_written(1)),
    *_op("add", _written(1), backward=_written(1), onnx=("sum", "mean")),
    *_op("sub", _written(1)),
    *_op("mul", _written(1), backward=_written(1)),
    *_op("div", _written(1)),
    *_op("sigmoid", _written(4), backward=_written(3)),
    *_op("tanh", _written(4), backward=_written(3)),
    *_op("gelu", _written(8), backward=_written(12)),
    *_op("silu", _written(5), backward=_written(8)),
    *_op("dropout", _written(2), backward=_written(1)),
    # normalisation, softmax, losses, reductions: per element of the largest tensor
    *_op("batch_norm", _largest(8), backward=_largest(12), aliases=("batchnorm",)),
    *_op("layer_norm", _largest(8), backward=_largest(12), aliases=("layernorm",),
         onnx=("layernormalization",)),
    *_op("softmax", _largest(5), backward=_largest(3), aliases=("causal_softmax",)),
    *_op("log_softmax", _largest(5), backward=_largest(3), onnx=("logsoftmax",)),
    *_op("cross_entropy", _largest(5), backward=_largest(5), aliases=("nll_loss",)),
    *_op("sum", _largest(1), aliases=("reduce_sum",), onnx=("reducesum",)),
    *_op("mean", _largest(1), onnx=("reducemean",)),
    # pooling: each input element is compared or added once
    *_op("max_pool2d", _largest(1), backward=_largest(1), aliases=("maxpool",)),
    *_op("avg_pool2d", _largest(1), backward=_largest(1), aliases=("avgpool",),
         onnx=("averagepool",)),
    *_op("adaptive_avg_pool2d", _largest(1), backward=_largest(1)),
    *_op("global_avg_pool", _largest(1), backward=_largest(1), onnx=("globalaveragepool",)),
    # embedding: a gather, and a scatter-add backward
    *_op("embedding", _written(1), backward=_largest(1)),
    # optimizers, per element of the parameter (its first output, updated in place)
    *_op("sgd", _parameter(2), aliases=("sgd_update",)),
    *_op("sgd_momentum", _parameter(3)),
    *_op("adam", _parameter(10)),
    *_op("adamw", _parameter(11)),
    # data movement; ONNX's inference-time Dropout is the identity
    *_op("copy", MEMORY_ONLY, aliases=("contiguous", "clone"),
         onnx=("identity", "dropout", "cast")),
    *_op("reshape", MEMORY_ONLY, onnx=("flatten", "squeeze", "unsqueeze")),
    *_op("view", MEMORY_ONLY),
    *_op("transpose", MEMORY_ONLY),
    *_op("permute", MEMORY_ONLY),
    *_op("concat", MEMORY_ONLY, backward=MEMORY_ONLY, aliases=("cat",)),
    *_op("split", MEMORY_ONLY),
    # known to the ONNX frontend only
    *_onnx_only(conv_transpose, "convtranspose"),
    # inference-time batch normalisation: a per-channel scale and shift (statistics are given)
    *_onnx_only(_written(2), "batchnormalization", "quantizelinear", "dequantizelinear"),
    *_onnx_only(_largest(8), "instancenormalization", "groupnormalization"),
    *_onnx_only(_largest(3), "lpnormalization"),
    *_onnx_only(_largest(1), "globalmaxpool", "reducemax", "reducemin", "reduceprod",
                "reducel1", "argmax", "argmin", "hardmax"),
    *_onnx_only(_largest(2), "lppool", "globallppool", "reducel2", "reducesumsquare",
                "reducelogsum", "reducelogsumexp"),
    *_onnx_only(_written(1), "neg", "abs", "leakyrelu", "prelu", "max", "min", "clip", "sign",
                "floor", "ceil", "round", "mod", "equal", "less", "lessorequal", "greater",
                "greaterorequal", "and", "or", "xor", "not", "where", "reciprocal",
                "thresholdedrelu", "resize", "upsample", "shrink", "isnan", "isinf", "bitshift",
                "bitwiseand", "bitwiseor", "bitwisexor", "bitwisenot"),
    # transcendental functions: a few flops per element
    *_onnx_only(_written(4), "exp", "log", "sqrt", "pow", "erf", "elu", "selu", "celu",
                "softplus", "softsign", "hardsigmoid", "hardswish", "mish", "sin", "cos", "tan",
                "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"),
    *_onnx_only(MEMORY_ONLY, "slice", "gather", "gatherelements", "gathernd", "scatter",
                "scatterelements", "scatternd", "expand", "tile", "pad", "shape", "size",
                "constantofshape", "range", "depthtospace", "spacetodepth", "onehot", "eyelike",
                "trilu", "compress", "reversesequence"),
)
"""Every op kind, in the order docs/cost-models.md lists them."""

_IR_OPS: dict[str, OpInfo] = {op.name: op for op in OPS if not op.onnx_only}
_CANONICAL: dict[str, str] = {alias: op.name for op in _IR_OPS.values() for alias in op.aliases}
_ONNX_OPS: dict[str, OpInfo] = {op_type: op for op in OPS for op_type in op.onnx}


def normalise_op(op: str) -> str:
    """The IR name ``op`` stands for: its entry's :attr:`OpInfo.name` when the table has one."""
    name = op.lower().rsplit("::", 1)[-1].rsplit(".", 1)[-1]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    base, suffix = name, ""
    if name.endswith("_backward"):
        base, suffix = name[: -len("_backward")], "_backward"
    return _CANONICAL.get(base, base) + suffix


def op_info(op: str, *, dialect: Dialect = Dialect.IR) -> OpInfo | None:
    """The entry of op kind ``op`` spelled in ``dialect``, or ``None`` when the table lacks it."""
    if dialect is Dialect.ONNX:
        if "::" in op:
            return None
        return _ONNX_OPS.get(op) or _IR_OPS.get(normalise_op(op))
    return _IR_OPS.get(normalise_op(op))


def op_flops(op: str, *, inputs: Sequence[Tensor], outputs: Sequence[Tensor],
             dialect: Dialect = Dialect.IR) -> float | None:
    """FLOPs of a kernel of op kind ``op`` on these tensors (IR order: see the estimators).

    ``None`` when the table does not know the op, or its estimator lacks a shape it needs.
    """
    info = op_info(op, dialect=dialect)
    return None if info is None else info.flops(inputs, outputs)


def flops_per_element(op: str) -> float:
    """FLOPs per element of IR op ``op``, whose estimator counts per element (e.g. ``gelu``: 8).

    For frontends that count elements themselves, as the zoo does from its shapes.
    """
    info = op_info(op)
    if info is None or not isinstance(info.flops, PerElement):
        raise UsageError(
            f"op kind {op!r} has no per-element FLOP count in the op table",
            hint="count its FLOPs with op_flops(op, inputs=..., outputs=...), or add it to "
            "autotm_core.costs.ops.OPS",
        )
    return info.flops.flops_per_element
