"""Issue 27: a plan that recomputes activations, carried out by the captured ATen ops.

A small deep MLP planned with recomputation at a tight limit drops activations after their
forward use and reruns their producers before the backward pass reads them: the reruns run
the real ops again in the arenas, and the loss, gradients and updated parameters still equal
eager PyTorch's (and do not when the reruns are left out).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.real_kernels import TorchKernels, captured_step, run_plan  # noqa: E402
from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up  # noqa: E402
from test_torch_real_kernels import check_equal  # noqa: E402
from torch import nn  # noqa: E402

from autotm_core.executor import execute  # noqa: E402
from autotm_core.memory import CopyLink, MemorySystem, Pool  # noqa: E402
from autotm_core.planning import PlanSettings, load_problem, plan  # noqa: E402


def _deep_mlp():
    torch.manual_seed(0)
    width = 256
    model = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 4))
    x, y = torch.randn(128, 16), torch.randint(0, 4, (128,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    warm_up(optimizer)
    return model, (x,), nn.CrossEntropyLoss(), (y,), optimizer


def _system():
    """Compute cheap, the second pool slow: recomputing beats reading from it."""
    return MemorySystem(
        name="slow-second", flops_per_second=1e13,
        pools=(Pool("fast", None, 20e9, 20e9), Pool("slow", None, 2e9, 1e9)),
        links=(CopyLink("slow", "fast", 2e9, 1e9), CopyLink("fast", "slow", 1e9, 1e9)))


@pytest.mark.highs
def test_a_plan_that_recomputes_runs_the_real_ops_again_and_equals_eager():
    model, inputs, loss, targets, optimizer = _deep_mlp()
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    step = captured_step(traced, name="deep-mlp")
    values = step_values(traced, model=model, inputs=inputs, targets=targets,
                         optimizer=optimizer)
    initial = clone_values(values)
    reference = eager_step(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    after = {role.name: v.detach().clone() for role, v in zip(traced.inputs, values, strict=True)}

    graph = step.graph
    problem = load_problem(graph, _system(),
                           limit=f"fast={int(graph.liveness.peak_nbytes * 0.6)}")
    outcome = plan(problem, "synchronous", PlanSettings(mode="exact", recompute=True,
                                                       relative_gap=0))
    reruns = outcome.plan.reruns
    assert reruns, "recomputing is the best plan here"
    run = run_plan(step, outcome.plan, problem.limited_system, initial, repeat=2)
    check_equal(step, run, reference, after)
    report = run.report
    assert [(r.kernel, r.before) for r in report.reruns] == [(r.kernel, r.before)
                                                              for r in reruns]
    assert all(r.measured_seconds > 0 for r in report.reruns)
    assert sum(run.reruns.values()) == len(reruns)
    names = {graph.kernels[r.kernel].name for r in reruns}
    assert set(run.reruns) == {_op(traced, name) for name in names}

    class Skipping(TorchKernels):
        def run_rerun(self, rerun: int) -> int:  # the plan's reruns left out
            return 0

    skipping = Skipping(step, initial)
    skipped = skipping.result(execute(outcome.plan, graph, problem.limited_system,
                                      kernels=skipping, repeat=1))
    with pytest.raises(AssertionError):
        check_equal(step, skipped, reference, after)


def _op(traced, name):
    node = next(n for n in traced.module.graph.nodes if n.name == name)
    return node.target._schema.name


@pytest.mark.parametrize("seed", range(3))
def test_random_plans_with_many_reruns_equal_eager(seed):
    """Random valid plans with reruns (chains, inputs copied in for a rerun, restores before
    the next use or earlier; autotm-core's tests/plans/random_reruns.py) on the deep MLP."""
    from tests.plans.random_plans import three_pools, tiny_system
    from tests.plans.random_reruns import random_plan_with_reruns

    model, inputs, loss, targets, optimizer = _deep_mlp()
    traced = capture(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    step = captured_step(traced, name="deep-mlp")
    values = step_values(traced, model=model, inputs=inputs, targets=targets,
                         optimizer=optimizer)
    initial = clone_values(values)
    reference = eager_step(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    after = {role.name: v.detach().clone() for role, v in zip(traced.inputs, values, strict=True)}
    system = three_pools() if seed % 2 else tiny_system(None)
    for pool in system.pools:  # unbounded: the executor lays the pools out
        system = system.with_capacity(pool.name, None)
    plan = random_plan_with_reruns(step.graph, system, seed, drop_rate=0.9)
    assert len(plan.reruns) >= 5
    run = run_plan(step, plan, system, initial, fit_machine=True)
    check_equal(step, run, reference, after)
    assert sum(run.reruns.values()) == len(plan.reruns)
