"""The zoo's networks against published facts: parameters, MACs, structure, kinds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.ir import Graph, TensorKind
from autotm_core.zoo import build_network

# (network, options small enough to build fast, published parameters)
PUBLISHED_PARAMETERS = {
    "resnet50": ({"image": 32}, 25.6e6),        # He et al. 2016 / torchvision 25,557,032
    "resnet200": ({"image": 32}, 64.7e6),       # He et al. 2016 (identity mappings)
    "vgg19": ({"image": 32}, 143.7e6),          # torchvision 143,667,240
    "densenet264": ({"image": 32}, 33.3e6),     # Huang et al. 2017, growth 32, 1000 classes
    "inception_v4": ({"image": 75}, 42.7e6),    # Szegedy et al. 2016 reference implementation
    "gpt2": ({"seq": 16}, 124.4e6),             # GPT-2 small, tied embeddings: 124,439,808
}


def _parameters(graph: Graph) -> int:
    return sum(math.prod(t.shape or ()) for t in graph.tensors if t.kind is TensorKind.PARAMETER)


def _forward_macs(graph: Graph) -> float:
    return sum(k.flops or 0 for k in graph.kernels if k.op in ("conv2d", "linear")) / 2


@pytest.fixture(scope="module")
def small() -> dict[str, Graph]:
    """Each checked network once per session, at batch 1 and a small input."""
    return {name: build_network(name, **options)
            for name, (options, _) in PUBLISHED_PARAMETERS.items()}


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_parameter_count_within_two_percent(small: dict[str, Graph], name: str) -> None:
    published = PUBLISHED_PARAMETERS[name][1]
    assert _parameters(small[name]) == pytest.approx(published, rel=0.02)


def test_exact_parameter_counts_of_reference_implementations(small: dict[str, Graph]) -> None:
    assert _parameters(small["resnet50"]) == 25_557_032
    assert _parameters(small["vgg19"]) == 143_667_240
    assert _parameters(small["gpt2"]) == 124_439_808
    assert _parameters(build_network("densenet121", image=32)) == 7_978_856


@pytest.mark.parametrize(("name", "gmacs"), [("resnet50", 4.1), ("vgg19", 19.6)])
def test_forward_macs_at_224(name: str, gmacs: float) -> None:
    assert _forward_macs(build_network(name)) / 1e9 == pytest.approx(gmacs, rel=0.02)


def test_every_network_is_a_full_training_step(small: dict[str, Graph]) -> None:
    for name, graph in small.items():
        ops = {k.op for k in graph.kernels}
        assert "cross_entropy" in ops and "cross_entropy_backward" in ops, name
        assert "momentum_update" in ops or "adam_update" in ops, name
        (loss,) = [t for t in graph.tensors if t.kind is TensorKind.OUTPUT]
        assert loss.shape == ()
        inputs = {t.name for t in graph.tensors if t.kind is TensorKind.INPUT}
        assert "labels" in inputs and inputs & {"images", "tokens"}, name
        assert not [p for p in graph.problems], name


def test_kernel_counts_are_framework_like(small: dict[str, Graph]) -> None:
    counts = {name: len(graph.kernels) for name, graph in small.items()}
    assert counts["densenet264"] > 2500
    assert 1500 < counts["resnet200"] < 4000
    assert 100 < counts["vgg19"] < 200
    assert counts["gpt2"] > 12 * 40
    dense = small["densenet264"]
    accumulations = [k for k in dense.kernels if k.op == "add" and ".grad_add" in k.name]
    assert len(accumulations) >= 6 + 12 + 64 + 48  # one per concatenated feature map at least


def test_vgg416_has_413_convolutions() -> None:
    graph = build_network("vgg416", image=32)
    assert sum(k.op == "conv2d" for k in graph.kernels) == 413
    assert sum(k.op == "linear" for k in graph.kernels) == 3


def test_sizes_follow_shape_and_dtype() -> None:
    graph = build_network("resnet50", batch=2, image=64, dtype="float16")
    stem = graph.tensor("stem.conv")
    assert stem.shape == (2, 64, 32, 32) and stem.nbytes == 2 * 64 * 32 * 32 * 2
    assert graph.tensor("fc.weight").nbytes == 1000 * 2048 * 2


def test_batch_scales_activations_not_parameters() -> None:
    one, four = (build_network("resnet50", batch=b, image=32) for b in (1, 4))
    assert _parameters(one) == _parameters(four)
    # Every activation but batch-norm's per-channel statistics has the batch as its first axis.
    act = [sum(t.nbytes for t in g.tensors
               if t.kind is TensorKind.ACTIVATION and not t.name.endswith(".saved_stats"))
           for g in (one, four)]
    assert act[1] == 4 * act[0]


def test_inception_without_batch_norm_as_autotm() -> None:
    graph = build_network("inception_v4", image=75, batch_norm=False)
    assert not any(k.op == "batch_norm" for k in graph.kernels)
    assert _parameters(graph) == pytest.approx(42.7e6, rel=0.02)


def test_fused_attention_stores_no_score_matrix() -> None:
    small = {"batch": 4, "seq": 128, "layers": 2, "width": 64, "heads": 4, "vocab": 100}
    unfused = build_network("gpt2", **small)
    fused = build_network("gpt2", **small, attention="fused")
    assert any(t.shape == (4, 4, 128, 128) for t in unfused.tensors)
    assert not any(t.shape == (4, 4, 128, 128) for t in fused.tensors)
    # Each layer's stored attention probabilities (read by the backward pass) disappear.
    probs_nbytes = 4 * 4 * 128 * 128 * 4
    assert fused.liveness.peak_nbytes <= unfused.liveness.peak_nbytes - 2 * probs_nbytes


@settings(max_examples=15, deadline=None)
@given(layers=st.integers(1, 3), heads=st.integers(1, 4), head_width=st.integers(1, 8),
       seq=st.integers(1, 8), vocab=st.integers(2, 50))
def test_gpt_parameters_follow_the_formula(layers: int, heads: int, head_width: int, seq: int,
                                           vocab: int) -> None:
    width = heads * head_width
    graph = build_network("gpt2", layers=layers, heads=heads, width=width, seq=seq, vocab=vocab,
                          positions=seq, optimizer="adam")
    per_block = 4 * width + 4 * (width * width + width) + 8 * width * width + 5 * width
    expected = vocab * width + seq * width + layers * per_block + 2 * width
    assert _parameters(graph) == expected
    states = sum(t.nbytes for t in graph.tensors if t.kind is TensorKind.OPTIMIZER_STATE)
    assert states == 2 * 4 * expected


# Ops whose zoo count is the op table's estimate on the zoo's own tensors. The rest count from
# what only the layer knows (pooling windows, heads folded into a width, split backward
# kernels) or, for the optimizer updates and the loss gradient, by the zoo's own figures.
ESTIMATED_AS_THE_TABLE = {
    "add", "concat", "concat_backward", "conv2d", "cross_entropy", "gelu", "gelu_backward",
    "global_avg_pool", "global_avg_pool_backward", "layer_norm", "layer_norm_backward",
    "linear", "relu", "relu_backward", "sgd_update", "causal_softmax", "softmax_backward",
    "dropout_backward",
}


@pytest.mark.parametrize("spec", ["resnet50:image=32,optimizer=sgd", "densenet121:image=32",
                                  "gpt2:layers=1,seq=16,dropout=true,optimizer=sgd"])
def test_flops_agree_with_the_op_table(spec: str) -> None:
    from autotm_core.costs import op_flops

    graph = build_network(spec)
    checked = 0
    for kernel in graph.kernels:
        if kernel.op in ESTIMATED_AS_THE_TABLE:
            inputs = [graph.tensor(name) for name in kernel.inputs]
            outputs = [graph.tensor(name) for name in kernel.outputs]
            assert op_flops(kernel.op, inputs=inputs, outputs=outputs) == pytest.approx(
                kernel.flops), kernel.name
            checked += 1
    assert checked > 0


def _forward(graph: Graph) -> list:
    """The kernels before the loss (the forward pass)."""
    end = next(i for i, k in enumerate(graph.kernels) if k.op == "cross_entropy")
    return list(graph.kernels[:end])


LAYERS = {  # network -> (a kernel, its module, how many layers the forward pass has)
    "gpt2": ("h1.attn.q", "h.1.attn.c_attn", {"wte", "wpe", "", "ln_f", "lm_head"}),
    "resnet50": ("layer1.0.1.conv", "layer1.0.conv1", {"conv1", "bn1", "relu", "maxpool",
                                                       "avgpool", "fc"}),
    "vgg19": ("block3.conv1", "features.10", {"avgpool"}),
    "densenet264": ("block2.layer3.2.conv", "features.denseblock2.3.conv2", set()),
    "inception_v4": ("inception_a1.b1.0.conv", "features.7.branch1.0.conv",
                     {"global_pool", "last_linear"}),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_forward_kernels_carry_torch_module_paths(small: dict[str, Graph], name: str) -> None:
    from autotm_core.ir import layer_of

    graph = small[name]
    kernel, module, unnumbered = LAYERS[name]
    assert graph.kernel(kernel).module == module
    forward = _forward(graph)
    layers = {layer_of(k.module) for k in forward}
    numbered = {layer for layer in layers if any(p.isdigit() for p in layer.split("."))}
    assert unnumbered <= layers - numbered
    # every backward kernel of a forward kernel carries its module
    for k in forward:
        back = [b for b in graph.kernels if b.name.startswith(f"{k.name}.backward")]
        assert all(b.module == k.module for b in back)
    # the loss, gradient sums and the update belong to no module
    assert all(k.module == "" for k in graph.kernels
               if k.op.endswith("_update") or ".grad_add" in k.name or k.op.startswith("cross"))


def test_layers_of_the_zoo_are_blocks() -> None:
    from autotm_core.ir import layer_of

    gpt = build_network("gpt2:batch=1,seq=16,layers=3,width=64,heads=4,vocab=100")
    blocks = {layer_of(k.module) for k in _forward(gpt) if k.module.startswith("h.")}
    assert blocks == {"h.0", "h.1", "h.2"}
    assert {k.module for k in _forward(gpt) if layer_of(k.module) == "h.2"} >= {
        "h.2", "h.2.ln_1", "h.2.attn", "h.2.attn.c_attn", "h.2.mlp.c_fc"}
    resnet = build_network("resnet50:image=32")
    assert sum(1 for layer in {layer_of(k.module) for k in _forward(resnet)}
               if layer.startswith("layer")) == 16
    assert resnet.kernel("layer2.0.downsample.conv").module == "layer2.0.downsample.0"
    vgg = build_network("vgg19:image=32,dropout=true")
    assert [vgg.kernel(n).module for n in ("block1.conv1", "block1.relu1", "block1.pool",
                                           "fc1", "fc1.dropout", "fc3")] == [
        "features.0", "features.1", "features.4", "classifier.0", "classifier.2",
        "classifier.6"]
