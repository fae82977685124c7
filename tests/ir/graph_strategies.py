"""Hypothesis strategies: random valid training-like graphs, and a brute-force liveness.

The generator walks a training step the way a framework would emit it: some
tensors exist before the step (inputs, parameters, optimizer state, constants);
forward kernels read what exists and produce activations (sometimes also a
scratch ``workspace`` tensor, sometimes a kernel workspace in bytes, sometimes
an in-place update of an activation); a loss kernel produces an output and a
gradient; backward kernels read gradients and saved activations and produce
gradients; optimizer kernels update parameters and optimizer state in place.
Some tensors are declared and never touched (a warning, not an error).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from autotm_core.ir import Graph, Kernel, Tensor, TensorKind

_DTYPES = ("float32", "float16", "int64", "bfloat16")
# Strategies are built once: building one inside a draw is what makes generation slow.
_NBYTES = st.integers(0, 1 << 20)
_SHAPE = st.none() | st.lists(st.integers(0, 64), max_size=3).map(tuple)
_DTYPE = st.none() | st.sampled_from(_DTYPES)
_POOLS = st.none() | st.lists(st.sampled_from(("dram", "pmm", "hbm")), max_size=2, unique=True).map(
    tuple
)
_FLOPS = st.none() | st.integers(0, 10**9) | st.floats(0, 1e12)
_WORKSPACE = st.sampled_from((0, 0, 64, 4096))
_ANY_KIND = st.sampled_from(list(TensorKind))


@st.composite
def names(draw: st.DrawFn) -> str:
    """A prefix for every name of one graph: arbitrary text, so formats see odd names."""
    return draw(st.text(min_size=0, max_size=6))


@st.composite
def training_graphs(draw: st.DrawFn, *, max_layers: int = 6) -> Graph:
    """A random valid training-like graph using every tensor kind."""
    prefix = draw(names())
    tensors: list[Tensor] = []
    kernels: list[Kernel] = []
    counter = iter(range(10**6))

    def tensor(kind: TensorKind, *, nbytes: int | None = None) -> str:
        name = f"{prefix}t{next(counter)}"
        size = draw(_NBYTES) if nbytes is None else nbytes
        shape, dtype, pools = draw(_SHAPE), draw(_DTYPE), draw(_POOLS)
        tensors.append(Tensor(name, size, kind, shape, dtype, pools))
        return name

    def kernel(op: str, inputs: list[str], outputs: list[str]) -> None:
        flops, workspace = draw(_FLOPS), draw(_WORKSPACE)
        kernels.append(Kernel(f"{prefix}k{next(counter)}", op, tuple(inputs), tuple(outputs),
                              flops, workspace))

    def some(pool: list[str], *, at_most: int) -> list[str]:
        if not pool:
            return []
        picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=at_most, unique=True))
        return [pool[i] for i in picks]

    data = [tensor(TensorKind.INPUT) for _ in range(draw(st.integers(1, 2)))]
    constants = [tensor(TensorKind.CONSTANT) for _ in range(draw(st.integers(0, 2)))]
    layers = draw(st.integers(1, max_layers))
    params = [tensor(TensorKind.PARAMETER) for _ in range(layers)]
    for _ in range(draw(st.integers(0, 2))):  # declared, never used
        tensor(draw(_ANY_KIND))

    # Forward.
    activations: list[str] = []
    h = data[0]
    for i in range(layers):
        out = tensor(TensorKind.ACTIVATION)
        outputs = [out]
        if draw(st.booleans()):
            outputs.append(tensor(TensorKind.WORKSPACE))
        inputs = [h, params[i], *some(constants + data[1:], at_most=2)]
        kernel("layer", inputs, outputs)
        if draw(st.booleans()):  # an in-place activation (e.g. relu_)
            kernel("relu_", [out], [out])
        activations.append(out)
        h = out

    # Loss.
    loss = tensor(TensorKind.OUTPUT)
    grad = tensor(TensorKind.GRADIENT)
    kernel("loss", [h, *some(data, at_most=1)], [loss, grad])

    # Backward, reading saved activations in any order.
    grads: list[str] = []
    for i in reversed(range(layers)):
        dw = tensor(TensorKind.GRADIENT)
        dx = tensor(TensorKind.GRADIENT)
        saved = some(activations, at_most=2)
        kernel("layer_backward", [grad, params[i], *saved], [dw, dx])
        grads.append(dw)
        grad = dx
    if draw(st.booleans()):
        kernel("summary", [grad], [tensor(TensorKind.OUTPUT)])

    # Optimizer: in-place updates of parameters and their state.
    for p, dw in zip(params, reversed(grads), strict=True):
        if draw(st.booleans()):
            m = tensor(TensorKind.OPTIMIZER_STATE)
            kernel("sgd_momentum", [p, dw, m], [p, m])
        else:
            kernel("sgd", [p, dw], [p])
    order = draw(st.permutations(range(len(tensors))))  # declaration order is free
    return Graph(name=f"{prefix}graph", tensors=[tensors[i] for i in order], kernels=kernels)


@dataclass(frozen=True)
class BruteLiveness:
    """Liveness recomputed from the definitions, one tensor and one kernel at a time."""

    producer: list[int]
    users: list[list[int]]
    first: list[int]
    last: list[int]
    live: list[list[int]]
    live_nbytes: list[int]


def brute_liveness(graph: Graph) -> BruteLiveness:
    """The lifetime rules of autotm_core.ir.liveness, evaluated literally.

    A tensor comes into being at its producer (the first kernel writing it
    without reading it) or, when it exists before the step, at kernel 0. It is
    live at kernel k when it has come into being by k and is still needed: k is
    the kernel where it came into being, or some kernel at or after k touches
    it, or it survives the step. A tensor that neither pre-exists nor is
    produced is never live.
    """
    n = len(graph.kernels)
    producer, users, first, last = [], [], [], []
    for t in graph.tensors:
        touching = [k for k, kernel in enumerate(graph.kernels)
                    if t.name in kernel.inputs or t.name in kernel.outputs]
        writers = [k for k, kernel in enumerate(graph.kernels)
                   if t.name in kernel.outputs and t.name not in kernel.inputs]
        p = writers[0] if writers else -1
        producer.append(p)
        users.append(touching)
        exists = t.kind.exists_before_step or p >= 0
        born = p if p >= 0 else 0
        alive = [
            k for k in range(n)
            if exists and born <= k
            and (k == born or t.kind.survives_step or any(u >= k for u in touching))
        ]
        first.append(born)
        last.append(alive[-1] if alive else -1)
        assert alive == list(range(born, alive[-1] + 1)) if alive else True
    live = [[i for i in range(len(graph.tensors)) if first[i] <= k <= last[i]] for k in range(n)]
    live_nbytes = [
        sum(graph.tensors[i].nbytes for i in live[k]) + graph.kernels[k].workspace_nbytes
        for k in range(n)
    ]
    return BruteLiveness(producer, users, first, last, live, live_nbytes)
