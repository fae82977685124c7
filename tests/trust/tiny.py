"""Random tiny training steps and small memory systems for the exhaustive tests."""

from __future__ import annotations

import random

import attrs

from autotm_core.ir import Graph, GraphBuilder, TensorKind
from autotm_core.memory import CopyLink, MemorySystem, Pool

PAGE = 4096
"""Sizes are whole pages, so the ILP's page rounding changes nothing."""
MiB = 1 << 20

_KINDS = [TensorKind.ACTIVATION, TensorKind.ACTIVATION, TensorKind.PARAMETER,
          TensorKind.OPTIMIZER_STATE, TensorKind.INPUT, TensorKind.OUTPUT, TensorKind.GRADIENT,
          TensorKind.CONSTANT]


def two_pools(*, fast: int | None = None, slow: int | None = None) -> MemorySystem:
    """A fast pool and a slow one (reads 3x, writes 10x slower), copies slower than either."""
    return MemorySystem(
        name="tiny-two",
        pools=(Pool("fast", fast, 1e11, 1e11, 1e-7), Pool("slow", slow, 3e10, 1e10, 3e-7)),
        links=(CopyLink("slow", "fast", 6e10, 2e10), CopyLink("fast", "slow", 3e10, 1e10)),
    )


def three_pools(*, fast: int | None = None, middle: int | None = None) -> MemorySystem:
    """HBM-like, DRAM-like and CXL-like pools (copy links derived)."""
    return MemorySystem(
        name="tiny-three",
        pools=(Pool("fast", fast, 4e11, 4e11, 5e-8), Pool("middle", middle, 1e11, 1e11, 1e-7),
               Pool("slow", None, 3e10, 1e10, 3e-7)),
    )


@attrs.frozen
class Case:
    """One random point: a graph and a memory system with its limits applied."""

    seed: int
    """The seed it was drawn from."""
    graph: Graph
    """A tiny training step."""
    system: MemorySystem
    """The memory system, pools limited."""

    def __str__(self) -> str:
        kernels = "; ".join(f"{k.name}({','.join(k.inputs)})->({','.join(k.outputs)})"
                            for k in self.graph.kernels)
        tensors = ", ".join(f"{t.name}:{t.kind.value}:{t.nbytes // PAGE}p"
                            for t in self.graph.tensors)
        caps = ", ".join(f"{p.name}={p.capacity_nbytes}" for p in self.system.pools)
        return f"seed {self.seed}: [{tensors}] {kernels} | {caps}"


def random_graph(rng: random.Random, *, kernels: tuple[int, int] = (3, 6),
                 tensors: tuple[int, int] = (2, 4), name: str = "tiny") -> Graph:
    """A valid graph: pre-existing tensors written only in place, each new tensor produced once."""
    b = GraphBuilder(name)
    n_tensors = rng.randint(*tensors)
    n_kernels = rng.randint(*kernels)
    kinds = [rng.choice(_KINDS) for _ in range(n_tensors)]
    names = [f"t{i}" for i in range(n_tensors)]
    for tensor, kind in zip(names, kinds, strict=True):
        b.tensor(tensor, nbytes=PAGE * rng.choice([64, 128, 256, 384, 512]), kind=kind)
    ready = [t for t, kind in zip(names, kinds, strict=True) if kind.exists_before_step]
    pending = [t for t in names if t not in ready]
    for k in range(n_kernels):
        inputs = rng.sample(ready, rng.randint(0, min(3, len(ready))))
        outputs = []
        must = len(pending) >= n_kernels - k
        if pending and (must or rng.random() < 0.6):
            outputs.append(pending.pop(0))
        kind_of = dict(zip(names, kinds, strict=True))
        updatable = [t for t in inputs if kind_of[t] is not TensorKind.CONSTANT]
        if updatable and rng.random() < 0.35:
            outputs.append(rng.choice(updatable))
        if not inputs and not outputs:
            if ready:
                inputs = [rng.choice(ready)]
            else:
                outputs.append(pending.pop(0))
        b.kernel(f"k{k}", op="layer", inputs=inputs, outputs=outputs,
                 flops=rng.choice([1e5, 1e6, 1e7, 5e7]),
                 workspace_nbytes=rng.choice([0, 0, 0, 16 * PAGE]))
        ready += [t for t in outputs if t not in ready]
    return b.build()


def random_case(seed: int, *, pools: int = 2, bounded_slow: bool = False,
                kernels: tuple[int, int] = (3, 6), tensors: tuple[int, int] = (2, 4)) -> Case:
    """A random graph with a random fast-pool limit between its largest workspace and its peak."""
    rng = random.Random(seed)
    graph = random_graph(rng, kernels=kernels, tensors=tensors)
    live = graph.liveness
    peak = int(live.peak_nbytes)
    floor = int(live.workspace_nbytes.max())
    fast = floor + PAGE * rng.randint(0, max(0, (peak - floor) // PAGE))
    if pools == 3:
        return Case(seed, graph, three_pools(fast=fast, middle=max(PAGE, peak // 2)))
    slow = None
    if bounded_slow:
        slow = max(0, peak - fast) + PAGE * rng.randint(0, 256)
    return Case(seed, graph, two_pools(fast=fast, slow=slow))


def random_recompute_graph(rng: random.Random, *, name: str = "tiny-recompute",
                           fills: bool = False) -> Graph:
    """A tiny forward and backward pass whose activations are read again after a gap: a
    chain ``x -> a1 -> .. -> aL`` (``L`` 2 or 3; ``x`` small, activations larger), then two
    backward kernels each reading the previous one's result and one earlier activation, the
    last one often reading ``x`` too (so that the forward pass can be rerun from it there)
    and sometimes updating a parameter the forward pass read. One forward kernel may be
    random (a dropout: never rerun). Sizes, FLOPs and workspaces are random, so recomputing
    pays at some limits and not at others.

    With ``fills``, a layer's activation is often then updated in place by a second kernel
    (``g1``: a fill, see :class:`~autotm_core.ir.RecomputeFacts`), and the random layer is a
    dropout as CPU torch runs it: ``empty_like``, then ``bernoulli_`` filling it, whose
    generator state the frontend keeps (so it may be rerun)."""
    b = GraphBuilder(name)
    layers = rng.randint(2, 3)
    b.tensor("x", nbytes=PAGE * rng.choice([64, 128, 256]), kind=TensorKind.INPUT)
    weight = rng.random() < 0.3
    if weight:
        b.tensor("w", nbytes=PAGE * rng.choice([16, 64]), kind=TensorKind.PARAMETER)
    acts = ["x"]
    random_op = rng.randrange(layers) if rng.random() < 0.2 else -1
    for i in range(1, layers + 1):
        name_i = f"a{i}"
        b.tensor(name_i, nbytes=PAGE * rng.choice([128, 256, 384, 512]))
        inputs = [acts[-1]] + (["w"] if weight and i == 1 else [])
        dropout = i - 1 == random_op
        b.kernel(f"f{i}", op=("empty_like" if fills else "dropout") if dropout else "layer",
                 inputs=inputs, outputs=[name_i], flops=rng.choice([1e4, 1e5, 1e6, 1e7]),
                 workspace_nbytes=rng.choice([0, 0, 0, 16 * PAGE]))
        if fills and (dropout or rng.random() < 0.5):
            b.kernel(f"g{i}", op="bernoulli_" if dropout else "scale_", inputs=[name_i],
                     outputs=[name_i], flops=rng.choice([1e4, 1e5, 1e6]), rerun=True)
        acts.append(name_i)
    previous = acts[-1]
    for j in range(1, 3):
        out = f"d{j}"
        kind = TensorKind.ACTIVATION if j == 1 else rng.choice(
            [TensorKind.GRADIENT, TensorKind.OUTPUT])
        b.tensor(out, nbytes=PAGE * rng.choice([64, 128, 256, 512]), kind=kind)
        early = rng.choice(acts[1:-1]) if j == 2 or rng.random() < 0.5 else "x"
        reads_x = j == 2 and rng.random() < 0.8
        update = weight and j == 2 and rng.random() < 0.5
        inputs = list(dict.fromkeys([previous, early, *(["x"] if reads_x else []),
                                     *(["w"] if update else [])]))
        b.kernel(f"b{j}", op="layer_backward", inputs=inputs,
                 outputs=[out] + (["w"] if update else []),
                 flops=rng.choice([1e4, 1e5, 1e6, 1e7]),
                 workspace_nbytes=rng.choice([0, 0, 16 * PAGE]))
        previous = out
    return b.build()


def compute_cheap_pools(*, fast: int | None = None) -> MemorySystem:
    """Two pools on a machine whose compute is cheap against its slow pool and its copies
    (a GPU's HBM and host memory over PCIe, in miniature): recomputing often pays."""
    return MemorySystem(
        name="tiny-compute-cheap", flops_per_second=1e13,
        pools=(Pool("fast", fast, 1e11, 1e11, 1e-7), Pool("slow", None, 1e10, 3e9, 3e-7)),
        links=(CopyLink("slow", "fast", 6e9, 3e9), CopyLink("fast", "slow", 6e9, 3e9)),
    )


def random_recompute_case(seed: int, *, fills: bool = False) -> Case:
    """A :func:`random_recompute_graph` with a random fast-pool limit between half its peak
    (or its largest workspace) and its peak, on :func:`two_pools` (even seeds) or
    :func:`compute_cheap_pools` (odd seeds)."""
    rng = random.Random(seed)
    graph = random_recompute_graph(rng, fills=fills)
    live = graph.liveness
    peak = int(live.peak_nbytes)
    floor = max(int(live.workspace_nbytes.max()), peak // 2)
    fast = floor + PAGE * rng.randint(0, max(0, (peak - floor) // PAGE))
    system = compute_cheap_pools(fast=fast) if seed % 2 else two_pools(fast=fast)
    return Case(seed, graph, system)
