"""Activation checkpointing captured as what it is: recomputation in the backward pass that
reads the parameters, no weight constants, less memory; and a plan of it run for two steps
with real kernels equal to eager PyTorch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.real_kernels import captured_step, run_plan  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up  # noqa: E402
from execution_models import two_pools  # noqa: E402
from torch import nn  # noqa: E402
from torch_models import CheckpointedMLP  # noqa: E402

from autotm_core import TensorKind, get_frontend  # noqa: E402
from autotm_core.baselines import first_touch  # noqa: E402

REENTRANT = pytest.mark.parametrize("reentrant", [False, True], ids=["non-reentrant", "reentrant"])


def _graph(reentrant, batch_size=64):
    torch.manual_seed(0)
    x, y = torch.randn(batch_size, 8), torch.randint(0, 4, (batch_size,))
    return get_frontend("torch").load(CheckpointedMLP(reentrant=reentrant), (x,),
                                      loss=nn.CrossEntropyLoss(), targets=(y,), optimizer="sgd")


def _readers(graph, tensor):
    return sum(tensor in k.inputs for k in graph.kernels)


@REENTRANT
def test_checkpointing_recomputes_from_the_parameters(reentrant):
    plain, checkpointed = _graph(None), _graph(reentrant)
    assert not [t.name for t in checkpointed.tensors if t.kind is TensorKind.CONSTANT]
    assert checkpointed.liveness.peak_nbytes < plain.liveness.peak_nbytes
    # each block's first layer runs again in the backward pass, reading the same weight (the
    # reentrant checkpoint recomputes the second one too; the other stops when it has what the
    # backward pass needs)
    addmm = [sum(k.op == "aten::addmm" for k in g.kernels) for g in (plain, checkpointed)]
    assert addmm[1] == addmm[0] + (6 if reentrant else 3)
    for block in range(3):
        name = f"param:blocks.{block}.up.weight"
        assert _readers(checkpointed, name) == _readers(plain, name) + 1
    # and no tensor the size of a weight appears that the plain step does not have
    sizes = {t.nbytes for t in plain.tensors}
    weight = checkpointed.tensor("param:blocks.0.up.weight").nbytes
    assert all(t.nbytes in sizes for t in checkpointed.tensors if t.nbytes >= weight)


def _values_after(step, run, inputs):
    """The placeholders of a second step: what the first left, then the same batch."""
    return [run.final[r.name].clone() if r.name in run.final else inputs[r.name]
            for r in step.traced.inputs]


@pytest.mark.slow
@REENTRANT
def test_two_steps_of_a_plan_equal_two_eager_steps(reentrant):
    torch.manual_seed(0)
    model = CheckpointedMLP(reentrant=reentrant)
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    # SGD with momentum: Adam's normalisation would amplify float rounding across two steps
    loss, opt = nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    warm_up(opt)
    traced = capture(model, (x,), loss=loss, targets=(y,), optimizer=opt)
    step = captured_step(traced, name="checkpointed")
    values = clone_values(step_values(traced, model=model, inputs=(x,), targets=(y,),
                                      optimizer=opt))
    system = two_pools(1 << 20)
    plan = first_touch(step.graph, system, fast_capacity_nbytes=step.graph.liveness.peak_nbytes
                       // 2, alignment=64)
    first = run_plan(step, plan, system, values)
    second = run_plan(step, plan, system,
                      _values_after(step, first, {"input:0": x, "target:0": y}))
    for run in (first, second):
        reference = eager_step(model, (x,), loss=loss, targets=(y,), optimizer=opt)
        torch.testing.assert_close(run.outputs[0], reference.loss)
        for role, grad in zip(step.traced.outputs[1:], run.outputs[1:], strict=True):
            torch.testing.assert_close(grad, reference.grads[role.name], msg=role.name)
    after = step_values(traced, model=model, inputs=(x,), targets=(y,), optimizer=opt)
    for role, value in zip(traced.inputs, after, strict=True):
        if role.name in second.final:
            torch.testing.assert_close(second.final[role.name], value, msg=role.name)
