"""Offload saved activations: what is copied out and back, when, and what stays."""

from __future__ import annotations

import pytest

from autotm_core.baselines import offload_activations
from autotm_core.baselines.offload_activations import MAX_IN_FLIGHT, MIN_OFFLOAD_NBYTES
from autotm_core.baselines.saved import saved_activations
from autotm_core.errors import CapacityError
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.plans import MoveKind
from autotm_core.presets import preset
from autotm_core.zoo import build_network

from .blocks import blocks

GPU = preset("gpu-h200")


def _copies(plan, graph):  # type: ignore[no-untyped-def]
    """tensor -> (kernel of its copy out, its kind, kernel of its reload)."""
    out = {m.tensor: (m.kernel, m.kind) for m in plan.moves if m.source == GPU.fast.name}
    back = {m.tensor: m.kernel for m in plan.moves if m.target == GPU.fast.name}
    assert set(out) == set(back)
    return {t: (*out[t], back[t]) for t in out}


def test_every_saved_activation_goes_out_after_its_last_forward_use_and_back_on_demand(
        verifies) -> None:
    graph = blocks(2, work=1e5)  # kernels long enough to hide each copy
    plan = offload_activations(graph, GPU)
    verifies(plan, graph, GPU, None)
    saved = saved_activations(graph)
    names = [graph.tensors[t].name for t in saved.tensors]
    gaps = dict(zip(names, saved.gap_kernels.tolist(), strict=True))
    copies = _copies(plan, graph)
    # h2 is read by the loss and its backward one after the other: no gap, not copied
    assert set(copies) == {n for n, gap in gaps.items() if gap >= 1} == {
        "u0", "a0", "h1", "u1", "a1"}
    for name, (out, kind, back) in copies.items():
        row = names.index(name)
        assert kind is MoveKind.ASYNC
        assert saved.last_forward[row] < out < back == saved.first_backward[row]
        # back in the fastest pool from its reload to its last use, from nowhere else
        spans = sorted((r.first, r.last, r.pool) for r in plan.residencies if r.tensor == name)
        assert [p for *_, p in spans] == ["hbm", "host", "hbm"]
        assert spans[1] == (out, back - 1, "host")
    # the matrix products are long enough to hide the copies issued before them; a1, last
    # used by the last one, is still copying when its reload comes: the kernel before waits
    assert {n: graph.kernels[out].name for n, (out, _, _) in copies.items()} == {
        "u0": "fc0", "a0": "fc1", "h1": "fc1", "u1": "fc1", "a1": "loss.backward"}
    assert plan.attributes["offloaded_tensors"] == 5 and plan.attributes["waits"] == 1


def test_at_most_five_copies_are_in_flight(verifies) -> None:
    graph = blocks(6)  # each copy outlasts many kernels
    plan = offload_activations(graph, GPU)
    verifies(plan, graph, GPU, None)
    saved = saved_activations(graph)
    last = {graph.tensors[t].name: int(f) for t, f in zip(saved.tensors, saved.last_forward,
                                                         strict=True)}
    copies = _copies(plan, graph)
    assert len(copies) > MAX_IN_FLIGHT + 1
    for k in range(len(graph.kernels)):
        flying = [n for n, (out, kind, _) in copies.items()
                  if kind is MoveKind.ASYNC and last[n] < k <= out]
        assert len(flying) <= MAX_IN_FLIGHT, (k, flying)
    assert plan.attributes["waits"] > 0
    # the copy stream takes them in the order of their last forward use
    order = sorted(copies, key=lambda n: (last[n], graph.tensor_index[n]))
    outs = [copies[n][0] for n in order]
    assert outs == sorted(outs)


def test_small_activations_and_those_without_a_slower_pool_stay(verifies) -> None:
    b = GraphBuilder("small")
    b.tensor("x", nbytes=1 << 20, kind=TensorKind.INPUT)
    b.tensor("tiny", nbytes=MIN_OFFLOAD_NBYTES - 1)
    b.tensor("pinned", nbytes=1 << 20, pools=("hbm",))
    b.tensor("big", nbytes=1 << 20)
    b.tensor("y", nbytes=1 << 20)
    b.tensor("loss", nbytes=4, kind=TensorKind.OUTPUT)
    b.tensor("dy", nbytes=1 << 20, kind=TensorKind.GRADIENT)
    b.kernel("f", op="relu", inputs=["x"], outputs=["tiny", "pinned", "big"], flops=1e12)
    b.kernel("g", op="relu", inputs=["x"], outputs=["y"], flops=1e12)
    b.kernel("loss", op="loss", inputs=["y"], outputs=["loss"], flops=1e12)
    b.kernel("back", op="relu_backward", inputs=["y", "tiny", "pinned", "big"], outputs=["dy"],
             flops=1e12)
    graph = b.build()
    plan = offload_activations(graph, GPU)
    verifies(plan, graph, GPU, None)
    assert set(_copies(plan, graph)) == {"big"}


def test_what_stays_must_fit() -> None:
    graph = build_network("gpt2:batch=2,seq=64,layers=2,vocab=1000")
    with pytest.raises(CapacityError) as caught:
        offload_activations(graph, GPU, fast_capacity_nbytes=graph.liveness.peak_nbytes // 2)
    assert caught.value.message.startswith("offload-activations does not fit: pool 'hbm'")
    assert "too much" in caught.value.message


def test_gpt2_offloads_its_saved_activations(verifies) -> None:
    graph = build_network("gpt2:batch=2,seq=64,layers=2")
    plan = offload_activations(graph, GPU)
    verifies(plan, graph, GPU, None)
    copies = _copies(plan, graph)
    assert {"h0.mlp.fc1", "h1.attn.softmax", "h0.ln_1"} <= set(copies)
    loss = graph.kernel_index["loss"]
    assert all(back > loss for _, _, back in copies.values())


def test_copies_issued_together_past_the_stash_are_waited_for_before_the_next_kernel(
        verifies) -> None:
    """Seven activations last read by one concatenation: the stash holds five, so the
    program copies the two oldest before the next kernel (synchronous moves)."""
    b = GraphBuilder("concat")
    b.tensor("x", nbytes=1 << 20, kind=TensorKind.INPUT)
    branches = [b.tensor(f"r{i}", nbytes=8 << 20) for i in range(7)]
    for i, r in enumerate(branches):
        b.kernel(f"relu{i}", op="relu", inputs=["x"], outputs=[r], flops=1e6)
    b.tensor("c", nbytes=56 << 20)
    b.kernel("concat", op="concat", inputs=branches, outputs=["c"])
    b.tensor("loss", nbytes=4, kind=TensorKind.OUTPUT)
    b.kernel("loss", op="loss", inputs=["c"], outputs=["loss"], flops=1e6)
    b.tensor("dc", nbytes=56 << 20, kind=TensorKind.GRADIENT)
    b.kernel("loss.backward", op="loss_backward", inputs=["c"], outputs=["dc"], flops=1e6)
    for i, r in enumerate(branches):
        b.tensor(f"d{i}", nbytes=1 << 20, kind=TensorKind.GRADIENT)
        b.kernel(f"relu{i}.backward", op="relu_backward", inputs=["dc", r], outputs=[f"d{i}"],
                 flops=1e6)
    graph = b.build()
    plan = offload_activations(graph, GPU)
    verifies(plan, graph, GPU, None)
    copies = _copies(plan, graph)
    synchronous = {n for n, (out, kind, _) in copies.items() if kind is MoveKind.SYNC}
    assert synchronous == {"r0", "r1"}
    assert {copies[n][0] for n in synchronous} == {graph.kernel_index["loss"]}
