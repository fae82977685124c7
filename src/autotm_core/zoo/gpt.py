"""A GPT-2-style decoder-only transformer (Radford et al. 2019); GPT-2 small by default.

Token and position embeddings (summed), ``layers`` pre-norm blocks, a final
layer-norm and a language-model head tied to the token embedding (no bias).
Each block: ``h + proj(attention(ln_1(h)))`` then ``h + fc2(gelu(fc1(ln_2(h))))``
with a 4 x width MLP. Queries, keys and values are three ``width x width``
linear layers (GPT-2's single ``c_attn`` layer has the same parameters and
FLOPs). Attention is either unfused (``attention="unfused"``, the default: a
batched matmul for the scaled scores, a causal softmax, a batched matmul with
the values; the S x S probabilities are stored) or one FlashAttention-style
kernel (``attention="fused"``). The loss is cross-entropy over every position.

Kernels carry the module paths of Hugging Face's ``GPT2Model`` (``wte``, ``h.3.attn.c_attn``,
``h.3.mlp.c_fc``, ``ln_f``) and ``lm_head``; the residual adds belong to the block
(``h.3``), so :func:`~autotm_core.ir.layer_of` gives one layer per block.
"""

from __future__ import annotations

from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, Value, check_positive

ATTENTION_KINDS = ("unfused", "fused")
"""The two ways attention is built (see the module docstring)."""


def _attention(t: Tape, h: Value, heads: int, kind: str, dropout: bool, *, name: str) -> Value:
    with t.module("c_attn"):
        q = L.linear(t, h, h.shape[-1], name=f"{name}.q")
        k = L.linear(t, h, h.shape[-1], name=f"{name}.k")
        v = L.linear(t, h, h.shape[-1], name=f"{name}.v")
    if kind == "fused":
        return L.fused_attention(t, q, k, v, heads, name=f"{name}.attention")
    scores = L.attention_scores(t, q, k, heads, name=f"{name}.scores")
    probs = L.softmax(t, scores, causal=True, name=f"{name}.softmax")
    if dropout:
        with t.module("attn_dropout"):
            probs = L.dropout(t, probs, name=f"{name}.attn_dropout")
    return L.attention_context(t, probs, v, name=f"{name}.context")


def _block(t: Tape, h: Value, heads: int, kind: str, dropout: bool, *, name: str) -> Value:
    """One block, its kernels under Hugging Face's GPT-2 module names (``ln_1``,
    ``attn.c_attn``, ``attn.c_proj``, ``mlp.c_fc``, ...) below the block's own module."""
    with t.module("ln_1"):
        a = L.layer_norm(t, h, name=f"{name}.ln_1")
    with t.module("attn"):
        a = _attention(t, a, heads, kind, dropout, name=f"{name}.attn")
        with t.module("c_proj"):
            a = L.linear(t, a, h.shape[-1], name=f"{name}.attn.proj")
        if dropout:
            with t.module("resid_dropout"):
                a = L.dropout(t, a, name=f"{name}.attn.dropout")
    h = L.add(t, h, a, name=f"{name}.residual_1")
    with t.module("ln_2"):
        m = L.layer_norm(t, h, name=f"{name}.ln_2")
    with t.module("mlp"):
        with t.module("c_fc"):
            m = L.linear(t, m, 4 * h.shape[-1], name=f"{name}.mlp.fc1")
        with t.module("act"):
            m = L.gelu(t, m, name=f"{name}.mlp.gelu")
        with t.module("c_proj"):
            m = L.linear(t, m, h.shape[-1], name=f"{name}.mlp.fc2")
        if dropout:
            with t.module("dropout"):
                m = L.dropout(t, m, name=f"{name}.mlp.dropout")
    return L.add(t, h, m, name=f"{name}.residual_2")


def gpt2(*, batch: int = 1, seq: int = 1024, layers: int = 12, width: int = 768,
         heads: int = 12, vocab: int = 50257, positions: int | None = None,
         attention: str = "unfused", dropout: bool = False, dtype: str = "float32",
         optimizer: Optimizer | str = Optimizer.ADAM) -> Graph:
    """One training step of a GPT-2-style model (defaults: GPT-2 small, 124.4 M parameters).

    ``positions`` (the position-embedding rows) defaults to ``max(seq, 1024)``.
    """
    positions = max(seq, 1024) if positions is None else positions
    check_positive("gpt2", batch=batch, seq=seq, layers=layers, width=width, heads=heads,
                   vocab=vocab, positions=positions)
    if width % heads:
        raise UsageError(f"gpt2: width={width} is not a multiple of heads={heads}",
                         hint="choose a width divisible by the number of heads")
    if seq > positions:
        raise UsageError(f"gpt2: seq={seq} exceeds positions={positions}",
                         hint="raise positions or shorten the sequence")
    if attention not in ATTENTION_KINDS:
        raise UsageError(f"gpt2: unknown attention {attention!r}",
                         hint="choose one of " + ", ".join(ATTENTION_KINDS))
    t = Tape("gpt2", dtype=dtype)
    ids = t.input("tokens", (batch, seq), dtype="int64")
    labels = t.input("labels", (batch, seq), dtype="int64")
    where = t.constant("positions", (seq,), dtype="int64")
    with t.module("wte"):
        tokens = L.embedding(t, ids, vocab, width, name="wte")
    with t.module("wpe"):
        place = L.embedding(t, where, positions, width, name="wpe")
    h = L.add(t, tokens, place, name="embed")
    if dropout:
        with t.module("drop"):
            h = L.dropout(t, h, name="embed.dropout")
    for i in range(layers):
        with t.module(f"h.{i}"):
            h = _block(t, h, heads, attention, dropout, name=f"h{i}")
    with t.module("ln_f"):
        h = L.layer_norm(t, h, name="ln_f")
    wte = t.parameter_named("wte.weight")
    with t.module("lm_head"):
        logits = L.linear(t, h, vocab, bias=False, weight=wte, name="lm_head")
    t.loss(logits, labels)
    return t.finish(optimizer=optimizer)
