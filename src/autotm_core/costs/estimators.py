"""FLOP estimators: a kernel's floating-point operations from the tensors it reads and writes.

An estimator takes the kernel's input and output tensors, in the IR's order,
and returns its FLOPs, or ``None`` when the tensors lack the shapes it needs.
Backward kernels follow the convention of the IR's examples: the incoming
gradient is the first input, then the forward's inputs in their forward order.
Elements of a tensor come from its shape, else from ``nbytes`` over its dtype's
width, else one per 4 bytes. Which op uses which estimator is the op table's
business (:mod:`autotm_core.costs.ops`).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence

import attrs

from autotm_core.ir import DTYPE_NBYTES, Tensor

Estimator = Callable[[Sequence[Tensor], Sequence[Tensor]], "float | None"]
"""``estimator(inputs, outputs)``: the FLOPs of a kernel, or ``None`` when shapes are missing."""

FALLBACK_BYTES_PER_ELEMENT = 4
"""Element width assumed for a tensor with neither shape nor a known dtype."""


def numel(tensor: Tensor) -> float:
    """Elements of ``tensor``: from its shape, else its bytes over the dtype width (else 4)."""
    shape = tensor.shape
    if shape is not None:
        return float(math.prod(shape))
    return tensor.nbytes / DTYPE_NBYTES.get(tensor.dtype, FALLBACK_BYTES_PER_ELEMENT)  # type: ignore[arg-type]


def written(outputs: Sequence[Tensor]) -> float:
    """Elements the kernel writes: the fallback's count, one flop for each."""
    return sum(numel(t) for t in outputs)


class Basis(enum.Enum):
    """Which elements a per-element count counts."""

    WRITTEN = "written"
    """Every element the kernel writes (elementwise ops, activations)."""
    LARGEST = "largest"
    """The elements of the largest tensor it touches (normalisation, pooling, reductions)."""
    PARAMETER = "parameter"
    """The elements of its first output, the parameter it updates in place (optimizer steps)."""


@attrs.frozen(slots=True)
class PerElement:
    """An estimator counting ``flops_per_element`` for each element of :attr:`basis`."""

    flops_per_element: float = attrs.field(converter=float)
    """FLOPs per element counted (0 for ops that only move data)."""
    basis: Basis
    """Which elements are counted."""

    def __call__(self, inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
        """The estimate; ``None`` when the parameter (:attr:`Basis.PARAMETER`) is missing."""
        if self.basis is Basis.WRITTEN:
            return self.flops_per_element * written(outputs)
        if self.basis is Basis.LARGEST:
            return self.flops_per_element * max((numel(t) for t in (*inputs, *outputs)),
                                                default=0.0)
        return self.flops_per_element * numel(outputs[0]) if outputs else None


MEMORY_ONLY = PerElement(0, Basis.WRITTEN)
"""Zero: the op only moves data (copy, reshape, transpose, concatenation)."""


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


def _per_weight_row(weight: Tensor) -> float | None:
    """Elements of one leading slice of a convolution weight (``None`` without its shape)."""
    shape = weight.shape
    return None if not shape or shape[0] == 0 else numel(weight) / shape[0]


def conv(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(out) * Cin/groups * kh * kw``, weight (Cout, Cin/groups, kh, kw); + bias."""
    per_output = _per_weight_row(inputs[1]) if len(inputs) >= 2 and outputs else None
    if per_output is None:
        return None
    return 2.0 * numel(outputs[0]) * per_output + _bias(inputs, outputs)


def conv_backward(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """The forward's flops per gradient written (inputs: grad_out, x, w; grads of x, w, b out)."""
    per_output = _per_weight_row(inputs[2]) if len(inputs) >= 3 else None
    if per_output is None:
        return None
    grad, x, w = inputs[0], inputs[1], inputs[2]
    forward = 2.0 * numel(grad) * per_output
    return _matrix_grads(forward / 2.0, numel(grad), (numel(x), numel(w)), outputs)


def conv_transpose(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> float | None:
    """``2 * elements(x) * Cout/groups * kh * kw``, weight ``(Cin, Cout/groups, kh, kw)``; + bias.

    Every input element is multiplied into a ``Cout/groups x kh x kw`` patch of the output.
    """
    per_input = _per_weight_row(inputs[1]) if len(inputs) >= 2 and outputs else None
    if per_input is None:
        return None
    return 2.0 * numel(inputs[0]) * per_input + _bias(inputs, outputs)


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
