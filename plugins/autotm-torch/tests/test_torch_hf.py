"""Real models as engineers write them: Hugging Face GPT-2, BERT and Llama from small configs
(no weights, no network), with and without gradient checkpointing, a batch as keyword
inputs, the model's own loss, and a compiled module."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_models  # noqa: E402
from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.real_kernels import captured_step, run_plan  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up  # noqa: E402
from execution_models import two_pools  # noqa: E402

from autotm_core import TensorKind, get_frontend  # noqa: E402
from autotm_core.baselines import first_touch  # noqa: E402

MODELS = ("gpt2", "bert", "llama")


def _train(model, batch=None):
    return get_frontend("torch").load(model, batch or hf_models.batch(), loss="output",
                                      optimizer="adamw")


def _clean(graph):
    assert not [t.name for t in graph.tensors if t.kind is TensorKind.CONSTANT]
    assert not [t.name for t in graph.tensors if t.nbytes == 0]
    inputs = {t.name for t in graph.tensors if t.kind is TensorKind.INPUT}
    assert {"input:input_ids", "input:labels"} <= inputs


@pytest.mark.slow
@pytest.mark.parametrize("name, checkpointing",
                         [*((name, True) for name in MODELS), ("gpt2", "reentrant")])
def test_gradient_checkpointing_recomputes_and_lowers_the_peak(name, checkpointing):
    plain = _train(hf_models.model(name))
    checkpointed = _train(hf_models.model(name, checkpointing=checkpointing))
    for graph in (plain, checkpointed):
        _clean(graph)
    assert checkpointed.liveness.peak_nbytes < plain.liveness.peak_nbytes
    assert len(checkpointed.kernels) > len(plain.kernels)  # the recomputation
    params = {t.name: t.nbytes for t in plain.tensors if t.kind is TensorKind.PARAMETER}
    assert {t.name: t.nbytes for t in checkpointed.tensors
            if t.kind is TensorKind.PARAMETER} == params


@pytest.mark.slow
def test_inference_of_a_keyword_batch():
    batch = hf_models.batch()
    graph = get_frontend("torch").load(hf_models.model("bert"), batch)
    _clean(graph)
    assert not any(t.kind is TensorKind.GRADIENT for t in graph.tensors)
    assert graph.tensor("input:input_ids").nbytes == batch["input_ids"].nbytes


@pytest.mark.slow
def test_a_compiled_hf_model_is_captured_eagerly():
    model = hf_models.model("gpt2")
    compiled, plain = _train(torch.compile(model)), _train(model)
    assert [k.op for k in compiled.kernels] == [k.op for k in plain.kernels]


@pytest.mark.slow
@pytest.mark.parametrize("checkpointing", [False, True], ids=["plain", "checkpointed"])
def test_a_plan_of_gpt2_runs_with_real_kernels_equal_to_eager(checkpointing):
    model, batch = hf_models.model("gpt2", checkpointing=checkpointing, layers=1), \
        hf_models.batch()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    warm_up(opt)
    traced = capture(model, batch, loss="output", optimizer=opt)
    step = captured_step(traced, name="gpt2")
    values = clone_values(step_values(traced, model=model, inputs=batch, optimizer=opt))
    system = two_pools(1 << 22)
    plan = first_touch(step.graph, system, alignment=64,
                       fast_capacity_nbytes=step.graph.liveness.peak_nbytes // 2)
    run = run_plan(step, plan, system, values)
    reference = eager_step(model, batch, loss="output", optimizer=opt)
    torch.testing.assert_close(run.outputs[0], reference.loss)
    for role, grad in zip(step.traced.outputs[1:], run.outputs[1:], strict=True):
        torch.testing.assert_close(grad, reference.grads[role.name], msg=role.name)


@pytest.mark.slow
def test_gpt2_kernels_name_their_modules_and_layers():
    from autotm_core.ir import layer_of

    graph = _train(hf_models.model("gpt2"))
    modules = {k.module for k in graph.kernels}
    for layer in range(2):
        for leaf in ("ln_1", "attn.c_attn", "attn", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.act",
                     "mlp.c_proj"):
            assert f"transformer.h.{layer}.{leaf}" in modules
    assert {"transformer.wte", "transformer.wpe", "transformer.ln_f", "lm_head"} <= modules
    layers = {layer_of(k.module) for k in graph.kernels if ".h." in k.module}
    assert layers == {"transformer.h.0", "transformer.h.1"}
    attention = [k for k in graph.kernels if k.op.startswith("aten::_scaled_dot_product")
                 and not k.op.endswith("_backward")]
    assert [k.module for k in attention] == ["transformer.h.0.attn", "transformer.h.1.attn"]
    assert all(k.rerun for k in attention)  # no attention dropout in these configs
