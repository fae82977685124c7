"""A hand-built training step of residual-free blocks, for the recompute and offload tests.

Block ``i`` (module ``blocks.i``), each tensor ``MIB`` MiB:

- ``v{i} = scale(h{i})``: its backward reads ``h{i}`` (so the block's input lives until then);
- ``u{i} = shift(v{i})``: its backward reads nothing, so ``v{i}`` dies in the forward pass;
- ``a{i} = gelu(u{i})``: its backward reads ``u{i}`` (saved);
- ``h{i+1} = fc(a{i}, w{i})``: its backward reads ``a{i}`` (saved) and ``w{i}``.

Then a head (no module): ``loss = cross_entropy(h{n}, labels)``, and the backward pass from
the last block to the first, and one SGD update per weight. ``random`` makes the
activations of those blocks dropout ops, which may not run again.
"""

from __future__ import annotations

from autotm_core.ir import Graph, GraphBuilder, TensorKind

MIB = 2**20


def blocks(n: int = 2, *, nbytes: int = 8 * MIB, random: frozenset[int] = frozenset(),
           update_early: bool = False, work: float = 1.0, mask: bool = False) -> Graph:
    """The step (see the module doc); ``update_early`` updates ``w0`` before the backward
    pass (so no rerun may read it there); ``work`` scales every kernel's FLOPs; ``mask``
    makes a ``mask`` (kernel ``mask``, no module: made before the blocks, as Hugging Face
    GPT-2 makes its causal mask) that each ``shift`` reads too, and that dies in the
    forward pass."""
    b = GraphBuilder("blocks")
    b.tensor("h0", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("labels", nbytes=4096, kind=TensorKind.INPUT)
    if mask:
        b.tensor("mask", nbytes=4096)
        b.kernel("mask", op="arange", inputs=[], outputs=["mask"], flops=1e3 * work)
    for i in range(n):
        b.tensor(f"w{i}", nbytes=MIB, kind=TensorKind.PARAMETER)
        for name in (f"v{i}", f"u{i}", f"a{i}", f"h{i + 1}"):
            b.tensor(name, nbytes=nbytes)
        m = f"blocks.{i}"
        b.kernel(f"scale{i}", op="mul", inputs=[f"h{i}"], outputs=[f"v{i}"], flops=1e3 * work,
                 module=f"{m}.norm")
        b.kernel(f"shift{i}", op="add", inputs=[f"v{i}", *(["mask"] if mask else [])],
                 outputs=[f"u{i}"], flops=1e3 * work, module=f"{m}.norm")
        b.kernel(f"act{i}", op="native_dropout" if i in random else "gelu",
                 inputs=[f"u{i}"], outputs=[f"a{i}"], flops=1e4 * work, module=f"{m}.act")
        b.kernel(f"fc{i}", op="matmul", inputs=[f"a{i}", f"w{i}"], outputs=[f"h{i + 1}"],
                 flops=1e9 * work, module=f"{m}.fc")
    if update_early:
        b.kernel("early_update", op="sgd_update", inputs=["w0", "labels"], outputs=["w0"],
                 flops=1e3 * work)
    b.tensor("loss", nbytes=4, kind=TensorKind.OUTPUT)
    b.kernel("loss", op="cross_entropy", inputs=[f"h{n}", "labels"], outputs=["loss"],
             flops=1e3 * work)
    b.tensor(f"dh{n}", nbytes=nbytes, kind=TensorKind.GRADIENT)
    b.kernel("loss.backward", op="cross_entropy_backward", inputs=[f"h{n}", "labels"],
             outputs=[f"dh{n}"], flops=1e3 * work)
    for i in reversed(range(n)):
        for name in (f"da{i}", f"du{i}", f"dv{i}", f"dh{i}"):
            b.tensor(name, nbytes=nbytes, kind=TensorKind.GRADIENT)
        b.tensor(f"dw{i}", nbytes=MIB, kind=TensorKind.GRADIENT)
        m = f"blocks.{i}"
        b.kernel(f"fc{i}.backward", op="matmul", inputs=[f"dh{i + 1}", f"a{i}", f"w{i}"],
                 outputs=[f"da{i}", f"dw{i}"], flops=2e9 * work, module=f"{m}.fc")
        b.kernel(f"act{i}.backward", op="gelu_backward", inputs=[f"da{i}", f"u{i}"],
                 outputs=[f"du{i}"], flops=1e4 * work, module=f"{m}.act")
        b.kernel(f"shift{i}.backward", op="add", inputs=[f"du{i}"], outputs=[f"dv{i}"],
                 flops=1e3 * work, module=f"{m}.norm")
        b.kernel(f"scale{i}.backward", op="mul", inputs=[f"dv{i}", f"h{i}"],
                 outputs=[f"dh{i}"], flops=1e3 * work, module=f"{m}.norm")
    for i in range(n):
        b.kernel(f"sgd{i}", op="sgd_update", inputs=[f"w{i}", f"dw{i}"], outputs=[f"w{i}"],
                 flops=1e6 * work)
    return b.build()
