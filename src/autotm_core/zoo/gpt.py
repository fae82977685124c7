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
"""

from __future__ import annotations

from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, Value, check_positive

ATTENTION_KINDS = ("unfused", "fused")
"""The two ways attention is built (see the module docstring)."""


def _attention(t: Tape, h: Value, heads: int, kind: str, dropout: bool, *, name: str) -> Value:
    q = L.linear(t, h, h.shape[-1], name=f"{name}.q")
    k = L.linear(t, h, h.shape[-1], name=f"{name}.k")
    v = L.linear(t, h, h.shape[-1], name=f"{name}.v")
    if kind == "fused":
        return L.fused_attention(t, q, k, v, heads, name=f"{name}.attention")
    scores = L.attention_scores(t, q, k, heads, name=f"{name}.scores")
    probs = L.softmax(t, scores, causal=True, name=f"{name}.softmax")
    if dropout:
        probs = L.dropout(t, probs, name=f"{name}.attn_dropout")
    return L.attention_context(t, probs, v, name=f"{name}.context")


def _block(t: Tape, h: Value, heads: int, kind: str, dropout: bool, *, name: str) -> Value:
    a = L.layer_norm(t, h, name=f"{name}.ln_1")
    a = _attention(t, a, heads, kind, dropout, name=f"{name}.attn")
    a = L.linear(t, a, h.shape[-1], name=f"{name}.attn.proj")
    if dropout:
        a = L.dropout(t, a, name=f"{name}.attn.dropout")
    h = L.add(t, h, a, name=f"{name}.residual_1")
    m = L.layer_norm(t, h, name=f"{name}.ln_2")
    m = L.linear(t, m, 4 * h.shape[-1], name=f"{name}.mlp.fc1")
    m = L.gelu(t, m, name=f"{name}.mlp.gelu")
    m = L.linear(t, m, h.shape[-1], name=f"{name}.mlp.fc2")
    if dropout:
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
    tokens = L.embedding(t, ids, vocab, width, name="wte")
    place = L.embedding(t, where, positions, width, name="wpe")
    h = L.add(t, tokens, place, name="embed")
    if dropout:
        h = L.dropout(t, h, name="embed.dropout")
    for i in range(layers):
        h = _block(t, h, heads, attention, dropout, name=f"h{i}")
    h = L.layer_norm(t, h, name="ln_f")
    wte = t.parameter_named("wte.weight")
    logits = L.linear(t, h, vocab, bias=False, weight=wte, name="lm_head")
    t.loss(logits, labels)
    return t.finish(optimizer=optimizer)
