"""Checkpoint every layer: what it drops, what it reruns and where, and what it keeps."""

from __future__ import annotations

import pytest

from autotm_core.baselines import checkpoint_layers
from autotm_core.errors import CapacityError
from autotm_core.examples import build_example
from autotm_core.ir import layer_of
from autotm_core.presets import preset
from autotm_core.zoo import build_network

from .blocks import MIB, blocks

GPU = preset("gpu-h200")


def _reruns(plan, graph):  # type: ignore[no-untyped-def]
    return {(graph.kernels[r.kernel].name, graph.kernels[r.before].name) for r in plan.reruns}


def _dropped(plan):  # type: ignore[no-untyped-def]
    """Tensors with two residencies in the fastest pool (resident nowhere in between)."""
    seen: dict[str, int] = {}
    for r in plan.residencies:
        seen[r.tensor] = seen.get(r.tensor, 0) + 1
    return {t for t, n in seen.items() if n == 2}


def test_each_block_is_rerun_chained_before_its_first_backward_kernel(verifies) -> None:
    graph = blocks(2)
    plan = checkpoint_layers(graph, GPU)
    verifies(plan, graph, GPU, None)
    # u (read by gelu's backward) and a (read by fc's backward) are dropped; v dies in the
    # forward pass, so shift's rerun needs scale's first; h1, block 1's input, is kept
    assert _dropped(plan) == {"u0", "a0", "u1", "a1"}
    assert _reruns(plan, graph) == {
        (k, f"fc{i}.backward") for i in (0, 1) for k in (f"scale{i}", f"shift{i}", f"act{i}")}
    order = [graph.kernels[r.kernel].name for r in plan.reruns
             if graph.kernels[r.before].name == "fc0.backward"]
    assert order == ["scale0", "shift0", "act0"]  # program order: each finds its inputs
    assert plan.attributes["layers"] == 2 and plan.attributes["placement"] == "all-fast"
    # the values restored stay until their last use: u0 until gelu's backward
    u0 = [r for r in plan.residencies if r.tensor == "u0"]
    assert u0[1].first == graph.kernel_index["fc0.backward"]
    assert u0[1].last == graph.kernel_index["act0.backward"]


def test_a_value_made_before_the_blocks_is_rerun_as_the_checkpoint_keeps_it(verifies) -> None:
    """Each block's shift reads the mask, made before the blocks and dead after the forward
    pass: its checkpoint would keep the mask as an input; the plan reruns the mask's kernel
    with the block's, so u0 and u1 are dropped and restored as without a mask."""
    graph = blocks(2, mask=True)
    plan = checkpoint_layers(graph, GPU)
    verifies(plan, graph, GPU, None)
    assert _dropped(plan) == {"u0", "a0", "u1", "a1"}
    assert _reruns(plan, graph) == {
        (k, f"fc{i}.backward") for i in (0, 1)
        for k in ("mask", f"scale{i}", f"shift{i}", f"act{i}")}


def test_random_ops_are_kept_and_not_rerun(verifies) -> None:
    graph = blocks(2, random=frozenset({1}))
    plan = checkpoint_layers(graph, GPU)
    verifies(plan, graph, GPU, None)
    assert "a1" not in _dropped(plan) and "u1" in _dropped(plan)
    reruns = _reruns(plan, graph)
    assert not any(k == "act1" for k, _ in reruns)
    # block 1 drops only u1, first read again by act1's backward
    assert {b for k, b in reruns if k.endswith("1")} == {"act1.backward"}


def test_a_value_written_since_is_kept() -> None:
    graph = blocks(1, update_early=True)  # w0 updated before the backward pass
    plan = checkpoint_layers(graph, GPU)
    assert "fc0" not in {graph.kernels[r.kernel].name for r in plan.reruns}
    assert "h1" not in _dropped(plan)


def test_checkpointing_lowers_the_peak_and_costs_the_reruns() -> None:
    from autotm_core.baselines import all_fast
    from autotm_core.costs import roofline_costs
    from autotm_core.simulation import simulate

    graph = blocks(4)
    costs = roofline_costs(graph, GPU)
    kept = simulate(all_fast(graph, GPU), graph, GPU, costs)
    plan = checkpoint_layers(graph, GPU)
    checked = simulate(plan, graph, GPU, costs)
    assert checked.pool_nbytes[0].max() < kept.pool_nbytes[0].max()
    assert checked.step_seconds == pytest.approx(
        kept.step_seconds + plan.attributes["rerun_seconds"])


def test_only_numbered_blocks_are_layers_and_backward_kernels_are_never_rerun(verifies) -> None:
    graph = build_network("gpt2:batch=2,seq=64,layers=2,vocab=1000")
    plan = checkpoint_layers(graph, GPU)
    verifies(plan, graph, GPU, None)
    layers = {layer_of(graph.kernels[r.kernel].module) for r in plan.reruns}
    assert layers == {"h.0", "h.1"}  # not ln_f, the embeddings or the head
    loss = graph.kernel_index["loss"]
    assert all(r.kernel < loss < r.before for r in plan.reruns)
    # a block's reruns all run at one boundary, the first backward kernel reading them
    for block in ("h.0", "h.1"):
        (before,) = {r.before for r in plan.reruns
                     if layer_of(graph.kernels[r.kernel].module) == block}
        assert graph.kernels[before].module.startswith(block)
    # the unfused scores are read by nobody in backward: recomputed for the softmax, never
    # kept (no residency after the forward pass)
    scores = [r for r in plan.residencies if r.tensor == "h1.attn.scores"]
    assert len(scores) == 1 and scores[0].last < loss
    assert ("h1.attn.scores", "h1.mlp.fc2.backward_weight") in _reruns(plan, graph)


def test_when_it_does_not_fit_the_rest_spills_first_touch(verifies) -> None:
    graph = build_network("gpt2:batch=2,seq=64,layers=2,vocab=1000")
    capacity = graph.liveness.peak_nbytes // 2
    plan = checkpoint_layers(graph, GPU, fast_capacity_nbytes=capacity)
    verifies(plan, graph, GPU, capacity)
    assert plan.attributes["placement"] == "first-touch"
    assert plan.attributes["spilled_tensors"] > 0 and plan.moves == ()
    # what the reruns read is in the fastest pool there, or an earlier rerun's output
    fast, producer = GPU.fast.name, graph.liveness.producer
    for r in plan.reruns:
        for name in graph.kernels[r.kernel].inputs:
            there = any(x.pool == fast and (x.first < r.before <= x.last or x.first == r.before)
                        for x in plan.residencies if x.tensor == name)
            rerun = any(q.before == r.before and q.kernel == producer[graph.tensor_index[name]]
                        for q in plan.reruns)
            assert there or rerun, (name, r)
    assert any(x.pool != fast for x in plan.residencies)


def test_capacity_error_names_the_boundary_the_reruns_need() -> None:
    graph = build_example("cnn")
    with pytest.raises(CapacityError) as caught:
        checkpoint_layers(graph, GPU, fast_capacity_nbytes=graph.liveness.peak_nbytes // 4)
    assert "checkpoint-layers" in caught.value.message
    assert "boundary before kernel" in caught.value.message
    assert caught.value.hint


def test_example_cnn_checkpoints_its_three_blocks(verifies) -> None:
    graph = build_example("cnn")
    plan = checkpoint_layers(graph, GPU)
    verifies(plan, graph, GPU, None)
    assert {layer_of(graph.kernels[r.kernel].module) for r in plan.reruns} == {
        "blocks.0", "blocks.1", "blocks.2"}
    assert {graph.kernels[r.before].name for r in plan.reruns} == {
        "pool0_backward", "pool1_backward", "pool2_backward"}
    assert plan.attributes["dropped_nbytes"] == sum(
        graph.tensors[graph.tensor_index[t]].nbytes for t in _dropped(plan))
    assert plan.attributes["dropped_nbytes"] > MIB
