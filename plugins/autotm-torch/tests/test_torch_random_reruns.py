"""Issue 27: dropout recomputed, as ``torch.utils.checkpoint`` recomputes it.

CPU dropout makes its noise with ``empty_like``, fills it with ``bernoulli_`` and scales it
with ``div_``: the noise is recomputable by those three kernels
(``RecomputeFacts.rerun_kernels``). A plan that drops it and reruns them must draw the same
numbers again: the torch executor restores the default generator's state around the rerun
of ``bernoulli_``, and an exported checkpoint policy recomputes a random op only while no
random op before it is saved. Both are compared with the same step without recomputation,
from the same seed (an eager step draws other numbers op by op than the executor).
"""

from __future__ import annotations

import attrs
import pytest

torch = pytest.importorskip("torch")

from autotm_torch.capture import capture  # noqa: E402
from autotm_torch.policy import Decision, checkpoint_policy, forward_end  # noqa: E402
from autotm_torch.real_kernels import TorchKernels, captured_step  # noqa: E402
from autotm_torch.step_values import clone_values, step_values, warm_up  # noqa: E402
from test_torch_policy import _same_numbers, _step, hf_step  # noqa: E402
from torch import nn  # noqa: E402

from autotm_core.baselines import all_fast  # noqa: E402
from autotm_core.executor import execute  # noqa: E402
from autotm_core.memory import CopyLink, MemorySystem, Pool  # noqa: E402
from autotm_core.planning import PlanSettings, load_problem, plan  # noqa: E402


class TwoDropouts(nn.Module):
    """Two hidden layers, each followed by dropout (0.5)."""

    def __init__(self, width: int = 256) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, width), nn.Linear(width, width)
        self.fc3 = nn.Linear(width, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.drop(torch.relu(self.fc1(x)))
        return self.fc3(self.drop(torch.relu(self.fc2(hidden))))


def _system() -> MemorySystem:
    """Compute cheap, the second pool slow: recomputing beats reading from it."""
    return MemorySystem(
        name="slow-second", flops_per_second=1e13,
        pools=(Pool("fast", None, 20e9, 20e9), Pool("slow", None, 2e9, 1e9)),
        links=(CopyLink("slow", "fast", 2e9, 1e9), CopyLink("fast", "slow", 1e9, 1e9)))


@pytest.fixture(scope="module")
def planned():
    """The model, its captured step, the step's values, and the synchronous ILP's plan with
    recomputation at 80% of the peak, which reruns the second dropout's noise."""
    torch.manual_seed(0)
    model = TwoDropouts()
    x, y = torch.randn(128, 16), torch.randint(0, 4, (128,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    warm_up(optimizer)
    loss = nn.CrossEntropyLoss()
    traced = capture(model, (x,), loss=loss, targets=(y,), optimizer=optimizer)
    step = captured_step(traced, name="two-dropouts")
    values = step_values(traced, model=model, inputs=(x,), targets=(y,), optimizer=optimizer)
    graph = step.graph
    problem = load_problem(graph, _system(),
                           limit=f"fast={int(graph.liveness.peak_nbytes * 0.8)}")
    made = plan(problem, "synchronous", PlanSettings(mode="exact", recompute=True,
                                                    relative_gap=0))
    return model, loss, (x, y), step, values, problem, made.plan


def _random_reruns(graph, plan):
    return [r for r in plan.reruns if graph.kernels[r.kernel].op == "aten::bernoulli_"]


def _run(step, plan, system, values, kernels=TorchKernels):
    torch.manual_seed(7)
    runner = kernels(step, clone_values(values))
    report = execute(plan, step.graph, system, kernels=runner, repeat=1)
    return runner.result(report)


@pytest.mark.highs
def test_a_plan_rerunning_dropout_draws_the_same_numbers_again(planned):
    _, _, _, step, values, problem, made = planned
    graph, system = step.graph, problem.limited_system
    assert _random_reruns(graph, made), "recomputing the noise is the best plan here"
    ops = [graph.kernels[r.kernel].op for r in made.reruns]
    i = ops.index("aten::bernoulli_")
    assert ops[i - 1:i + 2] == ["aten::empty_like", "aten::bernoulli_", "aten::div_"]
    reference = _run(step, all_fast(graph, _system()), _system(), values)
    rerun = _run(step, made, system, values)
    assert rerun.reruns["aten::bernoulli_"] == len(_random_reruns(graph, made))
    for got, want in zip(rerun.outputs, reference.outputs, strict=True):
        torch.testing.assert_close(got, want)
    for name, want in reference.final.items():
        torch.testing.assert_close(rerun.final[name], want)

    class Forgetting(TorchKernels):
        """Reruns from the generator's state of the moment: other noise."""

        def open(self, setup):
            mem = super().open(setup)
            self.random = set()
            return mem

    forgetting = _run(step, made, system, values, kernels=Forgetting)
    assert any(not torch.equal(got, want) for got, want in
               zip(forgetting.outputs, reference.outputs, strict=True))


def _with(policy, decisions):
    """``policy`` with the decisions of some kernels (by name) replaced."""
    return attrs.evolve(policy, ops=tuple(
        attrs.evolve(op, decision=decisions[op.kernel]) if op.kernel in decisions else op
        for op in policy.ops))


@pytest.mark.highs
def test_the_policy_recomputes_dropout_under_checkpoint_with_the_same_numbers(planned):
    model, loss, (x, y), step, _, _, made = planned
    graph = step.graph
    policy = checkpoint_policy(made, graph)
    decisions = {op.kernel: op.decision for op in policy.ops}
    forward = graph.kernels[:forward_end(graph) + 1]
    random = [k.name for k in forward if k.op == "aten::bernoulli_"]
    assert len(random) == 2
    recomputed = {graph.kernels[r.kernel].name for r in _random_reruns(graph, made)}
    assert recomputed
    # a random op is recomputed only while every random op before it is
    prefix = True
    for name in random:
        prefix = prefix and name in recomputed
        assert (decisions[name] is Decision.RECOMPUTE) is prefix
    eager = _step(model, loss, (x, y), seed=3)
    with policy.attach(model) as policy_fn:
        checkpointed = _step(model, loss, (x, y), policy_fn=policy_fn, seed=3)
        assert not policy_fn.unmatched
    _same_numbers(checkpointed, eager)
    assert checkpointed.left_nbytes < eager.left_nbytes

    # why: with the first noise saved, the second, recomputed, draws other numbers
    noise = [[k.name for k in forward[i - 1:i + 2]] for i, k in enumerate(forward)
             if k.op == "aten::bernoulli_"]
    mixed = _with(policy, {**dict.fromkeys(noise[0], Decision.SAVE),
                           **dict.fromkeys(noise[1], Decision.RECOMPUTE)})
    with mixed.attach(model) as policy_fn:
        wrong = _step(model, loss, (x, y), policy_fn=policy_fn, seed=3)
    assert any(not torch.equal(got, want) for got, want in
               zip(wrong.grads, eager.grads, strict=True))
    both = _with(policy, dict.fromkeys(noise[0] + noise[1], Decision.RECOMPUTE))
    with both.attach(model) as policy_fn:
        recomputing = _step(model, loss, (x, y), policy_fn=policy_fn, seed=3)
    _same_numbers(recomputing, eager)


@pytest.mark.slow
def test_hugging_face_gpt2_with_dropout_keeps_eager_numbers_under_its_policy():
    """A small GPT-2 with dropout (0.1 everywhere): checkpoint-layers reruns every block's
    dropouts but keeps the embedding's (no numbered layer), so the policy saves the blocks'
    too (a random op after a saved one); recomputing all of them, the first included, is
    what torch can replay. Both give eager's loss and gradients from the same seed."""
    pytest.importorskip("transformers")
    import hf_models

    from autotm_core import get_frontend
    from autotm_core.baselines import checkpoint_layers
    from autotm_core.presets import preset

    model = hf_models.model("gpt2", layers=2)
    model.config.resid_pdrop = model.config.embd_pdrop = model.config.attn_pdrop = 0.1
    model = type(model)(model.config)  # built again: the dropout modules read the config
    batch = hf_models.batch()
    graph = get_frontend("torch").load(model, batch, loss="output", optimizer="adamw")
    plan = checkpoint_layers(graph, preset("gpu-h200"))
    policy = checkpoint_policy(plan, graph)
    random = [op for op in policy.ops if op.op == "aten::bernoulli_"]
    assert len(random) == 1 + 3 * 2  # the embedding's, then three a block
    assert random[0].module == "transformer.drop"
    assert all(op.decision is Decision.SAVE for op in random)
    demoted = [u for u in policy.unexpressed if "random op after a saved one" in u.reason]
    assert {u.kernel for u in demoted} <= {op.kernel for op in random[1:]} and demoted

    model.train()
    eager = hf_step(model, batch, seed=11)
    forward = graph.kernels[:forward_end(graph) + 1]
    noise = {k.name for k in forward
             if k.op in ("aten::empty_like", "aten::bernoulli_", "aten::div_")}
    for tried in (policy, _with(policy, dict.fromkeys(noise, Decision.RECOMPUTE))):
        with tried.attach(model) as policy_fn:
            loss, grads = hf_step(model, batch, policy_fn, seed=11)
        torch.testing.assert_close(loss, eager[0])
        for got, want in zip(grads, eager[1], strict=True):
            torch.testing.assert_close(got, want)
