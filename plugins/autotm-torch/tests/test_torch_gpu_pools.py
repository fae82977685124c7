"""Issue 8 item 5: GPU pools, their mechanics tested in the CPU test mode.

Placements (arenas of the layout's sizes, regions at the plan's offsets),
synchronous and asynchronous copies with their order and tickets, and a whole
step through the pools equal to eager PyTorch.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.gpu_pools import TorchPools, cuda_available  # noqa: E402
from autotm_torch.plan_addresses import fit_addresses  # noqa: E402
from autotm_torch.real_kernels import captured_step, run_plan  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values  # noqa: E402
from execution_models import case, round_trips, two_pools  # noqa: E402

from autotm_core.baselines import greedy  # noqa: E402
from autotm_core.errors import ExecutionError  # noqa: E402
from autotm_core.executor import ArenaRequest  # noqa: E402

REQUESTS = [ArenaRequest("fast", 4096, 0), ArenaRequest("slow", 8192, 0)]


@pytest.fixture
def pools():
    made = TorchPools(REQUESTS, device="cpu")
    yield made
    made.close()


def test_arenas_have_the_layout_sizes_and_regions_share_them(pools):
    assert pools.name == "cpu-test"
    assert [a.numel() for a in pools.arenas] == [4096, 8192]
    assert pools.arenas[1].is_pinned() == cuda_available()
    pools.region(1, 100, 8).fill_(7)
    assert pools.arenas[1][100:108].tolist() == [7] * 8
    assert pools.arenas[1][99].item() == 0 and pools.arenas[1][108].item() == 0
    with pytest.raises(ExecutionError, match="outside arena 0"):
        pools.region(0, 4000, 200)


def test_asynchronous_copies_run_in_order_and_tickets_join_them(pools):
    sources = [torch.full((256,), i, dtype=torch.uint8) for i in range(1, 6)]
    tickets = [pools.submit(s, pools.region(1, 0, 256)) for s in sources]
    assert tickets == sorted(tickets) and len(set(tickets)) == 5
    pools.wait(tickets[-1])
    assert pools.region(1, 0, 256).tolist() == [5] * 256  # the last submitted wins
    data = torch.arange(256, dtype=torch.int32).view(torch.uint8)[:1024]
    pools.copy(data, pools.region(0, 1024, 1024))
    ticket = pools.submit(pools.region(0, 1024, 1024), pools.region(1, 4096, 1024))
    pools.finish()
    assert pools.region(1, 4096, 1024).view(torch.int32).tolist() == list(range(256))
    assert ticket == tickets[-1] + 1
    start, end = pools.mark(), pools.mark()
    assert pools.seconds(start, end) >= 0


@pytest.mark.skipif(cuda_available(), reason="CUDA is available here")
def test_asking_for_a_gpu_without_one_is_one_clear_error():
    with pytest.raises(ExecutionError, match="CUDA is not available"):
        TorchPools(REQUESTS, device="cuda")


@pytest.fixture(scope="module")
def mlp():
    model, inputs, loss, targets, opt = case("mlp", "adam")
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=opt)
    step = captured_step(traced, name="mlp")
    values = step_values(traced, model=model, inputs=inputs, targets=targets, optimizer=opt)
    initial = clone_values(values)
    reference = eager_step(model, inputs, loss=loss, targets=targets, optimizer=opt)
    return step, initial, reference, dict(zip((r.name for r in traced.inputs), values,
                                              strict=True))


@pytest.mark.parametrize("planner", ["greedy", "round-trips"])
def test_a_step_through_torch_pools_equals_eager(mlp, planner):
    step, initial, reference, after = mlp
    system = two_pools(1 << 16)
    if planner == "greedy":
        plan = greedy(step.graph, system, fast_capacity_nbytes=step.graph.liveness.peak_nbytes // 2)
    else:
        plan = round_trips(step.graph, system)
    plan, system = fit_addresses(plan, step.graph, system)
    run = run_plan(step, plan, system, initial, pools=TorchPools, repeat=2)
    assert run.pools == ("cuda" if cuda_available() else "cpu-test")
    assert (run.report.sync_nbytes if planner == "greedy" else run.report.async_nbytes) > 0
    assert run.staged_nbytes == 0 or cuda_available()  # one device in the test mode
    torch.testing.assert_close(run.outputs[0], reference.loss)
    for role, grad in zip(step.traced.outputs[1:], run.outputs[1:], strict=True):
        torch.testing.assert_close(grad, reference.grads[role.name], msg=role.name)
    for name, value in run.final.items():
        torch.testing.assert_close(value, after[name], msg=name)
