"""Layers at a framework's kernel granularity, recorded on a :class:`~autotm_core.zoo.tape.Tape`.

Each function appends one forward kernel and declares its backward kernels:
what they read (what a framework saves for backward) and which gradients they
write. FLOPs follow docs/zoo.md: 2 x multiply-accumulates for convolutions and
matrix products (and pooling windows) counted from the shapes here; per-element
counts come from the op table (:func:`autotm_core.costs.flops_per_element`). Layouts
are NCHW for images and (batch, sequence, features) for token streams; views
(flatten, head split) cost no kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from autotm_core.costs.ops import flops_per_element
from autotm_core.errors import GraphError
from autotm_core.zoo.tape import Grad, Tape, Value

_STATS_DTYPE = "float32"


def _pair(value: int | tuple[int, int]) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


def _spatial(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def image_inputs(t: Tape, *, batch: int, image: int) -> tuple[Value, Value]:
    """The INPUT images (batch, 3, image, image) and int64 class labels (batch,)."""
    return (t.input("images", (batch, 3, image, image)),
            t.input("labels", (batch,), dtype="int64"))


def conv2d(t: Tape, x: Value, channels: int, kernel: int | tuple[int, int], *, name: str,
           stride: int = 1, padding: int | tuple[int, int] = 0, bias: bool = False) -> Value:
    """2-D convolution; backward as two kernels (data and filter), as cuDNN and nGraph do."""
    n, c, h, w = x.shape
    (kh, kw), (ph, pw) = _pair(kernel), _pair(padding)
    ho, wo = _spatial(h, kh, stride, ph), _spatial(w, kw, stride, pw)
    weight = t.parameter(f"{name}.weight", (channels, c, kh, kw))
    params = [weight]
    if bias:
        params.append(t.parameter(f"{name}.bias", (channels,)))
    out_numel = n * channels * ho * wo
    macs = out_numel * c * kh * kw
    bias_flops = out_numel if bias else 0
    return t.record(
        name, op="conv2d", inputs=[x], params=params, shape=(n, channels, ho, wo),
        flops=2 * macs + bias_flops,
        grads=[
            Grad("backward_data", "conv2d_backward_data", [weight.name], [x.name], 2 * macs),
            Grad("backward_filter", "conv2d_backward_filter", [x.name],
                 [p.name for p in params], 2 * macs + bias_flops),
        ],
    )


def linear(t: Tape, x: Value, features: int, *, name: str, bias: bool = True,
           weight: Value | None = None) -> Value:
    """``x @ W.T + b`` over the last axis; ``weight`` reuses (ties) an existing parameter.

    Backward as two matrix products: data (reads W) and weight (reads x, also
    reduces the bias gradient).
    """
    fan_in = x.shape[-1]
    if weight is None:
        weight = t.parameter(f"{name}.weight", (features, fan_in))
    params = [weight]
    if bias:
        params.append(t.parameter(f"{name}.bias", (features,)))
    rows = math.prod(x.shape[:-1])
    macs = rows * fan_in * features
    bias_flops = rows * features if bias else 0
    return t.record(
        name, op="linear", inputs=[x], params=params, shape=(*x.shape[:-1], features),
        flops=2 * macs + bias_flops,
        grads=[
            Grad("backward_data", "linear_backward_data", [weight.name], [x.name], 2 * macs),
            Grad("backward_weight", "linear_backward_weight", [x.name],
                 [p.name for p in params], 2 * macs + bias_flops),
        ],
    )


def _normalisation(t: Tape, x: Value, *, op: str, name: str, features: int,
                   stats: int) -> Value:
    """``op`` with a weight and a bias of ``features``; saves ``stats`` means and inverse stds."""
    gamma = t.parameter(f"{name}.weight", (features,))
    beta = t.parameter(f"{name}.bias", (features,))
    return t.record(
        name, op=op, inputs=[x], params=[gamma, beta], shape=x.shape,
        flops=flops_per_element(op) * x.numel,
        saved=[("saved_stats", (2, stats), _STATS_DTYPE)],
        grads=[Grad("backward", f"{op}_backward", [x.name, gamma.name, f"{name}.saved_stats"],
                    [x.name, gamma.name, beta.name],
                    flops_per_element(f"{op}_backward") * x.numel)],
    )


def batch_norm(t: Tape, x: Value, *, name: str) -> Value:
    """Training-mode batch normalisation over N, H, W; saves per-channel mean and inverse std.

    Running statistics (buffers, not parameters) are not modelled.
    """
    return _normalisation(t, x, op="batch_norm", name=name, features=x.shape[1],
                          stats=x.shape[1])


def layer_norm(t: Tape, x: Value, *, name: str) -> Value:
    """Layer normalisation over the last axis; saves per-row mean and inverse std."""
    return _normalisation(t, x, op="layer_norm", name=name, features=x.shape[-1],
                          stats=math.prod(x.shape[:-1]))


def _pointwise(t: Tape, x: Value, *, op: str, name: str, reads: Sequence[str],
               backward: str | None = None,
               saved: Sequence[tuple[str, Sequence[int], str]] = ()) -> Value:
    """An elementwise ``op`` and its backward (``op + "_backward"``), which reads ``reads``."""
    backward = backward or f"{op}_backward"
    return t.record(name, op=op, inputs=[x], shape=x.shape, saved=saved,
                    flops=flops_per_element(op) * x.numel,
                    grads=[Grad("backward", backward, reads, [x.name],
                                flops_per_element(backward) * x.numel)])


def relu(t: Tape, x: Value, *, name: str) -> Value:
    """ReLU; its backward reads the output (as PyTorch saves it)."""
    return _pointwise(t, x, op="relu", name=name, reads=[name])


def gelu(t: Tape, x: Value, *, name: str) -> Value:
    """GELU (tanh approximation); its backward reads the input."""
    return _pointwise(t, x, op="gelu", name=name, reads=[x.name])


def dropout(t: Tape, x: Value, *, name: str) -> Value:
    """Dropout; saves a one-byte keep-mask per element, which its backward reads."""
    return _pointwise(t, x, op="dropout", name=name, reads=[f"{name}.mask"],
                      saved=[("mask", x.shape, "bool")])


def _pool_shape(x: Value, kernel: int, stride: int, padding: int) -> tuple[int, ...]:
    n, c, h, w = x.shape
    return (n, c, _spatial(h, kernel, stride, padding), _spatial(w, kernel, stride, padding))


def max_pool2d(t: Tape, x: Value, kernel: int, *, name: str, stride: int | None = None,
               padding: int = 0) -> Value:
    """Max pooling; backward reads the forward input (nGraph's MaxPoolBackprop), no indices."""
    shape = _pool_shape(x, kernel, stride or kernel, padding)
    flops = math.prod(shape) * kernel * kernel
    return t.record(name, op="max_pool2d", inputs=[x], shape=shape, flops=flops,
                    grads=[Grad("backward", "max_pool2d_backward", [x.name], [x.name], flops)])


def avg_pool2d(t: Tape, x: Value, kernel: int, *, name: str, stride: int | None = None,
               padding: int = 0) -> Value:
    """Average pooling; backward reads only the output gradient."""
    shape = _pool_shape(x, kernel, stride or kernel, padding)
    flops = math.prod(shape) * kernel * kernel
    return t.record(name, op="avg_pool2d", inputs=[x], shape=shape, flops=flops,
                    grads=[Grad("backward", "avg_pool2d_backward", [], [x.name], flops)])


def adaptive_avg_pool2d(t: Tape, x: Value, size: int, *, name: str) -> Value:
    """Average pooling to a fixed ``size`` x ``size`` map (1 flop per input and output element)."""
    n, c = x.shape[:2]
    shape = (n, c, size, size)
    flops = x.numel + math.prod(shape)
    return t.record(name, op="adaptive_avg_pool2d", inputs=[x], shape=shape, flops=flops,
                    grads=[Grad("backward", "adaptive_avg_pool2d_backward", [], [x.name], flops)])


def global_avg_pool(t: Tape, x: Value, *, name: str) -> Value:
    """Mean over the spatial axes: (N, C, H, W) -> (N, C)."""
    return t.record(name, op="global_avg_pool", inputs=[x], shape=x.shape[:2],
                    flops=flops_per_element("global_avg_pool") * x.numel,
                    grads=[Grad("backward", "global_avg_pool_backward", [], [x.name],
                                flops_per_element("global_avg_pool_backward") * x.numel)])


def add(t: Tape, a: Value, b: Value, *, name: str) -> Value:
    """Element-wise sum; its backward is free (both inputs receive the output gradient).

    ``b`` may broadcast over ``a``'s leading axes (e.g. position embeddings over the
    batch); its gradient is then summed back to its shape by a ``reduce_sum`` kernel.
    """
    flops = flops_per_element("add") * a.numel
    if b.numel == a.numel:
        return t.record(name, op="add", inputs=[a, b], shape=a.shape, flops=flops,
                        passthrough=[a.name, b.name])
    if len(b.shape) >= len(a.shape) or a.shape[len(a.shape) - len(b.shape):] != b.shape:
        raise GraphError(f"add {name!r}: cannot broadcast {b.shape} over {a.shape}",
                         hint="the second operand must match the trailing axes of the first")
    return t.record(name, op="add", inputs=[a, b], shape=a.shape, flops=flops,
                    passthrough=[a.name],
                    grads=[Grad("backward", "reduce_sum", [], [b.name],
                                flops_per_element("reduce_sum") * a.numel)])


def concat(t: Tape, xs: Sequence[Value], *, name: str, axis: int = 1) -> Value:
    """Concatenation (a copy, 0 flops); backward splits the gradient into new tensors."""
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return t.record(name, op="concat", inputs=xs, shape=shape, flops=flops_per_element("concat"),
                    grads=[Grad("backward", "concat_backward", [], [x.name for x in xs],
                                flops_per_element("concat_backward"))])


def stem(t: Tape, x: Value, channels: int, *, name: str = "stem",
         modules: tuple[str, str, str, str] = ("conv1", "bn1", "relu", "maxpool")) -> Value:
    """The stem of ResNets and DenseNets: 7x7/2 convolution, batch-norm, ReLU, 3x3/2 max pool;
    ``modules`` name their torch modules (torchvision ResNet's by default)."""
    conv, bn, act, pool = modules
    with t.module(conv):
        x = conv2d(t, x, channels, 7, stride=2, padding=3, name=f"{name}.conv")
    with t.module(bn):
        x = batch_norm(t, x, name=f"{name}.bn")
    with t.module(act):
        x = relu(t, x, name=f"{name}.relu")
    with t.module(pool):
        return max_pool2d(t, x, 3, stride=2, padding=1, name=f"{name}.pool")


def classifier(t: Tape, x: Value, classes: int, *, with_dropout: bool = False,
               modules: tuple[str, str, str] = ("avgpool", "dropout", "fc")) -> Value:
    """The logits of a CNN's head: global average pool, dropout if asked, linear to ``classes``;
    ``modules`` name the pool's, the dropout's and the linear layer's torch modules."""
    pool, drop, fc = modules
    with t.module(pool):
        x = global_avg_pool(t, x, name="avgpool")
    if with_dropout:
        with t.module(drop):
            x = dropout(t, x, name="dropout")
    with t.module(fc):
        return linear(t, x, classes, name="fc")


def view(x: Value, shape: Sequence[int]) -> Value:
    """The same tensor under another shape (flatten, head split): no kernel, no memory."""
    if math.prod(shape) != x.numel:
        raise GraphError(f"cannot view tensor {x.name!r} of shape {x.shape} as {tuple(shape)}",
                         hint="a view keeps the number of elements")
    return Value(x.name, tuple(shape))


def embedding(t: Tape, ids: Value, rows: int, features: int, *, name: str) -> Value:
    """Table lookup (a gather, 0 flops); backward scatter-adds into a dense weight gradient.

    The zoo's counts, not the op table's (docs/zoo.md, "FLOPs per kernel"): 0 forward,
    one addition per element of the incoming gradient backward.
    """
    weight = t.parameter(f"{name}.weight", (rows, features))
    shape = (*ids.shape, features)
    return t.record(name, op="embedding", inputs=[ids], params=[weight], shape=shape, flops=0,
                    grads=[Grad("backward", "embedding_backward", [ids.name], [weight.name],
                                math.prod(shape))])


def attention_scores(t: Tape, q: Value, k: Value, heads: int, *, name: str) -> Value:
    """Per-head ``q @ k.T / sqrt(d)`` (the scale folded in): (B, S, D) -> (B, H, S, S)."""
    batch, seq, width = q.shape
    macs = batch * seq * seq * width
    return t.record(name, op="batched_matmul", inputs=[q, k], shape=(batch, heads, seq, seq),
                    flops=2 * macs,
                    grads=[Grad("backward", "batched_matmul_backward", [q.name, k.name],
                                [q.name, k.name], 4 * macs)])


def attention_context(t: Tape, probs: Value, v: Value, *, name: str) -> Value:
    """Per-head ``probs @ v``, heads merged back (a view): (B, H, S, S), (B, S, D) -> (B, S, D)."""
    batch, seq, width = v.shape
    macs = batch * seq * seq * width
    return t.record(name, op="batched_matmul", inputs=[probs, v], shape=v.shape, flops=2 * macs,
                    grads=[Grad("backward", "batched_matmul_backward", [probs.name, v.name],
                                [probs.name, v.name], 4 * macs)])


def softmax(t: Tape, x: Value, *, name: str, causal: bool = False) -> Value:
    """Softmax over the last axis (causal mask folded in); its backward reads the output."""
    return _pointwise(t, x, op="causal_softmax" if causal else "softmax", name=name,
                      reads=[name], backward="softmax_backward")


def fused_attention(t: Tape, q: Value, k: Value, v: Value, heads: int, *, name: str) -> Value:
    """Causal attention in one kernel (FlashAttention-style): no S x S tensor is stored.

    Saves the per-row log-sum-exp (B, H, S); backward recomputes the scores:
    forward 4·B·S²·D flops (two products) + 5·B·H·S² (softmax), backward
    2.5 x the forward products.
    """
    batch, seq, width = q.shape
    products = 4 * batch * seq * seq * width
    lse = f"{name}.logsumexp"
    return t.record(
        name, op="fused_attention", inputs=[q, k, v], shape=q.shape,
        flops=products + flops_per_element("softmax") * batch * heads * seq * seq,
        saved=[("logsumexp", (batch, heads, seq), _STATS_DTYPE)],
        grads=[Grad("backward", "fused_attention_backward", [q.name, k.name, v.name, name, lse],
                    [q.name, k.name, v.name], 2.5 * products)],
    )
