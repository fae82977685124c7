"""Issue 7 item 3: the captured step against the real framework.

(1) The graph's peak live memory with free-after-last-use (``graph.liveness``)
against live storage bytes measured while the captured step runs op by op on
real tensors; (2) the step run op by op against eager PyTorch: loss, gradients,
updated parameters, buffers and optimizer state.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.lower import lower  # noqa: E402
from autotm_torch.replay_eager import StorageTracker, run_step  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values  # noqa: E402
from execution_models import case  # noqa: E402

from autotm_core import TensorKind  # noqa: E402
from autotm_core.errors import ExecutionError  # noqa: E402

CASES = [("mlp", "adam"), ("resnet", "sgd"), ("encoder", "adamw")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{m}-{o}" for m, o in CASES])
def captured(request):
    name, optimizer = request.param
    model, inputs, loss, targets, opt = case(name, optimizer)
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=opt)
    graph = lower(traced, name=name)
    values = step_values(traced, model=model, inputs=inputs, targets=targets, optimizer=opt)
    return traced, graph, values, (model, inputs, loss, targets, opt)


def test_peak_live_bytes_equal_the_measured_storages_kernel_by_kernel(captured):
    traced, graph, values, _ = captured
    run = run_step(traced, clone_values(values), keep_gradients=False)
    live = graph.liveness
    assert run.peak_nbytes == live.peak_nbytes
    measured = [run.live_at(k.name) for k in graph.kernels]
    assert measured == live.live_nbytes.tolist()
    # the view-only nodes the lowering dropped hold no more than their neighbours
    assert run.peak_nbytes == max(measured)


def test_keeping_gradients_costs_at_most_their_bytes(captured):
    traced, graph, values, _ = captured
    run = run_step(traced, clone_values(values), keep_gradients=True)
    grads = sum(t.nbytes for t in graph.tensors if t.kind is TensorKind.GRADIENT)
    peak = graph.liveness.peak_nbytes
    assert peak <= run.peak_nbytes <= peak + grads
    assert all(o is not None for o in run.outputs)


def test_op_by_op_step_reproduces_eager_pytorch(captured):
    traced, _, values, (model, inputs, loss, targets, opt) = captured
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    own = clone_values(values)
    updated = list(own)  # run_step empties its argument; the tensors are updated in place
    run = run_step(traced, own)
    reference = eager_step(model, inputs, loss=loss, targets=targets, optimizer=opt)
    torch.testing.assert_close(run.outputs[0], reference.loss)
    names = [role.name for role in traced.outputs[1:]]
    assert sorted(names) == sorted(reference.grads)
    for name, grad in zip(names, run.outputs[1:], strict=True):
        torch.testing.assert_close(grad, reference.grads[name], msg=name)
    for role, mine, real in zip(traced.inputs, updated, values, strict=True):
        torch.testing.assert_close(mine, real, msg=role.name)  # params, buffers, state after
    moved = [n for n, p in model.named_parameters() if not torch.equal(before[n], p)]
    assert moved, "the optimizer step changed no parameter: the comparison proves nothing"


def test_a_failing_op_is_named():
    model, inputs, loss, targets, opt = case("mlp", "sgd")
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=opt)
    values = clone_values(step_values(traced, model=model, inputs=inputs, targets=targets,
                                      optimizer=opt))
    index = [r.name for r in traced.inputs].index("input:0")
    values[index] = torch.randn(4, 9)  # the wrong width for fc1
    with pytest.raises(ExecutionError, match=r"node '.*' .*failed on real tensors"):
        run_step(traced, values)
    with pytest.raises(ExecutionError, match="takes"):
        run_step(traced, values[:-1] or [torch.zeros(1)])


def test_tracker_sees_a_storage_die_and_shares_views():
    tracker = StorageTracker()
    a = torch.zeros(16)
    view = a[4:]
    tracker.add((a, view))
    assert tracker.live_nbytes() == 64
    del a
    assert tracker.live_nbytes() == 64  # the view keeps the storage alive
    del view
    assert tracker.live_nbytes() == 0
