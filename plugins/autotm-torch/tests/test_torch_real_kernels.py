"""Issue 8 item 2: a plan carried out by the captured ATen ops, in the executor's NUMA arenas.

Every plan (first-touch, greedy with synchronous moves, asynchronous round trips)
must give eager PyTorch's loss, gradients and updated parameters, buffers and
optimizer state.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.out_variants import out_variant  # noqa: E402
from autotm_torch.plan_addresses import fit_addresses  # noqa: E402
from autotm_torch.real_kernels import captured_step, run_plan  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values  # noqa: E402
from execution_models import case, round_trips, two_pools  # noqa: E402

from autotm_core.baselines import first_touch, greedy  # noqa: E402
from autotm_core.errors import ExecutionError  # noqa: E402

FAST_NBYTES = 1 << 20
COPIED_OPS = {"aten::convolution_backward"}  # some of its outputs may be None: no out= call


@pytest.fixture(scope="module", params=[("mlp", "adam"), ("resnet", "sgd")], ids=["mlp", "resnet"])
def setup(request):
    model, inputs, loss, targets, opt = case(*request.param)
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=opt)
    step = captured_step(traced, name=request.param[0])
    values = step_values(traced, model=model, inputs=inputs, targets=targets, optimizer=opt)
    initial = clone_values(values)
    reference = eager_step(model, inputs, loss=loss, targets=targets, optimizer=opt)
    after = {role.name: v.detach().clone() for role, v in zip(traced.inputs, values, strict=True)}
    return step, initial, reference, after


def check_equal(step, run, reference, after):
    torch.testing.assert_close(run.outputs[0], reference.loss)
    for role, grad in zip(step.traced.outputs[1:], run.outputs[1:], strict=True):
        torch.testing.assert_close(grad, reference.grads[role.name], msg=role.name)
    survivors = {r.name for r in step.traced.inputs if not r.name.startswith(("input", "target"))}
    assert set(run.final) == survivors
    for name, value in run.final.items():
        torch.testing.assert_close(value, after[name], msg=name)


def test_first_touch_plan_runs_in_the_arenas_and_equals_eager(setup):
    step, initial, reference, after = setup
    system = two_pools(FAST_NBYTES)
    half = step.graph.liveness.peak_nbytes // 2
    plan = first_touch(step.graph, system, fast_capacity_nbytes=half, alignment=64)
    assert 0 < plan.attributes["spilled_tensors"] < len(step.graph.tensors)
    run = run_plan(step, plan, system, initial, repeat=2)
    check_equal(step, run, reference, after)
    assert run.pools == "numa" and run.report.sync_nbytes == run.report.async_nbytes == 0
    n = len(step.graph.kernels)
    assert run.in_place + sum(run.out_variant.values()) + sum(run.copied.values()) == n
    assert sum(run.out_variant.values()) > n // 3  # most functional ops write into the arena
    assert set(run.copied) <= COPIED_OPS
    assert len(run.report.step_seconds) == 2 and run.report.kernel_seconds.shape == (n,)
    assert run.report.kernels == "torch" and run.report.check is None  # compared above
    assert (run.report.digests != 0).all()  # what each kernel read, hashed by the loop
    assert run.report.final_digests.keys() <= {t.name for t in step.graph.tensors}


def test_greedy_plan_with_synchronous_moves_equals_eager(setup):
    step, initial, reference, after = setup
    system = two_pools(FAST_NBYTES)
    plan = greedy(step.graph, system, fast_capacity_nbytes=step.graph.liveness.peak_nbytes // 2)
    plan, system = fit_addresses(plan, step.graph, system)
    assert plan.moves
    run = run_plan(step, plan, system, initial)
    assert run.report.sync_nbytes > 0
    check_equal(step, run, reference, after)


def test_asynchronous_round_trips_equal_eager(setup):
    step, initial, reference, after = setup
    system = two_pools(FAST_NBYTES)
    plan, system = fit_addresses(round_trips(step.graph, system), step.graph, system)
    run = run_plan(step, plan, system, initial)
    assert run.report.async_nbytes > 0 and run.report.sync_nbytes == 0
    check_equal(step, run, reference, after)


def test_a_plan_for_too_small_a_pool_fails_before_running(setup):
    step, initial, _, _ = setup
    system = two_pools(FAST_NBYTES)
    plan, system = fit_addresses(round_trips(step.graph, system), step.graph, system)
    small = two_pools(64)
    with pytest.raises(Exception, match="fast"):
        run_plan(step, plan, small, initial)
    with pytest.raises(ExecutionError, match="takes"):
        run_plan(step, plan, system, initial[:-1])


def test_out_variants_are_found_by_signature():
    aten = torch.ops.aten
    assert out_variant(aten.addmm.default).out_names == ("out",)
    assert out_variant(aten.native_batch_norm.default).out_names == (
        "out", "save_mean", "save_invstd")
    assert out_variant(aten.full.default).dropped == {"dtype", "layout", "device", "pin_memory"}
    assert out_variant(aten.add_.Tensor) is None  # in place already
    x, w, b = torch.randn(3, 4), torch.randn(4, 5), torch.randn(5)
    out = torch.empty(3, 5)
    out_variant(aten.addmm.default).call(aten.addmm.default, (b, x, w), {}, [out])
    torch.testing.assert_close(out, torch.addmm(b, x, w))
