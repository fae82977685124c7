"""Floating-point operations of every kernel: given by the IR, else estimated per op kind.

An estimator takes the kernel's input and output tensors and returns its FLOPs,
or ``None`` when the tensors lack the shapes it needs. Op kinds are matched
after normalisation (lower case, namespace and a trailing ``_`` dropped, so
``aten::relu_`` is ``relu``) and through :data:`ALIASES`. Backward kernels follow
the convention of the IR's examples: the incoming gradient is the first input,
then the forward's inputs in their forward order.

A kernel whose op kind is unknown, or whose tensors lack the shapes its
estimator needs, gets the fallback: one flop per element written (elements from
the shape, else from ``nbytes`` and the dtype, else one per 4 bytes). Each op
kind that falls back is logged once per call of :func:`estimate_flops`, and the
result says which kernels fell back.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.ir import Graph, Tensor
from autotm_core.ir.tensor import DTYPE_NBYTES

logger = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Estimator = Callable[[Sequence[Tensor], Sequence[Tensor]], "float | None"]

FALLBACK_BYTES_PER_ELEMENT = 4
"""Element width assumed for a tensor with neither shape nor a known dtype."""


def numel(tensor: Tensor) -> float:
    """Elements of ``tensor``: from its shape, else its bytes over the dtype width (else 4)."""
    shape = tensor.shape
    if shape is not None:
        return float(math.prod(shape))
    return tensor.nbytes / DTYPE_NBYTES.get(tensor.dtype, FALLBACK_BYTES_PER_ELEMENT)  # type: ignore[arg-type]


def _written(outputs: Sequence[Tensor]) -> float:
    return sum(numel(t) for t in outputs)


def _read(inputs: Sequence[Tensor]) -> float:
    return sum(numel(t) for t in inputs)


def per_element_written(flops_per_element: float) -> Estimator:
    """``flops_per_element`` for every element the kernel writes (elementwise ops, optimizers)."""

    def estimate(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float:
        return flops_per_element * _written(outputs)

    return estimate


def per_element_of_largest(flops_per_element: float) -> Estimator:
    """``flops_per_element`` for every element of its largest tensor (norms, pooling, losses)."""

    def estimate(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float:
        return flops_per_element * max(numel(t) for t in (*inputs, *outputs))

    return estimate


def per_parameter_element(flops_per_element: float) -> Estimator:
    """``flops_per_element`` per element of its first output, the parameter (optimizer steps)."""

    def estimate(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
        return flops_per_element * numel(outputs[0]) if outputs else None

    return estimate


def _bias(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float:
    return numel(outputs[0]) if len(inputs) >= 3 and outputs else 0.0


def linear(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 M N K`` (+ ``M N`` for a bias), ``M N K = sqrt(elements(x) elements(w) elements(out))``.

    x is ``(M, K)``, w ``(K, N)`` or ``(N, K)``, out ``(M, N)``, leading dimensions
    flattened into M: the product of their elements is ``(M N K)^2``, so no shape is needed.
    """
    if len(inputs) < 2 or not outputs:
        return None
    mnk = math.sqrt(numel(inputs[0]) * numel(inputs[1]) * numel(outputs[0]))
    return 2.0 * mnk + _bias(inputs, outputs)


def linear_backward(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 M N K`` per matrix gradient written (inputs: grad_out, x, w); ``M N`` for a bias grad."""
    if len(inputs) < 3:
        return None
    grad, x, w = inputs[0], inputs[1], inputs[2]
    mnk = math.sqrt(numel(grad) * numel(x) * numel(w))
    return _matrix_grads(mnk, numel(grad), (numel(x), numel(w)), outputs)


def _matrix_grads(
    mnk: float, mn: float, sizes: tuple[float, float], outputs: Sequence[Tensor]
) -> float:
    """``2 mnk`` per output the size of x or w (a matrix gradient), ``mn`` for any other (bias)."""
    elements = [numel(t) for t in outputs]
    matrices = sum(1 for n in elements if n in sizes)
    bias = mn if matrices < len(elements) else 0.0
    return 2.0 * mnk * max(matrices, 1) + bias


def matmul(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(out) * K`` with ``K = a.shape[-1]`` (a ``(..., M, K)``); also bmm."""
    if not inputs or not outputs or not inputs[0].shape:
        return None
    return 2.0 * numel(outputs[0]) * inputs[0].shape[-1]


def matmul_backward(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(grad_out) * K`` per gradient written (inputs: grad_out, a (..., M, K), b)."""
    a_shape = inputs[1].shape if len(inputs) >= 3 else None
    if not a_shape:
        return None
    grad, a, b = inputs[0], inputs[1], inputs[2]
    return _matrix_grads(numel(grad) * a_shape[-1], numel(grad), (numel(a), numel(b)), outputs)


def conv(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(out) * Cin/groups * kh * kw``, weight (Cout, Cin/groups, kh, kw); + bias."""
    w_shape = inputs[1].shape if len(inputs) >= 2 and outputs else None
    if not w_shape or w_shape[0] == 0:
        return None
    return 2.0 * numel(outputs[0]) * (numel(inputs[1]) / w_shape[0]) + _bias(inputs, outputs)


def conv_backward(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """The forward's flops per gradient written (inputs: grad_out, x, w; grads of x, w, b out)."""
    w_shape = inputs[2].shape if len(inputs) >= 3 else None
    if not w_shape or w_shape[0] == 0:
        return None
    grad, x, w = inputs[0], inputs[1], inputs[2]
    forward = 2.0 * numel(grad) * (numel(w) / w_shape[0])
    return _matrix_grads(forward / 2.0, numel(grad), (numel(x), numel(w)), outputs)


def attention(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """Q (..., L, D), K (..., S, D): ``4 batch L S D`` (QK^T and PV) + ``5 batch L S`` (softmax)."""
    if len(inputs) < 3 or not inputs[0].shape or not inputs[1].shape:
        return None
    q, k = inputs[0].shape, inputs[1].shape
    if len(q) < 2 or len(k) < 2:
        return None
    scores = math.prod(q[:-1]) * k[-2]  # batch * heads * L * S
    return 4.0 * scores * q[-1] + 5.0 * scores


def attention_backward(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """Twice the forward's flops (inputs: grad_out, q, k, v)."""
    forward = attention(inputs[1:], outputs)
    return None if forward is None else 2.0 * forward


def memory_only(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float:
    """Zero: the op only moves data (copy, reshape, transpose, concatenation)."""
    return 0.0


ESTIMATORS: dict[str, Estimator] = {
    # dense algebra
    "linear": linear, "linear_backward": linear_backward,
    "matmul": matmul, "bmm": matmul,
    "matmul_backward": matmul_backward, "bmm_backward": matmul_backward,
    "conv2d": conv, "conv1d": conv, "conv3d": conv,
    "conv2d_backward": conv_backward, "conv1d_backward": conv_backward,
    "conv3d_backward": conv_backward,
    "attention": attention, "attention_backward": attention_backward,
    # elementwise, per element written
    "relu": per_element_written(1), "relu_backward": per_element_written(1),
    "add": per_element_written(1), "sub": per_element_written(1),
    "mul": per_element_written(1), "div": per_element_written(1),
    "add_backward": per_element_written(1), "mul_backward": per_element_written(1),
    "sigmoid": per_element_written(4), "sigmoid_backward": per_element_written(3),
    "tanh": per_element_written(4), "tanh_backward": per_element_written(3),
    "gelu": per_element_written(8), "gelu_backward": per_element_written(12),
    "silu": per_element_written(5), "silu_backward": per_element_written(8),
    "dropout": per_element_written(2), "dropout_backward": per_element_written(1),
    # normalisation, softmax, losses: per element of the largest tensor
    "batch_norm": per_element_of_largest(8), "batch_norm_backward": per_element_of_largest(12),
    "layer_norm": per_element_of_largest(8), "layer_norm_backward": per_element_of_largest(12),
    "softmax": per_element_of_largest(5), "softmax_backward": per_element_of_largest(3),
    "log_softmax": per_element_of_largest(5), "log_softmax_backward": per_element_of_largest(3),
    "cross_entropy": per_element_of_largest(5),
    "cross_entropy_backward": per_element_of_largest(5),
    "sum": per_element_of_largest(1), "mean": per_element_of_largest(1),
    # pooling: each input element is compared or added once
    "max_pool2d": per_element_of_largest(1), "avg_pool2d": per_element_of_largest(1),
    "max_pool2d_backward": per_element_of_largest(1),
    "avg_pool2d_backward": per_element_of_largest(1),
    "adaptive_avg_pool2d": per_element_of_largest(1),
    "adaptive_avg_pool2d_backward": per_element_of_largest(1),
    # embedding: a gather, and a scatter-add backward
    "embedding": per_element_written(1), "embedding_backward": per_element_of_largest(1),
    # optimizers, per element of the parameter (its first output, updated in place)
    "sgd": per_parameter_element(2), "sgd_momentum": per_parameter_element(3),
    "adam": per_parameter_element(10), "adamw": per_parameter_element(11),
    # data movement
    "copy": memory_only, "reshape": memory_only, "view": memory_only,
    "transpose": memory_only, "permute": memory_only, "concat": memory_only,
    "split": memory_only,
}
"""Estimator per (normalised) op kind; see docs/cost-models.md for the table and its sources."""

ALIASES: dict[str, str] = {
    "mm": "matmul", "gemm": "linear", "addmm": "linear", "dense": "linear",
    "conv": "conv2d", "convolution": "conv2d", "batchnorm": "batch_norm",
    "layernorm": "layer_norm", "maxpool": "max_pool2d", "avgpool": "avg_pool2d",
    "scaled_dot_product_attention": "attention", "sdpa": "attention",
    "multi_head_attention": "attention", "nll_loss": "cross_entropy", "cat": "concat",
    "contiguous": "copy", "clone": "copy",
}
"""Other names of the op kinds of :data:`ESTIMATORS` (``*_backward`` forms follow)."""


def normalise_op(op: str) -> str:
    """The key of ``op`` in :data:`ESTIMATORS` (which may not hold it)."""
    name = op.lower().rsplit("::", 1)[-1].rsplit(".", 1)[-1]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    base, suffix = name, ""
    if name.endswith("_backward"):
        base, suffix = name[: -len("_backward")], "_backward"
    return ALIASES.get(base, base) + suffix


@attrs.frozen(slots=True, eq=False)
class FlopsEstimate:
    """The FLOPs of every kernel and where each number came from."""

    flops: FloatArray
    """``(n_kernels,)`` floating-point operations of each kernel."""
    given: npt.NDArray[np.bool_]
    """``(n_kernels,)`` True where the IR gave :attr:`Kernel.flops`."""
    fallback_kernels: IntArray
    """Positions of the kernels that got the fallback (unknown op kind or missing shapes)."""
    fallback_ops: dict[str, int]
    """Number of kernels that fell back, by op kind as the IR writes it."""

    @property
    def n_fallback(self) -> int:
        """How many kernels got the fallback."""
        return len(self.fallback_kernels)


def fallback_flops(outputs: Sequence[Tensor]) -> float:
    """One flop per element written (per 4 bytes written when neither shape nor dtype is known)."""
    return _written(outputs)


def estimate_flops(graph: Graph) -> FlopsEstimate:
    """FLOPs of every kernel of ``graph``; logs one warning per op kind that falls back."""
    tensors, index = graph.tensors, graph.tensor_index
    values: list[float] = []
    fallback: list[int] = []
    estimators: dict[str, Estimator | None] = {}
    first_fallback: dict[str, int] = {}
    for k, kernel in enumerate(graph.kernels):
        if kernel.flops is not None:
            values.append(kernel.flops)
            continue
        op = kernel.op
        if op in estimators:
            estimator = estimators[op]
        else:
            estimator = estimators[op] = ESTIMATORS.get(normalise_op(op))
        outputs = [tensors[index[name]] for name in kernel.outputs]
        value = None
        if estimator is not None:
            value = estimator([tensors[index[name]] for name in kernel.inputs], outputs)
        if value is None:
            value = fallback_flops(outputs)
            fallback.append(k)
            first_fallback.setdefault(op, k)
        values.append(value)
    counts = Counter(graph.kernels[k].op for k in fallback)
    for op, first in first_fallback.items():
        why = "unknown op kind" if estimators[op] is None else "its tensors lack the shapes needed"
        logger.warning(
            "flops of op kind %r (%d kernel(s), first %r): %s; counting one flop per element "
            "written. Give the kernels' flops in the graph, or their tensors' shapes.",
            op, counts[op], graph.kernels[first].name, why,
        )
    return FlopsEstimate(
        flops=np.asarray(values, dtype=np.float64).reshape(len(graph.kernels)),
        given=np.fromiter((k.flops is not None for k in graph.kernels), dtype=np.bool_,
                          count=len(graph.kernels)),
        fallback_kernels=np.asarray(fallback, dtype=np.int64),
        fallback_ops=dict(counts),
    )
