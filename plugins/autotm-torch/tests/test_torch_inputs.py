"""Models as engineers write them: keyword inputs, a loss the model computes itself, compiled
modules, a target device, optimizers' foreach and fused paths, and no zero-byte tensors."""

from __future__ import annotations

import functools
import time

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.step_values import step_values  # noqa: E402
from torch import nn  # noqa: E402
from torch_models import MLP, KeywordModel, SmallCNN, keyword_batch  # noqa: E402

from autotm_core import PluginError, TensorKind, UsageError, get_frontend  # noqa: E402


@pytest.fixture(scope="module")
def frontend():
    return get_frontend("torch")


def test_keyword_inputs_and_the_models_own_loss(frontend):
    batch = keyword_batch()
    graph = frontend.load(KeywordModel(), batch, loss="output", optimizer="adam")
    inputs = {t.name: t for t in graph.tensors if t.kind is TensorKind.INPUT}
    assert set(inputs) == {"input:input_ids", "input:attention_mask", "input:labels"}
    assert inputs["input:input_ids"].nbytes == batch["input_ids"].nbytes
    assert any(k.op == "aten::nll_loss_forward" for k in graph.kernels)  # the model's own loss
    # without a loss the model's own is used too, where its output carries one
    assert len(frontend.load(KeywordModel(), batch, optimizer="adam").kernels) == len(
        graph.kernels)


def test_plain_values_among_keyword_inputs_reach_the_model():
    model = KeywordModel()
    batch = {**keyword_batch(), "scale": 2.5, "attention_mask": None}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    traced = capture(model, batch, loss="output", optimizer=opt)
    assert [r.name for r in traced.inputs if r.kind is TensorKind.INPUT] == [
        "input:input_ids", "input:labels"]
    assert any(2.5 in node.args for node in traced.module.graph.nodes)
    values = step_values(traced, model=model, inputs=batch, optimizer=opt)
    assert values[-2] is batch["input_ids"] and values[-1] is batch["labels"]


@pytest.mark.parametrize(
    "inputs, loss, message",
    [
        ("text", None, "the example inputs are a str"),
        ({"input_ids": [1, 2, object()]}, None, "example input 'input_ids' holds a object"),
        (keyword_batch(), "mean", "unknown loss 'mean'"),
        ({"input_ids": keyword_batch()["input_ids"]}, "output", "returned a dict without a loss"),
    ],
)
def test_bad_inputs_and_losses_are_one_clear_error(frontend, inputs, loss, message):
    with pytest.raises((UsageError, PluginError), match=message) as info:
        frontend.load(KeywordModel(), inputs, loss=loss, optimizer="sgd")
    assert info.value.hint


@pytest.mark.slow
def test_a_compiled_module_is_captured_as_the_module_it_compiles(frontend, caplog):
    model = MLP()
    x = torch.randn(4, 8)
    start = time.perf_counter()
    graph = frontend.load(torch.compile(model), (x,), optimizer="adam")
    assert time.perf_counter() - start < 20  # no inductor compile (the issue measured 29 s)
    plain = frontend.load(model, (x,), optimizer="adam")
    assert [t.name for t in graph.tensors] == [t.name for t in plain.tensors]
    assert graph.name == "MLP training step"
    assert "torch.compile" in caplog.text
    # a compiled submodule runs eagerly while tracing, under its wrapper's parameter names
    wrapped = nn.Sequential(torch.compile(nn.Linear(8, 8)), nn.ReLU())
    inner = frontend.load(wrapped, (x,), optimizer="sgd")
    assert "param:0._orig_mod.weight" in {t.name for t in inner.tensors}


def test_a_device_torch_cannot_trace_for_is_one_line(frontend):
    if torch.backends.cuda.is_built():
        pytest.skip("this torch can trace for CUDA")
    with pytest.raises(PluginError, match=r"cannot capture for device 'cuda'.*CPU-only build"):
        frontend.load(MLP(), (torch.randn(4, 8),), optimizer="sgd", device="cuda")
    with pytest.raises(UsageError, match="not a torch device"):
        frontend.load(MLP(), (torch.randn(4, 8),), device="gpu please")


def test_the_device_option_captures_a_meta_model_with_cpu_inputs(frontend):
    big = nn.Linear(1 << 14, 1 << 14, device="meta")
    x = torch.randn(2, 1 << 14)
    with pytest.raises(PluginError, match="two devices") as info:
        frontend.load(big, (x,), mode="inference")
    assert "device=" in info.value.hint
    graph = frontend.load(big, (x,), mode="inference", device="cpu")
    assert graph.tensor("param:weight").nbytes == 4 << 28


def test_no_zero_byte_tensors_or_kernels(frontend):
    class EmptyCache(nn.Module):
        """Grows an empty cache, as a key-value cache does in training."""

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            cache = x.new_zeros(x.shape[0], 0)  # no bytes
            grown = torch.cat([cache, self.fc(x)], dim=1)
            return grown + torch.empty(0).sum()

    graph = frontend.load(EmptyCache(), (torch.randn(4, 8),), optimizer="sgd")
    assert not [t.name for t in graph.tensors if t.nbytes == 0]
    assert all(any(graph.tensor(o).nbytes for o in k.outputs) for k in graph.kernels)
    cnn = frontend.load(SmallCNN(), (torch.randn(2, 3, 8, 8),), optimizer="sgd")
    assert not [t.name for t in cnn.tensors if t.nbytes == 0]


@pytest.mark.parametrize("path", ["foreach", "fused"])
def test_foreach_and_fused_optimizers_are_captured_as_given(frontend, path):
    x = torch.randn(4, 8)
    single = frontend.load(MLP(), (x,), optimizer="adam")
    grouped = frontend.load(MLP(), (x,), optimizer=functools.partial(
        torch.optim.Adam, lr=1e-3, **{path: True}))
    assert len(grouped.kernels) < len(single.kernels)
    assert any(k.op.startswith("aten::_foreach" if path == "foreach" else "aten::_fused")
               for k in grouped.kernels)
    state = [sum(t.nbytes for t in g.tensors if t.kind is TensorKind.OPTIMIZER_STATE)
             for g in (single, grouped)]
    assert state[0] == state[1]
