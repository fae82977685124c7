"""Starting values for the solver from a plan made elsewhere (the greedy baseline's)."""

from __future__ import annotations

import logging

import numpy as np

from autotm_core.ilp.formulation import ModelIndex
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan

logger = logging.getLogger(__name__)


def warm_start_from_plan(index: ModelIndex, plan: Plan, graph: Graph,
                         system: MemorySystem) -> np.ndarray | None:
    """Values of every model variable describing ``plan``; ``None`` when the model cannot.

    The plan's pools at each slot must form one of the model's states and each change
    must be one of its edges (a synchronous one); otherwise nothing is offered.
    """
    lp = index.lp
    values = np.zeros(lp.n_vars)
    by_tensor: dict[str, list[tuple[int, int, int]]] = {}
    for r in plan.residencies:
        by_tensor.setdefault(r.tensor, []).append((system.pool_index(r.pool), r.first, r.last))
    state_of = {s.pools: i for i, s in enumerate(index.states)}
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        spans = by_tensor.get(graph.tensors[ts.tensor].name, [])
        chosen = []
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            pools = frozenset(p for p, a, b in spans if a <= slot.first and slot.last <= b)
            s = state_of.get(pools)
            if s is None or s not in xs:
                logger.info("warm start: tensor %r is in pools %s at kernel %d, no state of the "
                            "model", graph.tensors[ts.tensor].name, sorted(pools), slot.first)
                return None
            values[xs[s]] = 1.0
            chosen.append(s)
        for i, tr_edges in enumerate(edges):
            match = [e for e in tr_edges if e.before == chosen[i] and e.after == chosen[i + 1]
                     and e.async_kernel is None]
            if not match:
                return None
            values[match[0].var] = 1.0
    for k, zs in enumerate(index.config_vars):
        if zs:
            return None  # table costs: configurations are not derived here
        del k
    for tk, rows in zip(index.kernel_time_vars, index.kernel_time_rows, strict=True):
        best = lp.var_lb[tk]
        for r in rows:
            best = max(best, lp.row_lb[r] - lp.row_activity(r, values))
        values[tk] = best
    for q, occ in index.occupancy_vars.items():
        for h in range(1, len(occ)):
            row = index.occupancy_rows[q][h]
            values[occ[h]] = 0.0
            values[occ[h]] = -lp.row_activity(row, values)
    return values
