"""Starting values for the solver from a plan made elsewhere (greedy, first-touch, all-slow).

A verified plan says which pools hold each tensor at each kernel; the model
knows one state per slot. Each gadget slot takes the state of the pools held at
its kernel, less the target of a copy issued there (the transition out of it; at the
last kernel, a copy completing in the next step, the last slot holds its target). An
interior takes the cheapest state the plan passes through in it
(the slow pool only, if the plan evicts the tensor there): moving the eviction
to the interior's start and the fetch to its end costs the same copies and holds
no more bytes in the fast pool at any step. When the edge wanted was left out
as dominated (:meth:`~autotm_core.ilp.formulation._Builder._dominated`), the
state that dominates it is taken instead. Where the plan drops a tensor (no residency),
the slot takes the dropped state, and each of the plan's reruns sets its option's
binary (a rerun the model has no option for makes no start). Kernel times, configurations and
occupancies then follow from the states (:func:`~autotm_core.ilp.decode.settled_values`),
and the start is checked against every row before it is offered: a plan that
does not end the step where it began it (its steady-state rows) is no start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np

from autotm_core.ilp.decode import settled_values
from autotm_core.ilp.gadgets import State
from autotm_core.ilp.model_index import Edge, ModelIndex
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import MoveKind, Plan

logger = logging.getLogger(__name__)

FEASIBILITY_TOLERANCE = 1e-6
"""Slack allowed on each row when checking a start (the solvers' default tolerance)."""


def _held(spans: Sequence[tuple[int, int, int]], first: int, last: int) -> list[frozenset[int]]:
    """The pool sets holding the tensor over kernels ``first..last``, in time order.

    Evaluated only where a span begins or ends, so a long slot costs no more than a short one.
    """
    points = {first} | {a for _, a, _ in spans if first < a <= last}
    points |= {b + 1 for _, _, b in spans if first <= b < last}
    return [frozenset(p for p, a, b in spans if a <= k <= b) for k in sorted(points)]


def _rank(state: State) -> tuple[bool, int, int]:
    """Cheaper states first: not in the fastest pool, fewer pools, slower usable pool."""
    return (0 in state.pools, len(state.pools), -state.usable)


def _edge(edges: list[Edge], before: int, after: int) -> Edge | None:
    for e in edges:
        if e.before == before and e.after == after and e.async_kernel is None:
            return e
    return None


def _pick(states: tuple[State, ...], wanted: list[int], allowed: dict[int, int],
          edges: list[Edge], before: int | None) -> int | None:
    """The first of ``wanted`` (else any allowed state) reachable from ``before``."""
    candidates = [s for s in wanted if s in allowed]
    candidates += sorted((s for s in allowed if s not in candidates),
                         key=lambda s: _rank(states[s]))
    for s in candidates:
        if before is None or _edge(edges, before, s) is not None:
            return s
    return None


def _tensor_states(index: ModelIndex, t: int, spans: Sequence[tuple[int, int, int]],
                   issued: Mapping[int, frozenset[int]]) -> list[int] | None:
    states, ts = index.states, index.tensors[t]
    state_of = {s.pools: i for i, s in enumerate(states)}
    slowest = max(s.usable for s in states)
    chosen: list[int] = []
    moved_start = False  # whether the model bars every state the plan begins the tensor in
    for i, (slot, allowed) in enumerate(zip(ts.slots, index.slot_vars[t], strict=True)):
        held = _held(spans, slot.first, slot.last)
        if slot.gadget and slot.first in issued and i < len(ts.slots) - 1:
            # a copy issued at a gadget's kernel is the transition out of it: its target,
            # reserved from there, is not the gadget's state (an eviction issued at kernel
            # 0 read as both pools broke the steady-state rows: zoo:vgg19:batch=128
            # gpu-h200 4:1, its own asynchronous plan no start for the stages after it).
            # A copy issued at the last kernel completes in the next step: the last slot
            # holds its target
            held = [p - issued[slot.first] or p for p in held]
        seen = [state_of[p] for p in held if p in state_of]
        if slot.gadget:
            if not seen:
                return None
            # a clean copy the edge needs is kept (the dominating choice), else dropped
            held_state = seen[0]
            wanted = [held_state,
                      state_of.get(states[held_state].pools | {slowest}, held_state),
                      state_of.get(frozenset({states[held_state].usable}), held_state)]
        else:
            wanted = sorted(set(seen), key=lambda s: _rank(states[s]))
            if chosen and chosen[-1] not in wanted:
                wanted.append(chosen[-1])
        before = chosen[-1] if chosen else None
        edges = index.edges[t][i - 1] if i else []
        if ts.cyclic and i == len(ts.slots) - 1 and i and moved_start:
            # the step ends in every pool it began in (the steady-state rows): where the
            # model has the tensor begin elsewhere than the plan (``begin_outside``), the
            # last slot adds those pools
            begun = states[chosen[0]].pools
            ends = [p | begun for p in held] + [begun]
            wanted = [*(state_of[p] for p in ends if p in state_of), *wanted]
        s = _pick(states, wanted, allowed, edges, before)
        if s is None:
            return None
        if not i:
            moved_start = s not in wanted
        chosen.append(s)
    return chosen


def warm_start_from_plan(index: ModelIndex, plan: Plan, graph: Graph,
                         system: MemorySystem) -> np.ndarray | None:
    """Values of every model variable describing ``plan`` (or a plan no worse); ``None``
    when the model cannot express it or the values break a row (the reason is logged).

    The objective of the values returned is at most the plan's simulated step time, but
    where the model bars a tensor from every state the plan begins the step with it in
    (:attr:`~autotm_core.ilp.options.FormulationOptions.begin_outside`): the values then
    begin it in the cheapest state allowed, and end the step there too.
    """
    lp = index.lp
    values = np.zeros(lp.n_vars)
    by_tensor: dict[str, list[tuple[int, int, int]]] = {}
    for residency in plan.residencies:
        by_tensor.setdefault(residency.tensor, []).append(
            (system.pool_index(residency.pool), residency.first, residency.last))
    issued: dict[str, dict[int, frozenset[int]]] = {}  # tensor -> kernel -> copies' targets
    for move in plan.moves:
        if move.kind is MoveKind.ASYNC:
            at = issued.setdefault(move.tensor, {})
            at[move.kernel] = at.get(move.kernel, frozenset()) | {system.pool_index(move.target)}
    usable: dict[tuple[int, int], int] = {}
    tables = any(index.config_vars)
    for t, ts in enumerate(index.tensors):
        name = graph.tensors[ts.tensor].name
        chosen = _tensor_states(index, t, by_tensor.get(name, []), issued.get(name, {}))
        if chosen is None:
            logger.info("warm start: tensor %r's pools in plan %r match no state of the model",
                        name, plan.planner)
            return None
        for slot, xs, s in zip(ts.slots, index.slot_vars[t], chosen, strict=True):
            values[xs[s]] = 1.0
            if slot.gadget and tables:  # a static slot spans every use
                for k in range(slot.first, slot.last + 1):
                    usable[ts.tensor, k] = index.states[s].usable
        for i, tr_edges in enumerate(index.edges[t]):
            edge = _edge(tr_edges, chosen[i], chosen[i + 1])
            if edge is None:  # not reached: _pick only takes reachable states
                return None
            values[edge.var] = 1.0
    wanted_reruns = {(r.kernel, r.before) for r in plan.reruns}
    for var, option in index.reruns:
        if (option.kernel, option.before) in wanted_reruns:
            values[var] = 1.0
            wanted_reruns.difference_update((k, option.before) for k in option.runs)
    if wanted_reruns:
        logger.info("warm start: plan %r reruns kernels where the model has no rerun option "
                    "(e.g. kernel #%d before #%d)", plan.planner, *min(wanted_reruns))
        return None
    live = graph.liveness
    for k, zs in enumerate(index.config_vars):
        if not zs:
            continue
        entries = range(int(live.kernel_ptr[k]), int(live.kernel_ptr[k + 1]))
        wanted = [usable[int(live.kernel_tensors[e]), k] for e in entries]
        configs = index.config_pools[k]
        matches = np.flatnonzero((configs == np.asarray(wanted)).all(axis=1))
        if matches.size == 0:
            logger.info("warm start: kernel %r has no configuration %s", graph.kernels[k].name,
                        wanted)
            return None
        values[zs[int(matches[0])]] = 1.0
    values = settled_values(index, values)
    broken = lp.violations(values, tolerance=FEASIBILITY_TOLERANCE)
    if broken:
        logger.info("warm start: plan %r breaks %d rows of the model (first: row %d)",
                    plan.planner, len(broken), broken[0])
        return None
    return values
