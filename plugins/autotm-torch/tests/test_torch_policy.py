"""A plan's decisions as a selective activation-checkpointing policy, applied with
torch.utils.checkpoint: the numbers equal eager PyTorch, the identities of the ops found at
run time are the capture's, and what the forward pass leaves for the backward pass is what
the plan keeps.

What the forward pass leaves is measured as the bytes of the storages the ops of the step
made that are still alive when the loss is returned (weak references, as
``replay_eager.StorageTracker`` holds them; parameters, inputs and the loss left out).
``torch.autograd.graph.saved_tensors_hooks`` measures the same for a step without
checkpointing (the two agree to the byte); selective checkpointing keeps its saved values
in a cache of its own, which no saved-tensor hook sees.
"""

from __future__ import annotations

import itertools
from collections import Counter

import attrs
import pytest

torch = pytest.importorskip("torch")

from autotm_torch.policy import (  # noqa: E402
    Decision,
    checkpoint_policy,
    forward_end,
    load_policy,
)
from autotm_torch.replay_eager import StorageTracker  # noqa: E402
from execution_models import round_trips, two_pools  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.checkpoint import CheckpointPolicy, checkpoint  # noqa: E402
from torch_models import CheckpointedMLP, DropoutMLP, InPlace  # noqa: E402

from autotm_core import FormatError, get_frontend  # noqa: E402
from autotm_core.baselines import all_fast  # noqa: E402
from autotm_core.costs import roofline_costs  # noqa: E402
from autotm_core.planning import Limit, PlanSettings, Problem, plan  # noqa: E402
from autotm_core.presets import preset  # noqa: E402

SAVED_TOLERANCE = 0.01
"""Measured bytes left for the backward pass may differ from the plan's by this fraction
(measured: equal to the byte)."""


def _storage(tensor):
    from torch.multiprocessing.reductions import StorageWeakRef

    return StorageWeakRef(tensor.untyped_storage())


class _Made(TorchDispatchMode):
    """Tracks every storage an op makes (the others' left out)."""

    def __init__(self, others) -> None:
        super().__init__()
        self.others = others
        self.tracker = StorageTracker()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.tracker.add([t for t in torch.utils._pytree.tree_leaves(out)
                          if isinstance(t, torch.Tensor) and _storage(t) not in self.others])
        return out


@attrs.frozen
class Step:
    loss: torch.Tensor
    grads: list
    left_nbytes: int
    """Bytes the forward pass left for the backward pass (storage liveness)."""
    hooked_nbytes: int
    """Bytes saved-tensor hooks saw saved (parameters and inputs left out)."""


def _step(model, loss_fn, inputs, *, policy_fn=None, seed=0) -> Step:
    """One forward and backward pass, checkpointed with ``policy_fn`` when given."""
    model.zero_grad(set_to_none=True)
    others = {_storage(t) for t in itertools.chain(model.parameters(), model.buffers(), inputs)}
    hooked: dict = {}

    def pack(tensor):
        if _storage(tensor) not in others:
            hooked[_storage(tensor)] = tensor.untyped_storage().nbytes()
        return tensor

    def forward(*args):
        return loss_fn(model(*args[:-1]), args[-1])

    torch.manual_seed(seed)
    made = _Made(others)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), made:
        if policy_fn is None:
            loss = forward(*inputs)
        else:
            loss = checkpoint(forward, *inputs, use_reentrant=False,
                              context_fn=policy_fn.context_fn)
    left = made.tracker.live_nbytes() - loss.untyped_storage().nbytes()
    loss.backward()
    return Step(loss.detach(), [p.grad.clone() for p in model.parameters()], left,
                sum(hooked.values()))


def _same_numbers(step: Step, reference: Step) -> None:
    torch.testing.assert_close(step.loss, reference.loss)
    for got, want in zip(step.grads, reference.grads, strict=True):
        torch.testing.assert_close(got, want)


def hf_step(model, batch, policy_fn=None, *, seed: int | None = None):
    """One forward and backward pass of a Hugging Face model on ``batch`` (its own loss),
    checkpointed with ``policy_fn`` when given, from ``seed`` when given: the loss and the
    gradients."""
    model.zero_grad(set_to_none=True)
    if seed is not None:
        torch.manual_seed(seed)
    if policy_fn is None:
        loss = model(**batch).loss
    else:
        loss = checkpoint(lambda b: model(**b).loss, batch, use_reentrant=False,
                          context_fn=policy_fn.context_fn)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _capture(model, inputs, loss_fn):
    return get_frontend("torch").load(model, inputs[:-1], loss=loss_fn, targets=inputs[-1:],
                                      optimizer="sgd")


def _forward(graph):
    return [(k.module, k.op) for k in graph.kernels[:forward_end(graph) + 1]]


@pytest.fixture(scope="module")
def residual():
    """A residual MLP (width 64, 3 blocks, batch 512), its graph, and the synchronous ILP's
    plan with recomputation at 80% of the peak on gpu-h200."""
    torch.manual_seed(0)
    model, loss_fn = CheckpointedMLP(width=64), nn.CrossEntropyLoss()
    inputs = (torch.randn(512, 8), torch.randint(0, 4, (512,)))
    graph = _capture(model, inputs, loss_fn)
    system = preset("gpu-h200")
    limit = Limit.from_options(nbytes=int(graph.liveness.peak_nbytes * 0.8))
    problem = Problem(graph=graph, system=system, costs=roofline_costs(graph, system),
                      limit=limit)
    made = plan(problem, "synchronous", PlanSettings(recompute=True, time_limit_seconds=120))
    return model, loss_fn, inputs, graph, made.plan


@pytest.mark.slow
@pytest.mark.highs
def test_a_plan_with_reruns_becomes_a_policy_keeping_what_the_plan_keeps(residual):
    model, loss_fn, inputs, graph, made = residual
    assert made.reruns
    policy = checkpoint_policy(made, graph)
    # which reruns the (time-limited) search picks varies; those a policy cannot express
    # (a value kept over the forward pass's end and dropped later) are listed with why
    assert policy.counts["recompute"] >= 1
    assert all(u.reason for u in policy.unexpressed)
    assert policy.recomputed_nbytes > 0
    eager = _step(model, loss_fn, inputs)
    # without checkpointing, autograd keeps every activation the backward pass reads
    assert eager.left_nbytes == eager.hooked_nbytes \
        == policy.kept_nbytes + policy.recomputed_nbytes
    with policy.attach(model) as policy_fn:
        checkpointed = _step(model, loss_fn, inputs, policy_fn=policy_fn)
        assert [(m, op) for m, op, _, _ in policy_fn.seen] == _forward(graph)
        assert not policy_fn.unmatched
    _same_numbers(checkpointed, eager)
    assert checkpointed.left_nbytes == pytest.approx(policy.kept_nbytes, rel=SAVED_TOLERANCE)
    assert checkpointed.left_nbytes < eager.left_nbytes
    assert checkpointed.hooked_nbytes == 0  # selective checkpointing's cache is no saved tensor


@pytest.mark.slow
@pytest.mark.highs
def test_the_policy_holds_the_plans_rerun_chain(residual):
    _, _, _, graph, made = residual
    policy = checkpoint_policy(made, graph)
    recomputed = {op.kernel for op in policy.ops if op.decision is Decision.RECOMPUTE}
    unexpressed = {u.kernel for u in policy.unexpressed}
    assert {graph.kernels[r.kernel].name for r in made.reruns} <= recomputed | unexpressed
    by_kernel = {op.kernel: op for op in policy.ops}
    relu = next(k for k in recomputed if k.startswith("relu"))
    assert by_kernel[relu].module.startswith("blocks.") and by_kernel[relu].op == "aten::relu"


def _small(model_class):
    torch.manual_seed(0)
    model, loss_fn = model_class(), nn.CrossEntropyLoss()
    inputs = (torch.randn(4, 8), torch.randint(0, 4 if model_class is not InPlace else 8, (4,)))
    return model, loss_fn, inputs, _capture(model, inputs, loss_fn)


def test_policy_files_round_trip_and_others_are_refused(tmp_path):
    *_, graph = _small(CheckpointedMLP)
    policy = checkpoint_policy(all_fast(graph, preset("gpu-h200")), graph)
    path = tmp_path / "policy.json"
    policy.save(path)
    assert load_policy(path) == policy
    # all kept; what is saved besides is the loss (4 bytes), nll_loss_forward's other output
    assert policy.counts["recompute"] == 0 and policy.kept_nbytes == policy.saved_nbytes - 4
    (tmp_path / "other.json").write_text('{"format": "autotm-core/plan", "version": 2}')
    for name, message in (("other.json", "not a checkpoint-policy file"),
                          ("missing.json", "cannot read")):
        with pytest.raises(FormatError, match=message):
            load_policy(tmp_path / name)


def test_writers_of_one_storage_share_a_decision_and_replay_consistently():
    for model_class in (DropoutMLP, InPlace):
        model, loss_fn, inputs, graph = _small(model_class)
        policy = checkpoint_policy(all_fast(graph, preset("gpu-h200")), graph)
        decisions = {op.op: op.decision for op in policy.ops}
        if model_class is DropoutMLP:
            # the noise: made by empty_like, filled by bernoulli_ and div_: one decision
            assert {decisions[op] for op in ("aten::empty_like", "aten::bernoulli_",
                                             "aten::div_")} == {Decision.SAVE}
            # and what reads the kept noise may be recomputed: ask for it
            ops = tuple(attrs.evolve(op, decision=Decision.RECOMPUTE) if op.op == "aten::mul"
                        else op for op in policy.ops)
            policy = attrs.evolve(policy, ops=ops)
        else:
            assert decisions["aten::addmm"] is decisions["aten::relu_"] is Decision.SAVE
        eager = _step(model, loss_fn, inputs, seed=1)
        with policy.attach(model) as policy_fn:
            checkpointed = _step(model, loss_fn, inputs, policy_fn=policy_fn, seed=1)
            assert not policy_fn.unmatched
        _same_numbers(checkpointed, eager)


def test_offloaded_activations_are_saved_unless_asked_otherwise():
    torch.manual_seed(0)
    model, loss_fn = CheckpointedMLP(width=16), nn.CrossEntropyLoss()
    inputs = (torch.randn(8, 8), torch.randint(0, 4, (8,)))
    graph = _capture(model, inputs, loss_fn)
    system = two_pools(1 << 20)
    policy = checkpoint_policy(round_trips(graph, system), graph)
    assert policy.counts["offload"] and policy.offloaded_nbytes
    eager = _step(model, loss_fn, inputs)
    with policy.attach(model) as policy_fn:
        saved = _step(model, loss_fn, inputs, policy_fn=policy_fn)
        by_decision = Counter(d for *_, d in policy_fn.seen)
    assert by_decision[Decision.OFFLOAD] == policy.counts["offload"]
    _same_numbers(saved, eager)
    assert saved.left_nbytes == pytest.approx(policy.kept_nbytes, rel=SAVED_TOLERANCE)
    with policy.attach(model, offload=CheckpointPolicy.MUST_CPU_OFFLOAD) as policy_fn:
        offload = [policy_fn._torch[Decision.OFFLOAD]]
    assert offload == [CheckpointPolicy.MUST_CPU_OFFLOAD]


def test_torch_2_13_eager_recomputes_what_is_marked_cpu_offload():
    """What docs/torch-execution.md says of MUST_CPU_OFFLOAD; this fails once eager
    checkpointing carries the mark out."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    ran: list[str] = []

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ran.append(func.__name__)
            return func(*args, **(kwargs or {}))

    def policy_fn(ctx, op, *args, **kwargs):
        return (CheckpointPolicy.MUST_CPU_OFFLOAD if op is torch.ops.aten.mm.default
                else CheckpointPolicy.MUST_SAVE)

    x, w = torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)
    out = checkpoint(lambda a, b: torch.sin(a @ b).sum(), x, w, use_reentrant=False,
                     context_fn=lambda: create_selective_checkpoint_contexts(policy_fn))
    with Ops():
        out.backward()
    assert ran.count("mm.default") == 3  # the forward's mm again, then its two gradients


@pytest.mark.slow
def test_gpt2_ops_are_found_by_module_but_for_the_mask_the_capture_builds():
    pytest.importorskip("transformers")
    import hf_models

    model, batch = hf_models.model("gpt2"), hf_models.batch()
    graph = get_frontend("torch").load(model, batch, loss="output", optimizer="adamw")
    policy = checkpoint_policy(all_fast(graph, preset("gpu-h200")), graph)

    model.train()
    eager = hf_step(model, batch)
    with policy.attach(model) as policy_fn:
        loss, grads = hf_step(model, batch, policy_fn)
        found = [(m, op) for m, op, _, d in policy_fn.seen if d is not None]
        unmatched = dict(policy_fn.unmatched)
    torch.testing.assert_close(loss, eager[0])
    for got, want in zip(grads, eager[1], strict=True):
        torch.testing.assert_close(got, want)
    # every op of the blocks, embeddings and head is found; eager GPT-2 on the CPU builds no
    # causal mask (sdpa's is_causal) where the capture, tracing as torch.compile does, built
    # one in 'transformer': those ops the policy lacks
    assert {m for m, _ in unmatched} == {"transformer"}
    blocks = [(m, op) for m, op in _forward(graph) if m.startswith("transformer.h.")
              and op not in ("aten::scalar_tensor", "aten::where")]
    assert [f for f in found if f[0].startswith("transformer.h.")] == blocks


@pytest.mark.slow
@pytest.mark.highs
def test_export_policy_from_the_command_line_and_apply_it(tmp_path, capsys):
    from functools import partial
    from pathlib import Path

    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    from torch_models import checkpointed_factory

    from autotm_core.cli.main import main

    spec = f"{Path(__file__).parent / 'torch_models.py'}:checkpointed_factory"
    graph, made, written = (str(tmp_path / n) for n in ("graph.json", "plan.json", "p.json"))
    assert main(["import", "torch", spec, "--batch-size", "256", "-o", graph]) == 0
    assert main(["solve", graph, "--system", "gpu-h200", "--ratio", "1:4", "--recompute",
                 "--time-limit", "60", "-o", made]) == 0
    capsys.readouterr()
    assert main(["export-policy", made, "--graph", graph, "-o", written]) == 0
    assert "recompute: " in capsys.readouterr().out
    policy = load_policy(written)
    assert policy.counts["recompute"] >= 1
    again = str(tmp_path / "again.json")
    assert main(["export-policy", made, "--graph", f"torch:{spec}", "--batch-size", "256",
                 "-o", again]) == 0
    assert load_policy(again) == policy
    # the lines of docs/torch-execution.md
    factory = checkpointed_factory(batch_size=256)
    model, (x,), loss_fn, (y,) = (factory[k] for k in ("model", "example_inputs", "loss",
                                                        "targets"))
    eager = _step(model, loss_fn, (x, y))
    model.zero_grad(set_to_none=True)
    policy_fn = load_policy(written).attach(model)
    context_fn = partial(create_selective_checkpoint_contexts, policy_fn,
                         allow_cache_entry_mutation=True)
    loss = checkpoint(lambda x, y: loss_fn(model(x), y), x, y, use_reentrant=False,
                      context_fn=context_fn)
    loss.backward()
    assert not policy_fn.unmatched
    torch.testing.assert_close(loss.detach(), eager.loss)
    for p, want in zip(model.parameters(), eager.grads, strict=True):
        torch.testing.assert_close(p.grad, want)


def test_ops_that_must_not_replay_are_saved_with_every_output():
    """Batch-norm in training updates its running statistics, so it is saved, never
    replayed; selective checkpointing then caches its normalised output too, which the
    backward pass does not read: the policy holds more than the plan keeps (here, more
    than eager PyTorch), exactly its ``saved_nbytes``."""
    from execution_models import SmallResNet

    torch.manual_seed(0)
    model, loss_fn = SmallResNet(), nn.CrossEntropyLoss()
    inputs = (torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,)))
    graph = _capture(model, inputs, loss_fn)
    policy = checkpoint_policy(all_fast(graph, preset("gpu-h200")), graph)
    norms = [op for op in policy.ops if op.op == "aten::native_batch_norm"]
    assert norms and all(op.decision is Decision.SAVE for op in norms)
    eager = _step(model, loss_fn, inputs)
    with policy.attach(model) as policy_fn:
        checkpointed = _step(model, loss_fn, inputs, policy_fn=policy_fn)
        assert not policy_fn.unmatched
    _same_numbers(checkpointed, eager)
    assert eager.left_nbytes == policy.kept_nbytes  # all kept: autograd's own saved set
    assert checkpointed.left_nbytes == policy.saved_nbytes - 4  # less the loss
    assert policy.saved_nbytes > policy.kept_nbytes + 4


def test_export_policy_warns_when_the_policy_holds_more_than_eager(tmp_path, capsys):
    from execution_models import SmallResNet

    from autotm_core import save_graph
    from autotm_core.cli.main import main
    from autotm_core.plans import save_plan

    torch.manual_seed(0)
    model, loss_fn = SmallResNet(), nn.CrossEntropyLoss()
    inputs = (torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2,)))
    graphs = {"resnet": _capture(model, inputs, loss_fn), "mlp": _small(CheckpointedMLP)[-1]}
    for name, graph in graphs.items():
        graph_path, plan_path = tmp_path / f"{name}.json", tmp_path / f"{name}-plan.json"
        save_graph(graph, graph_path)
        save_plan(all_fast(graph, preset("gpu-h200")), plan_path)
        capsys.readouterr()
        assert main(["export-policy", str(plan_path), "--graph", str(graph_path),
                     "-o", str(tmp_path / f"{name}-policy.json")]) == 0
        warned = "more than no checkpointing keeps" in capsys.readouterr().out
        assert warned is (name == "resnet")  # batch-norm saved whole; the MLP keeps alike
