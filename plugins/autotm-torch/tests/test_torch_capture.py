"""Training steps and inference passes captured with the torch frontend."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.policy import forward_end  # noqa: E402
from torch import nn  # noqa: E402
from torch_models import MLP, DataDependent, Expand, InPlace, SmallCNN  # noqa: E402

from autotm_core import PluginError, TensorKind, get_frontend, verify_graph  # noqa: E402
from autotm_core.costs import roofline_costs  # noqa: E402
from autotm_core.ir import Severity  # noqa: E402
from autotm_core.presets import preset  # noqa: E402


@pytest.fixture(scope="module")
def frontend():
    return get_frontend("torch")


def _bytes(graph, kind):
    return sum(t.nbytes for t in graph.tensors if t.kind is kind)


def _param_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _real_state_bytes(model, optimizer_class, x, loss_fn, target):
    """Run one real step and measure the optimizer's state."""
    opt = optimizer_class(model.parameters(), lr=0.01)
    loss_fn(model(x), target).backward()
    opt.step()
    return sum(
        v.numel() * v.element_size()
        for state in opt.state.values() for v in state.values() if isinstance(v, torch.Tensor)
    )


def _check(graph):
    assert not [p for p in verify_graph(graph) if p.severity is Severity.ERROR]
    costs = roofline_costs(graph, _system())
    assert costs.constants.shape == (len(graph.kernels), 2)


def _system():
    from autotm_core.presets import PRESETS

    return preset(next(iter(PRESETS)))


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.Adam])
@pytest.mark.parametrize(
    "model_class, shape, n_classes", [(MLP, (4, 8), 4), (SmallCNN, (2, 3, 8, 8), 10)]
)
@pytest.mark.slow
def test_training_step_sizes_match_the_model(
    frontend, model_class, shape, n_classes, optimizer_class
):
    torch.manual_seed(0)
    model = model_class()
    x, y = torch.randn(*shape), torch.randint(0, n_classes, (shape[0],))
    loss = nn.CrossEntropyLoss()
    opt = optimizer_class(model.parameters(), lr=0.01)
    graph = frontend.load(model, (x,), loss=loss, targets=(y,), optimizer=opt)
    _check(graph)

    params = _param_bytes(model)
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    assert _bytes(graph, TensorKind.PARAMETER) == params + buffers
    assert _bytes(graph, TensorKind.GRADIENT) == params
    assert _bytes(graph, TensorKind.INPUT) == x.nbytes + y.nbytes
    state = _bytes(graph, TensorKind.OPTIMIZER_STATE)
    assert state == _real_state_bytes(model_class(), optimizer_class, x, loss, y)
    if optimizer_class is torch.optim.Adam:  # two moments per parameter, one 4-byte step each
        assert state == 2 * params + 4 * len(list(model.parameters()))
    else:
        assert state == 0
    # every parameter is updated in place by the optimizer
    for p in (t for t in graph.tensors if t.kind is TensorKind.PARAMETER and "running" not in t.name
              and "num_batches" not in t.name):
        assert any(p.name in k.inputs and p.name in k.outputs for k in graph.kernels), p.name
    # matmul-like and convolution kernels carry torch's FLOPs
    flops = {k.op: k.flops for k in graph.kernels}
    assert flops.get("aten::addmm", 0) > 0
    if model_class is SmallCNN:
        conv = next(k for k in graph.kernels if k.op == "aten::convolution")
        assert conv.flops == 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3


def test_momentum_state_equals_parameters(frontend):
    model = MLP()
    graph = frontend.load(model, (torch.randn(4, 8),), optimizer="sgd-momentum")
    assert _bytes(graph, TensorKind.OPTIMIZER_STATE) == _param_bytes(model)


def test_expand_is_not_counted(frontend):
    rows, n = 1024, 256
    graph = frontend.load(Expand(rows), (torch.randn(1, n),))
    _check(graph)
    # input (1 x n) and the sum's output (rows): the rows x n expand and its transpose own nothing
    assert graph.liveness.peak_nbytes == 4 * n + 4 * rows
    assert graph.total_nbytes == 4 * n + 4 * rows
    assert [k.op for k in graph.kernels] == ["aten::sum"]


def test_views_share_their_base(frontend):
    graph = frontend.load(MLP(), (torch.randn(4, 8),), optimizer="sgd")
    ops = {k.op for k in graph.kernels}
    assert not ops & {"aten::t", "aten::view", "aten::detach", "aten::expand"}
    # grads are read by the optimizer through views of the backward's outputs: one tensor each
    assert len([t for t in graph.tensors if t.kind is TensorKind.GRADIENT]) == 4


def test_in_place_op_shares_storage(frontend):
    graph = frontend.load(InPlace(), (torch.randn(4, 8),))
    addmm, relu = graph.kernels
    assert relu.op == "aten::relu_"
    assert relu.inputs == relu.outputs == addmm.outputs  # one storage, read and written in place
    # the returned value is that same storage: no separate activation
    assert [t.kind for t in graph.tensors if t.name in relu.outputs] == [TensorKind.OUTPUT]
    assert len(graph.tensors) == 4  # weight, bias, input, the one output storage


def test_inference_graph(frontend):
    model = SmallCNN()
    graph = frontend.load(model, (torch.randn(2, 3, 8, 8),), mode="inference")
    _check(graph)
    kinds = {t.kind for t in graph.tensors}
    assert TensorKind.GRADIENT not in kinds and TensorKind.OPTIMIZER_STATE not in kinds
    assert not any(k.op.endswith("_backward") for k in graph.kernels)
    assert model.training  # the user's mode is restored


def test_multi_output_op_is_split(frontend):
    graph = frontend.load(SmallCNN(), (torch.randn(2, 3, 8, 8),), optimizer="sgd")
    pool = next(k for k in graph.kernels if k.op == "aten::max_pool2d_with_indices")
    assert len(pool.outputs) == 2
    values, indices = (graph.tensor(n) for n in pool.outputs)
    assert values.dtype == "float32" and indices.dtype == "int64"
    assert values.nbytes == 2 * 4 * 4 * 4 * 4 and indices.nbytes == 2 * 4 * 4 * 4 * 8


def test_data_dependent_control_flow_names_the_op(frontend):
    with pytest.raises(PluginError, match=r"_local_scalar_dense.*torch_models.py:\d+ in forward"):
        frontend.load(DataDependent(), (torch.randn(4, 8),), optimizer="sgd")


def test_nothing_real_is_allocated(frontend):
    """A model far too large for this machine captures in moments (fake tensors only)."""
    big = nn.Linear(1 << 16, 1 << 16, bias=False, device="meta")  # 16 GiB of weights
    graph = frontend.load(big, (torch.empty(8, 1 << 16, device="meta"),), mode="inference")
    assert graph.tensor("param:weight").nbytes == 4 << 32


def test_kernels_record_the_module_they_were_called_from(frontend):
    from torch_models import CheckpointedMLP

    from autotm_core.ir import layer_of

    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    graph = frontend.load(CheckpointedMLP(), (x,), loss=nn.CrossEntropyLoss(), targets=(y,),
                          optimizer="sgd")
    forward = [(k.op, k.module) for k in graph.kernels[:14]]
    assert forward[:5] == [("aten::addmm", "inp"), ("aten::addmm", "blocks.0.up"),
                           ("aten::relu", "blocks.0"), ("aten::addmm", "blocks.0.down"),
                           ("aten::add", "blocks.0")]
    assert forward[13] == ("aten::addmm", "out")
    assert layer_of(graph.kernels[1].module) == "blocks.0"
    # the loss (outside the model), the backward pass and the optimizer run in no module
    assert {k.module for k in graph.kernels[14:]} == {""}


def test_dropout_noise_is_recomputed_by_its_producer_and_fills(frontend):
    from torch_models import dropout_factory

    made = dropout_factory()
    graph = frontend.load(made["model"], made["example_inputs"], loss=made["loss"],
                          targets=made["targets"], optimizer=made["optimizer"])
    rerun = {k.op: k.rerun for k in graph.kernels}
    # dropout on the CPU: a noise tensor made by empty_like, filled in place by bernoulli_
    # (the executor restores the generator's state before rerunning it), scaled by div_
    assert rerun["aten::bernoulli_"] and rerun["aten::div_"] and rerun["aten::empty_like"]
    facts, index = graph.recompute, graph.tensor_index
    kernels = {k.op: i for i, k in enumerate(graph.kernels[:forward_end(graph) + 1])}
    noise = graph.kernels[kernels["aten::bernoulli_"]].outputs[0]
    assert facts.recomputable[index[noise]]
    assert facts.rerun_kernels(kernels["aten::empty_like"]) == (
        kernels["aten::empty_like"], kernels["aten::bernoulli_"], kernels["aten::div_"])
    dropped = graph.kernels[kernels["aten::mul"]].outputs[0]
    assert facts.recomputable[index[dropped]]
    # the optimizer's in-place updates of parameters and their state: no fills, never rerun
    # (Adam's in-place add_ to a temporary it just made is a fill)
    updates = [i for i, k in enumerate(graph.kernels) if k.op in ("aten::add_", "aten::addcdiv_")
               and graph.tensor(k.outputs[0]).kind is not TensorKind.ACTIVATION]
    assert updates and not any(facts.rerunnable[i] or facts.fill_of[i] >= 0 for i in updates)


def test_attention_without_dropout_may_rerun_and_with_it_may_not():
    from autotm_torch import _torch_internals as internals

    aten = torch.ops.aten
    flash = aten._scaled_dot_product_flash_attention_for_cpu.default
    q = torch.empty(1, 1, 2, 4, device="meta")
    assert internals.may_rerun(flash, (q, q, q), {})
    assert internals.may_rerun(flash, (q, q, q, 0.0), {})
    assert not internals.may_rerun(flash, (q, q, q), {"dropout_p": 0.1})
    # dropout draws from the default generator, whose state the executor restores
    assert internals.may_rerun(aten.native_dropout.default, (q, 0.5, True), {})
    assert not internals.may_rerun(aten.bernoulli_.float, (q, 0.5),
                                   {"generator": torch.Generator()})
    assert internals.may_rerun(aten.add_.Tensor, (q, q), {})  # an in-place write: a fill
    assert not internals.may_rerun(aten._assert_async.msg, (q, "side effect"), {})
    assert internals.may_rerun(aten.native_dropout_backward.default, (q, q, 2.0), {})
