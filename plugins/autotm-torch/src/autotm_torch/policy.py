"""A plan's decisions as a PyTorch selective activation-checkpointing policy.

:func:`checkpoint_policy` reads, for one training step the torch frontend captured, what a
plan does with each activation the backward pass reads once the forward pass is over: it
keeps it in the fastest pool, keeps it only in a slower one (moved there, or made there),
or drops it and reruns its producer before the backward pass needs it
(:class:`~autotm_core.plans.Rerun`). Each forward kernel gets one :class:`Decision`;
:class:`Policy` holds them by *op identity*, so that they apply to the user's own module:
the module the op runs in (``Kernel.module``), its ATen op, and how many kernels of that op
ran in that module before it in the forward pass.

At run time, :meth:`Policy.attach` puts forward hooks on the model's modules (which module
runs each op) and returns a :class:`PolicyFunction` for
``torch.utils.checkpoint.create_selective_checkpoint_contexts``. It counts the op calls the
lowering makes kernels of (:func:`autotm_torch.lower.is_kernel`: views and ops with
nothing to store are none), so its identities are the capture's.

How a decision becomes a ``CheckpointPolicy`` (:data:`TORCH_POLICY`):

- ``recompute`` -> ``MUST_RECOMPUTE``: the plan drops its outputs over the end of the
  forward pass and reruns it;
- ``save`` -> ``MUST_SAVE``: the plan keeps an output in the fastest pool, or the op may
  not be replayed (random, a side effect, an in-place write, a reader of a storage a later
  forward op writes: replaying it would read or make another value);
- ``offload`` -> ``MUST_SAVE`` by default: the plan keeps its outputs in a slower pool only.
  torch 2.13 has ``MUST_CPU_OFFLOAD`` but carries it out nowhere: eager selective
  checkpointing recomputes such an op, and torch.compile's partitioner reads no offload
  mark from it. ``attach(..., offload=CheckpointPolicy.MUST_CPU_OFFLOAD)`` asks for it
  where a torch does;
- ``free`` -> ``PREFER_RECOMPUTE``: the backward pass reads none of its outputs; eager
  checkpointing replays it when it replays the region, torch.compile only where needed.

Writers of one storage (a tensor made, then written in place: CPU dropout's noise, an
in-place ``relu_``) get one decision, so that a replay never mixes a cached write with a
recomputed one. Random ops (autotm-core's names: ``bernoulli_``, ``native_dropout``,
``rand*`` ...) are recomputed only while no random op before them in the forward pass is
saved: ``torch.utils.checkpoint`` restores the generator's state once, where the region
begins, and a saved op draws nothing when the region is replayed, so a random op after it
would draw other numbers. Reruns a checkpoint policy cannot say are listed in
:attr:`Policy.unexpressed` with why: a rerun within the forward pass, of a backward kernel,
of a value kept over the end of the forward pass and dropped later, or of a random op after
a saved one.
"""

from __future__ import annotations

import enum
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from autotm_core.errors import FormatError, PluginError, UsageError
from autotm_core.ir import Graph, TensorKind, reruns_safely
from autotm_core.plans import MoveKind, Plan

FORMAT = "autotm-torch/checkpoint-policy"
"""The ``format`` of a policy file."""
VERSION = 1
"""The ``version`` of a policy file this module writes and reads."""
LOSS = "output:loss"
"""The loss tensor of a training step the torch frontend captured: the forward pass ends
with the last kernel before the first one that reads it (the backward pass's seed)."""


class Decision(enum.Enum):
    """What a forward op's outputs become between the forward and the backward pass."""

    SAVE = "save"
    """Kept for the backward pass (in the fastest pool), or never replayed."""
    RECOMPUTE = "recompute"
    """Dropped; the op runs again before the backward pass reads its outputs."""
    OFFLOAD = "offload"
    """Kept in a slower pool only."""
    FREE = "free"
    """Read by no backward op: nothing to keep."""


@attrs.frozen
class OpDecision:
    """The decision for one forward op, by its identity."""

    module: str
    """The module it runs in (``Kernel.module``; ``""``: the model's own forward, or none)."""
    op: str
    """Its ATen op (``"aten::addmm"``)."""
    index: int
    """How many kernels of ``op`` ran in ``module`` before it in the forward pass."""
    decision: Decision
    """What the plan does with its outputs."""
    kernel: str = ""
    """The graph's kernel (the FX node's name), for people."""
    nbytes: int = 0
    """Bytes of the storages it writes (an in-place writer's too)."""

    @property
    def key(self) -> tuple[str, str, int]:
        """``(module, op, index)``: its identity."""
        return self.module, self.op, self.index


@attrs.frozen
class Unexpressed:
    """A rerun of the plan that no checkpoint policy says."""

    kernel: str
    """The kernel the plan runs again."""
    before: str
    """The kernel it runs again before."""
    reason: str
    """Why a policy cannot say it."""


@attrs.frozen
class Policy:
    """A plan's decisions for one model's forward ops (see the module doc)."""

    graph: str
    """The graph's name."""
    planner: str
    """Who made the plan."""
    system: str
    """The memory system it was made for."""
    fast_pool: str
    """The pool a kept output must be in to be ``save`` rather than ``offload``."""
    ops: tuple[OpDecision, ...]
    """One decision per forward kernel, in forward order."""
    unexpressed: tuple[Unexpressed, ...] = ()
    """Reruns of the plan no policy says."""
    kept_nbytes: int = 0
    """Bytes of activations the backward pass reads that the plan keeps over the end of the
    forward pass (in any pool)."""
    offloaded_nbytes: int = 0
    """Of :attr:`kept_nbytes`, those kept in slower pools only."""
    recomputed_nbytes: int = 0
    """Bytes of activations the backward pass reads that the plan drops and recomputes."""
    saved_nbytes: int = 0
    """Bytes of the storages the ops saved or offloaded make, each once (not the parameters
    and buffers they update in place): what selective checkpointing holds from the forward
    pass, since it caches an op's every output."""

    @property
    def counts(self) -> dict[str, int]:
        """Ops per decision, every decision named."""
        found = Counter(op.decision for op in self.ops)
        return {d.value: found[d] for d in Decision}

    def decision(self, module: str, op: str, index: int) -> Decision | None:
        """The decision for this op identity, or ``None`` when the policy has none."""
        return self._table.get((module, op, index))

    @property
    def _table(self) -> dict[tuple[str, str, int], Decision]:
        return {op.key: op.decision for op in self.ops}

    def attach(self, model: Any, *, offload: Any = None) -> PolicyFunction:
        """A policy function for ``model`` (the module the policy was captured from, or one
        built alike), with forward hooks on its modules; ``offload`` is the
        ``CheckpointPolicy`` of the ``offload`` decision (default ``MUST_SAVE``)."""
        return PolicyFunction(self, model, offload=offload)

    def to_json(self) -> dict[str, Any]:
        """The policy file's document (docs/torch-execution.md)."""
        return {
            "format": FORMAT, "version": VERSION, "graph": self.graph, "planner": self.planner,
            "system": self.system, "fast_pool": self.fast_pool,
            "summary": {"ops": self.counts, "kept_nbytes": self.kept_nbytes,
                        "offloaded_nbytes": self.offloaded_nbytes,
                        "recomputed_nbytes": self.recomputed_nbytes,
                        "saved_nbytes": self.saved_nbytes},
            "ops": [{"module": op.module, "op": op.op, "index": op.index,
                     "decision": op.decision.value, "kernel": op.kernel, "nbytes": op.nbytes}
                    for op in self.ops],
            "unexpressed": [attrs.asdict(u) for u in self.unexpressed],
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the policy file (JSON)."""
        target = Path(path)
        partial = target.with_name(target.name + ".partial")
        doc = self.to_json()
        lists = {key: doc.pop(key) for key in ("ops", "unexpressed")}
        text = json.dumps(doc, indent=1)[:-2]  # open: the lists follow, an item a line
        for key, items in lists.items():
            lines = ",\n  ".join(json.dumps(item) for item in items)
            text += f',\n "{key}": ' + (f"[\n  {lines}\n ]" if items else "[]")
        partial.write_text(text + "\n}\n", encoding="utf-8")
        partial.replace(target)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """The policy a file written by :meth:`Policy.save` holds."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FormatError(f"{path}: cannot read the policy file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"{path}: not a checkpoint-policy file (format {FORMAT!r})",
                          hint="write one with 'python -m autotm_core export-policy'")
    if doc.get("version") != VERSION:
        raise FormatError(f"{path}: policy file version {doc.get('version')!r}; this "
                          f"autotm-torch reads version {VERSION}")
    try:
        ops = tuple(OpDecision(str(o["module"]), str(o["op"]), int(o["index"]),
                               Decision(o["decision"]), str(o.get("kernel", "")),
                               int(o.get("nbytes", 0))) for o in doc["ops"])
        unexpressed = tuple(Unexpressed(str(u["kernel"]), str(u["before"]), str(u["reason"]))
                            for u in doc.get("unexpressed", ()))
        summary = doc.get("summary", {})
        return Policy(str(doc["graph"]), str(doc.get("planner", "")), str(doc.get("system", "")),
                      str(doc["fast_pool"]), ops, unexpressed,
                      int(summary.get("kept_nbytes", 0)), int(summary.get("offloaded_nbytes", 0)),
                      int(summary.get("recomputed_nbytes", 0)),
                      int(summary.get("saved_nbytes", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"{path}: malformed policy file: {exc!r}") from None


def forward_end(graph: Graph) -> int:
    """Position of the forward pass's last kernel (the loss and its ops included)."""
    try:
        loss = graph.tensor_index[LOSS]
    except KeyError:
        raise UsageError(
            f"graph {graph.name!r} has no tensor {LOSS!r}: a checkpoint policy is for a "
            "training step the torch frontend captured",
            hint="capture the step with a loss and an optimizer (import torch SPEC)") from None
    producer = int(graph.liveness.producer[loss])
    for k in range(producer + 1, len(graph.kernels)):
        if LOSS in graph.kernels[k].inputs:
            return k - 1
    return producer


def checkpoint_policy(plan: Plan, graph: Graph, *, fast_pool: str | None = None) -> Policy:
    """The checkpoint policy of ``plan`` for ``graph`` (a training step the torch frontend
    captured); ``fast_pool`` is the fastest pool (default: the plan's first)."""
    if plan.graph != graph.name:
        raise UsageError(f"the plan is for graph {plan.graph!r}, not {graph.name!r}",
                         hint="give the graph the plan was made for")
    fast = fast_pool if fast_pool is not None else next(iter(plan.capacities), "")
    if fast not in plan.capacities:
        raise UsageError(f"pool {fast!r} is none of the plan's ({', '.join(plan.capacities)})")
    end = forward_end(graph)
    where = _where_at_boundary(plan, graph, end)
    live, facts = graph.liveness, graph.recompute
    index = graph.tensor_index
    crossing = [t for t, tensor in enumerate(graph.tensors)
                if tensor.kind is TensorKind.ACTIVATION and 0 <= live.producer[t] <= end
                < live.last[t]]
    kept = {t for t in crossing if where.get(t)}
    offloaded = {t for t in kept if fast not in where[t]}
    recompute, unexpressed = _reruns(plan, graph, end, crossing, kept)
    decisions: dict[int, Decision] = {}
    for k, kernel in enumerate(graph.kernels[:end + 1]):
        outs = [index[name] for name in kernel.outputs]
        if k in recompute:
            decisions[k] = Decision.RECOMPUTE
        elif any(t in kept and t not in offloaded for t in outs):
            decisions[k] = Decision.SAVE
        elif any(t in offloaded for t in outs):
            decisions[k] = Decision.OFFLOAD
        elif not facts.rerunnable[k] or _reads_later_writes(graph, k, end):
            decisions[k] = Decision.SAVE
        else:
            decisions[k] = Decision.FREE
    _one_decision_per_storage(graph, end, decisions, offloaded, recompute, unexpressed)
    while _random_after_saved(graph, end, decisions, recompute, unexpressed):
        _one_decision_per_storage(graph, end, decisions, offloaded, recompute, unexpressed)
    counts: Counter[tuple[str, str]] = Counter()
    ops = []
    for k, kernel in enumerate(graph.kernels[:end + 1]):
        key = (kernel.module, kernel.op)
        ops.append(OpDecision(kernel.module, kernel.op, counts[key], decisions[k], kernel.name,
                              sum(graph.tensors[index[o]].nbytes for o in kernel.outputs)))
        counts[key] += 1
    nbytes = live.nbytes
    saved = {t for k, d in decisions.items() if d in (Decision.SAVE, Decision.OFFLOAD)
             for t in (index[o] for o in graph.kernels[k].outputs)
             if not graph.tensors[t].kind.exists_before_step}  # not a parameter's update
    return Policy(graph.name, plan.planner, plan.system, fast, tuple(ops), tuple(unexpressed),
                  int(sum(nbytes[t] for t in kept)), int(sum(nbytes[t] for t in offloaded)),
                  int(sum(nbytes[t] for t in crossing if t not in kept)),
                  int(sum(nbytes[t] for t in saved)))


def _where_at_boundary(plan: Plan, graph: Graph, end: int) -> dict[int, set[str]]:
    """The pools each tensor is in over the end of the forward pass (between kernel ``end``
    and ``end + 1``): a residency covers both, or one ending at ``end`` is the source of a
    synchronous move landing at ``end + 1``. A residency beginning at ``end + 1`` otherwise
    is a value restored by a rerun, not kept."""
    index = graph.tensor_index
    leaving = {(m.tensor, m.source): m.target for m in plan.moves
               if m.kind is MoveKind.SYNC and m.kernel == end + 1}
    where: dict[int, set[str]] = {}
    for r in plan.residencies:
        if r.first <= end < r.last:
            where.setdefault(index[r.tensor], set()).add(r.pool)
        elif r.last == end and (r.tensor, r.pool) in leaving:
            where.setdefault(index[r.tensor], set()).add(leaving[r.tensor, r.pool])
    return where


def _reruns(plan: Plan, graph: Graph, end: int, crossing: list[int],
            kept: set[int]) -> tuple[dict[int, int], list[Unexpressed]]:
    """The forward kernels the plan recomputes for the backward pass (each with the first
    kernel it reruns before), and the reruns no policy says.

    A forward kernel is recomputed when the plan drops an output of it the backward pass
    reads over the end of the forward pass and reruns it in the backward pass, or reruns it
    there to make an input of such a rerun at the same boundary (a chain)."""
    index = graph.tensor_index
    dropped = set(crossing) - kept
    recompute: dict[int, int] = {}
    unexpressed = []
    chained: list[tuple[int, int]] = []
    for rerun in plan.reruns:
        k, b = rerun.kernel, rerun.before
        names = graph.kernels[k].name, graph.kernels[b].name
        outputs = [index[o] for o in graph.kernels[k].outputs]
        if k > end:
            unexpressed.append(Unexpressed(*names, "a backward kernel: a checkpoint policy "
                                           "says what the forward pass keeps"))
        elif b <= end:
            unexpressed.append(Unexpressed(*names, "within the forward pass: torch keeps a "
                                           "value while the forward pass still uses it"))
        elif any(t in kept for t in outputs):
            unexpressed.append(Unexpressed(*names, "its outputs are kept over the end of the "
                                           "forward pass and dropped later: a policy drops a "
                                           "value for the whole backward pass or keeps it"))
        elif any(t in dropped for t in outputs):
            recompute.setdefault(k, b)
        else:
            chained.append((k, b))
    at = {(k, b) for rerun in plan.reruns for k, b in [(rerun.kernel, rerun.before)]
          if k in recompute}
    feeding = True
    while feeding:
        feeding = False
        for k, b in chained:
            outputs = set(graph.kernels[k].outputs)
            if k not in recompute and any(
                    b2 == b and outputs & set(graph.kernels[k2].inputs) for k2, b2 in at):
                recompute[k] = b
                at.add((k, b))
                feeding = True
    unexpressed += [Unexpressed(graph.kernels[k].name, graph.kernels[b].name,
                                "it makes only inputs of reruns no policy says")
                    for k, b in chained if k not in recompute]
    return recompute, unexpressed


def _reads_later_writes(graph: Graph, k: int, end: int) -> bool:
    """Whether forward kernel ``k`` reads a storage a later forward kernel writes: replayed
    after that write's cached value, it would read another value than it did."""
    facts, index = graph.recompute, graph.tensor_index
    for name in graph.kernels[k].inputs:
        u = index[name]
        writes = facts.write_kernels[facts.write_ptr[u]:facts.write_ptr[u + 1]]
        if ((writes > k) & (writes <= end)).any():
            return True
    return False


def _one_decision_per_storage(graph: Graph, end: int, decisions: dict[int, Decision],
                              offloaded: set[int], recompute: Mapping[int, int],
                              unexpressed: list[Unexpressed]) -> None:
    """Give every forward writer of a storage written more than once one decision: saved
    (or offloaded) when any of them is, so that a replay never mixes a cached write with a
    recomputed one; a rerun the plan chose is then listed as unexpressed."""
    facts = graph.recompute
    keeping = (Decision.SAVE, Decision.OFFLOAD)
    changed = True
    while changed:
        changed = False
        for t in range(len(graph.tensors)):
            writes = facts.write_kernels[facts.write_ptr[t]:facts.write_ptr[t + 1]]
            writers = [int(w) for w in writes if w <= end]
            if len(writers) < 2 or not any(decisions[w] in keeping for w in writers):
                continue
            target = Decision.OFFLOAD if t in offloaded else Decision.SAVE
            for w in writers:
                if decisions[w] in keeping:
                    continue
                if decisions[w] is Decision.RECOMPUTE:
                    unexpressed.append(Unexpressed(
                        graph.kernels[w].name, graph.kernels[recompute[w]].name, (
                        f"writes {graph.tensors[t].name!r}, which other forward kernels write "
                        "in place and keep: saved instead")))
                decisions[w] = target
                changed = True


def _random_after_saved(graph: Graph, end: int, decisions: dict[int, Decision],
                        recompute: Mapping[int, int], unexpressed: list[Unexpressed]) -> bool:
    """Save the first random op recomputed after a saved one (see the module doc), listing
    its rerun as unexpressed; whether one was."""
    saved = False
    for k, kernel in enumerate(graph.kernels[:end + 1]):
        if reruns_safely(kernel.op):
            continue
        if decisions[k] in (Decision.SAVE, Decision.OFFLOAD):
            saved = True
        elif decisions[k] is Decision.RECOMPUTE and saved:
            unexpressed.append(Unexpressed(
                kernel.name, graph.kernels[recompute[k]].name,
                "a random op after a saved one: replayed from the generator state of the "
                "region's start, it would draw other numbers; saved instead"))
            decisions[k] = Decision.SAVE
            return True
    return False


class PolicyFunction:
    """``policy_fn(ctx, op, *args, **kwargs) -> CheckpointPolicy`` of a :class:`Policy`
    for one model, for ``torch.utils.checkpoint.create_selective_checkpoint_contexts``.

    Forward hooks on the model's modules track the module each op runs in; the model's own
    forward begins a new count (so a module called outside it counts on). An op call that
    is no kernel (a view, nothing stored) is ``PREFER_RECOMPUTE``; a kernel whose identity
    the policy lacks too, counted in :attr:`unmatched`. :meth:`remove` takes the hooks off
    (or use it in a ``with``).
    """

    def __init__(self, policy: Policy, model: Any, *, offload: Any = None) -> None:
        from torch.utils.checkpoint import CheckpointPolicy

        self.policy = policy
        self._decisions = policy._table
        self._torch = {Decision.SAVE: CheckpointPolicy.MUST_SAVE,
                       Decision.RECOMPUTE: CheckpointPolicy.MUST_RECOMPUTE,
                       Decision.OFFLOAD: offload if offload is not None
                       else CheckpointPolicy.MUST_SAVE,
                       Decision.FREE: CheckpointPolicy.PREFER_RECOMPUTE}
        self._other = CheckpointPolicy.PREFER_RECOMPUTE
        self._counts: Counter[tuple[str, str]] = Counter()
        self._stack: list[str] = []
        self.unmatched: Counter[tuple[str, str]] = Counter()
        """Kernels of the last forward pass the policy has no decision for, by
        ``(module, op)``."""
        self.seen: list[tuple[str, str, int, Decision | None]] = []
        """Every kernel of the last forward pass, with its identity and decision, in order."""
        self._fresh = True
        self._handles = _hooks(model, self._stack, self._begin)

    def _begin(self) -> None:
        """The model's forward begins (a forward pass, or its replay in the backward pass,
        which asks no policy): its first kernel begins the counts anew."""
        self._fresh = True

    def __call__(self, ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        from autotm_torch.lower import is_kernel

        if not is_kernel(op, args, kwargs, getattr(ctx, "op_output", None)):
            return self._other
        if self._fresh:
            self._fresh = False
            self._counts.clear()
            self.unmatched.clear()
            self.seen.clear()
        module = self._stack[-1] if self._stack else ""
        key = (module, op._schema.name)
        index = self._counts[key]
        self._counts[key] += 1
        decision = self._decisions.get((*key, index))
        self.seen.append((*key, index, decision))
        if decision is None:
            self.unmatched[key] += 1
            return self._other
        return self._torch[decision]

    def context_fn(self) -> Any:
        """The two contexts of ``create_selective_checkpoint_contexts`` for this policy (give
        it as ``checkpoint(..., context_fn=policy_fn.context_fn)``); cached entries may be
        written in place (by the in-place writers saved with them)."""
        from torch.utils.checkpoint import create_selective_checkpoint_contexts

        return create_selective_checkpoint_contexts(self, allow_cache_entry_mutation=True)

    def remove(self) -> None:
        """Take the hooks off the model."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> PolicyFunction:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _hooks(model: Any, stack: list[str], reset: Callable[[], None]) -> list[Any]:
    """Forward hooks keeping ``stack`` the modules running, calling ``reset`` when the
    model's own forward begins."""
    if not hasattr(model, "named_modules"):
        raise UsageError(f"a checkpoint policy attaches to a torch.nn.Module, not a "
                         f"{type(model).__name__}")

    def entering(name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any) -> None:
            if not stack and not name:
                reset()
            stack.append(name)
        return hook

    def leaving(module: Any, args: Any, output: Any) -> None:
        if stack:
            stack.pop()

    handles = []
    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(entering(name)))
        handles.append(module.register_forward_hook(leaving, always_call=True))
    return handles


def export_policy(plan: Plan, graph: Graph, *, fast_pool: str,
                  path: str | os.PathLike[str]) -> Mapping[str, int]:
    """Write the checkpoint policy of ``plan`` to ``path``; its summary (ops per decision,
    bytes kept, offloaded, recomputed and saved, reruns unexpressed)."""
    policy = checkpoint_policy(plan, graph, fast_pool=fast_pool)
    if not policy.ops:
        raise PluginError(f"graph {graph.name!r} has no forward kernel")
    policy.save(path)
    return {**policy.counts, "kept_nbytes": policy.kept_nbytes,
            "offloaded_nbytes": policy.offloaded_nbytes,
            "recomputed_nbytes": policy.recomputed_nbytes, "saved_nbytes": policy.saved_nbytes,
            "unexpressed": len(policy.unexpressed)}


__all__ = ["Decision", "OpDecision", "Policy", "PolicyFunction", "Unexpressed",
           "checkpoint_policy", "export_policy", "forward_end", "load_policy"]
