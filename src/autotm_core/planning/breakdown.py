"""Where each kind of tensor went in a plan, and what it cost: the breakdown by tensor kind.

For every :class:`~autotm_core.ir.TensorKind` the graph has (parameters, gradients,
optimizer state, activations, inputs, outputs, workspace, constants), from the plan, the
graph and the plan's simulation:

- **kept**: per pool, the bytes of the kind's tensors that spend some of the step in it
  (a tensor held in two pools, at once or one after the other, counts in both);
- **moved**: bytes copied into a faster pool (fetches) and into a slower one (evictions);
- **in place**: bytes kernels read or write where they lie, in a pool slower than the
  fastest (a tensor that is never moved but used from slow memory costs here, not in
  "moved");
- **added time**: the kind's part of the step's time over all-fast. The step's excess is
  the sum over kernels of (its time in the plan's configuration - its time with every tensor
  in the fastest pool) + its synchronous moves + the part of its asynchronous moves it does
  not hide; each part is charged to the tensors that cause it: a kernel's slowdown to the
  tensors it uses from a slower pool, each in proportion to what bringing that one tensor to
  the fastest pool would save (in proportion to bytes when no single tensor saves anything);
  a move's time to the tensor moved, in proportion to its copy time at the link's rate; a
  rerun's time (a kernel run again to recompute what the plan dropped) to the tensors it
  writes again, in proportion to their bytes.
  What no tensor causes stays unattributed (:attr:`KindBreakdown.unattributed_seconds`).

Computed once here; the reports only render it. The time is attributed only when the step
time is the simulator's (not for 2LM, whose step time is the cache model's).
"""

from __future__ import annotations

import enum
import weakref
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts, rerun_seconds
from autotm_core.errors import PlanError
from autotm_core.ir import Graph, TensorKind
from autotm_core.memory import MemorySystem
from autotm_core.planning.outcome import Outcome
from autotm_core.planning.problem import Problem
from autotm_core.plans.arrays import encode_plan
from autotm_core.plans.model import Plan
from autotm_core.simulation import Simulation, copy_rates

_KINDS = tuple(TensorKind)


class MoveDirection(enum.Enum):
    """Which way a move copies a tensor, by the pools' order (fastest first)."""

    TO_FASTER = "to_faster"
    """Into a faster pool: a fetch."""
    TO_SLOWER = "to_slower"
    """Into a slower pool: an eviction."""


@attrs.frozen(kw_only=True)
class KindUse:
    """What the plan does with the tensors of one kind."""

    kind: TensorKind
    """The tensor kind."""
    tensors: int
    """Tensors of this kind in the graph."""
    nbytes: int
    """Their bytes together."""
    kept_nbytes: tuple[int, ...]
    """Per pool (fastest first), the bytes of this kind's tensors that spend some of the step
    in it."""
    moved_nbytes: Mapping[MoveDirection, int]
    """Bytes copied per step, per direction."""
    in_place_nbytes: int
    """Bytes kernels use (read or write) where they lie in a pool slower than the fastest,
    counted once per kernel that uses them."""
    added_seconds: float | None
    """This kind's part of the step's time over all-fast (``None``: not attributed)."""


@attrs.frozen(kw_only=True)
class KindBreakdown:
    """The breakdown of a plan by tensor kind (see the module's documentation)."""

    pools: tuple[str, ...]
    """Pool names, fastest first (the order of :attr:`KindUse.kept_nbytes`)."""
    uses: tuple[KindUse, ...]
    """One per kind the graph has, in :class:`TensorKind` order."""
    added_seconds: float | None
    """Step time over all-fast time, in seconds (``None``: not attributed)."""
    unattributed_seconds: float | None
    """The part of :attr:`added_seconds` no tensor causes (kernel time differences with no
    tensor outside the fastest pool, the kernel's own traffic over a link with no such
    tensor)."""

    def share(self, use: KindUse) -> float | None:
        """``use``'s fraction of the added time (``None`` when nothing is attributed or no
        time is added)."""
        if use.added_seconds is None or not self.added_seconds or self.added_seconds <= 0:
            return None
        return use.added_seconds / self.added_seconds

    def to_json(self) -> dict[str, Any]:
        """The breakdown as JSON values (the ``by_kind`` of ``--json`` outputs)."""
        return {
            "pools": list(self.pools),
            "added_seconds": self.added_seconds,
            "unattributed_seconds": self.unattributed_seconds,
            "kinds": [{
                "kind": u.kind.value, "tensors": u.tensors, "nbytes": u.nbytes,
                "kept_nbytes": dict(zip(self.pools, u.kept_nbytes, strict=True)),
                "moved_nbytes": {d.value: u.moved_nbytes[d] for d in MoveDirection},
                "in_place_nbytes": u.in_place_nbytes,
                "added_seconds": u.added_seconds, "added_share": self.share(u),
            } for u in self.uses],
        }


def kind_breakdown(plan: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts,
                   simulation: Simulation, *, step_seconds: float | None = None) -> KindBreakdown:
    """The breakdown of ``plan`` (simulated as ``simulation``) by tensor kind.

    ``step_seconds`` is the step time reported for the plan when it is not the simulator's
    (2LM's cache model): then no time is attributed.
    """
    arrays, problems = encode_plan(plan, graph, system)
    if problems:
        raise PlanError(f"cannot break down the plan for graph {graph.name!r}: {problems[0]}",
                        problems=problems, hint="verify the plan first")
    live = graph.liveness
    n_pools = len(system.pools)
    kinds = np.fromiter((_KINDS.index(t.kind) for t in graph.tensors), dtype=np.int64,
                        count=len(graph.tensors))
    nbytes = live.nbytes.astype(np.int64)

    def per_kind(tensors: Any, weights: Any) -> Any:
        return np.bincount(kinds[tensors], weights=weights, minlength=len(_KINDS))

    kept = np.zeros((len(_KINDS), n_pools), dtype=np.int64)
    pairs = np.unique(np.stack([arrays.res_tensor, arrays.res_pool]), axis=1)
    for p in range(n_pools):
        held = pairs[0][pairs[1] == p]
        kept[:, p] = per_kind(held, nbytes[held]).astype(np.int64)
    faster = arrays.move_target < arrays.move_source
    moved = {
        MoveDirection.TO_FASTER: per_kind(arrays.move_tensor[faster],
                                          nbytes[arrays.move_tensor[faster]]),
        MoveDirection.TO_SLOWER: per_kind(arrays.move_tensor[~faster],
                                          nbytes[arrays.move_tensor[~faster]]),
    }
    entries = live.kernel_tensors
    outside = arrays.entry_pools > 0
    in_place = per_kind(entries[outside], nbytes[entries[outside]])
    added = None
    if step_seconds is None or step_seconds == simulation.step_seconds:
        added = _attribute(arrays, graph, system, costs, simulation, kinds)
    counts = np.bincount(kinds, minlength=len(_KINDS))
    sizes = per_kind(np.arange(len(kinds)), nbytes)
    uses = tuple(
        KindUse(kind=kind, tensors=int(counts[i]), nbytes=int(sizes[i]),
                kept_nbytes=tuple(int(b) for b in kept[i]),
                moved_nbytes={d: int(moved[d][i]) for d in MoveDirection},
                in_place_nbytes=int(in_place[i]),
                added_seconds=None if added is None else float(added[0][i]))
        for i, kind in enumerate(_KINDS) if counts[i])
    return KindBreakdown(pools=tuple(p.name for p in system.pools), uses=uses,
                         added_seconds=None if added is None else added[1],
                         unattributed_seconds=None if added is None else added[2])


def outcome_breakdown(outcome: Outcome) -> KindBreakdown:
    """The breakdown of a planned point's plan (no time attributed for 2LM), computed once
    per outcome (a report's facts and its tables ask for the same one)."""
    found = _BY_OUTCOME.get(outcome)
    if found is None:
        problem = outcome.problem
        found = kind_breakdown(outcome.plan, problem.graph, problem.limited_system,
                               problem.costs, outcome.simulation,
                               step_seconds=outcome.step_seconds)
        _BY_OUTCOME[outcome] = found
    return found


_BY_OUTCOME: weakref.WeakKeyDictionary[Outcome, KindBreakdown] = weakref.WeakKeyDictionary()


def plan_breakdown(problem: Problem, plan: Plan, *,
                   step_seconds: float | None = None) -> KindBreakdown:
    """The breakdown of ``plan`` made for ``problem``, simulating it (see
    :func:`kind_breakdown` for ``step_seconds``)."""
    from autotm_core.simulation import simulate

    system = problem.limited_system
    simulation = simulate(plan, problem.graph, system, problem.costs)
    return kind_breakdown(plan, problem.graph, system, problem.costs, simulation,
                          step_seconds=step_seconds)


def _attribute(arrays: Any, graph: Graph, system: MemorySystem, costs: KernelCosts,
               sim: Simulation, kinds: Any) -> tuple[Any, float, float] | None:
    """(seconds per kind, the step's excess over all-fast, the unattributed part), or
    ``None`` when the costs cannot price the all-fast configuration."""
    live = graph.liveness
    pools = np.asarray(arrays.entry_pools, dtype=np.int64)
    try:
        all_fast = np.asarray(costs.seconds_all(np.zeros_like(pools)), dtype=np.float64)
    except PlanError:
        return None
    owner = live.entry_kernels()
    entry_kind = kinds[live.kernel_tensors]
    entry_nbytes = live.nbytes[live.kernel_tensors].astype(np.float64)
    outside = pools > 0
    charged = np.zeros(len(_KINDS))
    # a kernel's slowdown, to its tensors outside the fastest pool
    extra = sim.kernel_seconds - all_fast
    weights = _saving_weights(pools, owner, live.kernel_ptr, costs, sim.kernel_seconds)
    no_saving = np.bincount(owner, weights=weights, minlength=len(extra)) <= 0
    weights = np.where(no_saving[owner] & outside, entry_nbytes, weights)
    _spread(charged, extra, owner, weights, entry_kind)
    # moves: each to its tensor, by its copy time
    n = len(extra)
    sync_bps, async_bps = copy_rates(system)
    moved_nbytes = live.nbytes[arrays.move_tensor].astype(np.float64)
    is_async = np.asarray(arrays.move_async, dtype=bool)
    rate = np.where(is_async, async_bps[arrays.move_source, arrays.move_target],
                    sync_bps[arrays.move_source, arrays.move_target])
    copy_seconds = moved_nbytes / rate
    move_kind = kinds[arrays.move_tensor]
    _spread(charged, sim.sync_seconds, arrays.move_kernel[~is_async],
            copy_seconds[~is_async], move_kind[~is_async])
    # a kernel's exposed time, to the async copies due at its end (the next kernel waits for
    # them; a one-kernel copy is due at the end of the kernel issuing it)
    exposed = np.maximum(0.0, sim.effective_seconds - sim.kernel_seconds)
    due = arrays.move_until[is_async] - 1
    has_async = np.bincount(due, minlength=n) > 0
    _spread(charged, np.where(has_async, exposed, 0.0), due,
            copy_seconds[is_async], move_kind[is_async])
    # exposure without async moves is the kernel's own traffic over a link
    _spread(charged, np.where(has_async, 0.0, exposed), owner,
            np.where(outside, entry_nbytes, 0.0), entry_kind)
    # reruns: each to the tensors it writes again, by their bytes
    reruns = arrays.rerun_kernel.tolist()
    if reruns:
        index = graph.tensor_index
        outputs = [[index[name] for name in graph.kernels[k].outputs] for k in reruns]
        item_rerun = np.repeat(np.arange(len(reruns)), [len(o) for o in outputs])
        item_tensor = np.fromiter((t for o in outputs for t in o), dtype=np.int64,
                                  count=len(item_rerun))
        seconds = np.array([rerun_seconds(costs, k, len(graph.kernels[k].tensors))
                            for k in reruns], dtype=np.float64)
        _spread(charged, seconds, item_rerun, live.nbytes[item_tensor].astype(np.float64),
                kinds[item_tensor])
    total = float(sim.step_seconds - all_fast.sum())
    rest = total - float(charged.sum())
    if abs(rest) <= 1e-9 * abs(total):  # rounding of the sums, not time left over
        rest = 0.0
    return charged, total, rest


def _spread(charged: Any, seconds: Any, kernel_of: Any, weights: Any, kind_of: Any) -> None:
    """Add each kernel's ``seconds`` to ``charged`` per kind, shared among that kernel's items
    (``kernel_of``) by ``weights``; a kernel whose items weigh nothing keeps its seconds."""
    if not len(kernel_of):
        return
    totals = np.bincount(kernel_of, weights=weights, minlength=len(seconds))
    share = np.divide(weights, totals[kernel_of], out=np.zeros(len(weights)),
                      where=totals[kernel_of] > 0)
    np.add.at(charged, kind_of, share * seconds[kernel_of])


def _saving_weights(pools: Any, owner: Any, kernel_ptr: Any, costs: KernelCosts,
                    seconds: Any) -> Any:
    """For each entry outside the fastest pool, the seconds its kernel would save with that
    one tensor in the fastest pool (0 elsewhere, and where the costs cannot price it).

    Each kernel's costs are looked up once: the separable form's terms for all kernels at
    once, a table's configurations once per kernel that has a tensor outside the fastest
    pool (not once per tensor use: profiled costs of a very large graph)."""
    weights = np.zeros(len(pools))
    outside = np.flatnonzero(pools > 0)
    if not len(outside):
        return weights
    separable = costs.separable()
    if separable is not None:
        entries = np.arange(len(pools))
        picked = separable.coefficients[entries, :, pools]  # (n_entries, n_terms)
        terms = separable.constants.copy()
        np.add.at(terms, owner, picked)
        # the kernel's terms with one entry moved to the fastest pool
        flipped = (terms[owner[outside]] - picked[outside]
                   + separable.coefficients[outside, :, 0]).max(axis=1)
        weights[outside] = np.maximum(0.0, seconds[owner[outside]] - flipped)
        return weights
    for k in np.unique(owner[outside]):
        start, stop = int(kernel_ptr[k]), int(kernel_ptr[k + 1])
        here = np.asarray(pools[start:stop], dtype=np.int64)
        flip = np.flatnonzero(here > 0)
        candidates = np.repeat(here[np.newaxis, :], len(flip), axis=0)
        candidates[np.arange(len(flip)), flip] = 0
        table = costs.table(int(k))
        if not len(table.seconds):
            continue
        same = (table.configs[np.newaxis, :, :] == candidates[:, np.newaxis, :]).all(axis=2)
        listed = same.any(axis=1)  # a table without a configuration: weigh by bytes instead
        saved = seconds[k] - table.seconds[same.argmax(axis=1)]
        weights[start + flip[listed]] = np.maximum(0.0, saved[listed])
    return weights


__all__ = ["KindBreakdown", "KindUse", "MoveDirection", "kind_breakdown", "outcome_breakdown",
           "plan_breakdown"]
