"""Checkpoint every layer: what Hugging Face's ``gradient_checkpointing_enable()`` and
``torch.utils.checkpoint`` around each block do.

A kernel's layer is :func:`~autotm_core.ir.layer_of` its module (``"h.3"`` for
``"h.3.attn.c_attn"``) when that ends in a number: a block of the model's layer list, as
Hugging Face checkpoints its decoder layers and not its embeddings, final norm or head.
Forward kernels (those before the backward pass, :mod:`.saved`) in no such block (``"ln_f"``,
``"conv1"``, no module) are never rerun. For each layer:

- it *keeps its inputs*: a tensor that a forward kernel outside the layer reads (the next
  layer's input, what the checkpoint of that layer saves) is never dropped;
- it *drops* every other saved activation its kernels produce that may be recomputed
  (:attr:`~autotm_core.ir.RecomputeFacts.recomputable`: a random op's outputs, such as
  dropout's mask and output, are kept where the graph says their op may not run again; a
  tensor filled in place is rerun with its fills), from its last
  forward use to the boundary before the first backward kernel reading any of the layer's
  dropped activations;
- at that boundary it *reruns* the layer's forward kernels that produce them, in program
  order, chained: a value a rerun reads that is no longer held there (it died in the
  forward pass) is recomputed first by a rerun of its own producer in the layer, or in no
  layer (a value made before the blocks and passed to each, such as Hugging Face GPT-2's
  causal mask, which the checkpoint of a layer keeps as one of its inputs: rerunning its
  producers holds it no longer than that), whose outputs are dropped again after the
  boundary;
- the values restored stay in the fastest pool until their last use.

An activation whose rerun cannot be had (an input neither held at the boundary nor
recomputable in the layer, an input written since the kernel ran, a kernel whose tensors
may not all live in the fastest pool or whose cost table does not price it there) is kept
instead, and the layer's boundary is found again without it. Placement: every tensor in the
fastest pool it may live in when that fits every pool; otherwise the tensors the reruns
read stay in the fastest pool for their life, the restored values from their boundary, and
every other tensor (a dropped one until its gap) is placed first-touch-like
(:func:`.rerun_plan.spill`: in allocation order, in the fastest pool with room for its
life, else the next), with no moves.
"""

from __future__ import annotations

import numpy as np

from autotm_core.baselines.common import Setting, setting
from autotm_core.baselines.rerun_plan import (
    Drop,
    Recompute,
    costs_of,
    may_rerun,
    overflow,
    rerun_plan,
    rerun_summary,
    spill,
)
from autotm_core.baselines.saved import SavedActivations, saved_activations
from autotm_core.costs.model import KernelCosts
from autotm_core.ir import Graph, layer_of
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan

PLANNER = "baseline/checkpoint-layers"


def checkpoint_layers(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """The plan of checkpointing every layer (see the module docstring).

    Raises :class:`CapacityError` naming a pool, where and by how much when even the
    first-touch-like placement of what the reruns do not need finds no room, and
    :class:`PlanError` naming a kernel whose configuration a partial cost table refuses.
    """
    s = setting(graph, system, fast_capacity_nbytes, costs, recompute=True)
    decided, layers = checkpoint_decisions(s)
    pools = s.fastest()
    placement = "all-fast"
    if overflow(s, pools, decided) is not None:
        pinned = np.zeros(len(graph.tensors), dtype=np.bool_)
        index = graph.tensor_index
        for k, _ in decided.reruns:
            pinned[[index[name] for name in graph.kernels[k].inputs]] = True
        pinned[list(decided.drops)] = False  # restored at the boundary, where reruns read them
        pools = spill(s, pinned, decided, what="checkpoint-layers")
        placement = "first-touch"
    return rerun_plan(s, pools, decided, planner=PLANNER, attributes={
        **rerun_summary(s, decided, costs_of(s, costs)),
        "layers": layers,
        "placement": placement,
        "spilled_tensors": int((s.exists & (pools != s.fastest())).sum()),
    })


def checkpoint_decisions(s: Setting) -> tuple[Recompute, int]:
    """The dropped activations and reruns of checkpointing every layer, and how many layers
    drop something."""
    saved = saved_activations(s.graph)
    layer = _layer_ids(s.graph, saved.backward_start)
    rows = _candidates(s, saved, layer)
    decided = Recompute()
    layers = 0
    for members in rows.values():
        found = _checkpoint(s, saved, layer, members)
        if found is not None:
            drops, reruns = found
            decided.drops.update(drops)
            decided.reruns.update(reruns)
            layers += 1
    return decided, layers


def _layer_ids(graph: Graph, backward: int) -> list[int]:
    """Per kernel: a number for its layer, a block of the model's layer list (-1: none, or
    not a forward kernel)."""
    ids: dict[str, int] = {}
    out = []
    for k, kernel in enumerate(graph.kernels):
        name = layer_of(kernel.module) if k < backward else ""
        out.append(ids.setdefault(name, len(ids)) if _numbered(name) else -1)
    return out


def _numbered(layer: str) -> bool:
    """Whether ``layer`` is a block of a layer list (its name ends in a number)."""
    return layer.rpartition(".")[2].isdigit()


def has_layers(graph: Graph) -> bool:
    """Whether some kernel of ``graph`` runs in a block of a layer list: without one the
    baseline checkpoints nothing."""
    return any(_numbered(layer_of(kernel.module)) for kernel in graph.kernels)


def _candidates(s: Setting, saved: SavedActivations, layer: list[int]) -> dict[int, list[int]]:
    """Per layer: rows of the saved activations it may drop (see the module doc)."""
    live, facts = s.graph.liveness, s.graph.recompute
    backward = saved.backward_start
    out: dict[int, list[int]] = {}
    rerunnable: dict[int, bool] = {}
    for i, (t, p) in enumerate(zip(saved.tensors.tolist(), saved.producer.tolist(),
                                   strict=True)):
        own = layer[p]
        if own < 0 or not facts.recomputable[t] or not s.may_be_fast[t]:
            continue
        users = live.users(t)
        if any(layer[k] != own for k in users[users < backward].tolist()):
            continue  # another layer's input: kept, as that layer's checkpoint keeps it
        if p not in rerunnable:
            rerunnable[p] = may_rerun(s, p)
        if rerunnable[p]:
            out.setdefault(own, []).append(i)
    return out


def _checkpoint(s: Setting, saved: SavedActivations, layer: list[int],
                members: list[int]) -> tuple[dict[int, Drop], set[tuple[int, int]]] | None:
    """The drops and reruns of one layer whose candidate rows are ``members``; ``None`` when
    it drops nothing."""
    live, index = s.graph.liveness, s.graph.tensor_index
    facts = s.graph.recompute
    t_of, p_of = saved.tensors, saved.producer
    f_of, u_of = saved.last_forward, saved.first_backward
    while members:
        b = int(min(u_of[i] for i in members))
        gapped = [i for i in members if f_of[i] <= b - 2]
        if len(gapped) < len(members):
            members = gapped
            continue
        dropped = {int(t_of[i]) for i in members}
        own = layer[int(p_of[members[0]])]

        def chain(kernel: int, boundary: int, dropped: set[int] = dropped,
                  own: int = own) -> set[int] | None:
            """The kernels to rerun at ``boundary`` to run ``kernel`` again there."""
            needed, stack = {kernel}, [kernel]
            while stack:
                q = stack.pop()
                for name in s.graph.kernels[q].inputs:
                    u = index[name]
                    if not facts.unchanged(u, q, boundary):
                        return None
                    if u in dropped or (live.first[u] <= boundary - 1
                                        and live.last[u] >= boundary):
                        continue
                    producer = int(live.producer[u])
                    if producer in needed:
                        continue
                    outside = 0 <= producer < saved.backward_start and layer[producer] < 0
                    if producer < 0 or (layer[producer] != own and not outside) \
                            or not may_rerun(s, producer):
                        return None
                    needed.add(producer)
                    stack.append(producer)
            return needed

        chains = {i: chain(int(p_of[i]), b) for i in members}
        failed = [i for i, c in chains.items() if c is None]
        if failed:
            members = [i for i in members if chains[i] is not None]
            continue
        drops = {int(t_of[i]): Drop(int(t_of[i]), int(f_of[i]), b) for i in members}
        reruns = {(k, b) for c in chains.values() if c is not None for k in c}
        return drops, reruns
    return None
