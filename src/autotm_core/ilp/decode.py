"""From solution values back to a :class:`~autotm_core.plans.model.Plan`, and back again.

:func:`decode_plan` reads the chosen state of every slot and the chosen edge of
every transition and writes residencies and moves; :func:`warm_start_values` does
the reverse for a plan made elsewhere (the greedy baseline), so a solver can start
from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from autotm_core.errors import SolverError
from autotm_core.ilp.gadgets import move_sources
from autotm_core.ilp.model_index import Edge, ModelIndex
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.build import make_plan
from autotm_core.plans.model import Move, MoveKind, Plan, Residency


def _chosen(values: np.ndarray, options: Mapping[int, int] | list[Edge], what: str) -> Any:
    best: Edge | int
    if isinstance(options, list):
        edge = max(options, key=lambda e: values[e.var])
        best, score = edge, values[edge.var]
    else:
        slot_state = max(options, key=lambda s: values[options[s]])
        best, score = slot_state, values[options[slot_state]]
    if not score > 0.5:
        raise SolverError(f"the solution chooses nothing for {what} (largest value {score})",
                          hint="this is a bug in the formulation or the solver; please report it")
    return best


def decode_plan(index: ModelIndex, values: np.ndarray, graph: Graph, system: MemorySystem, *,
                planner: str, attributes: Mapping[str, Any] | None = None,
                capacities: Mapping[str, int | None] | None = None) -> Plan:
    """The plan the variable ``values`` describe (``values[i]`` for variable ``i``).

    ``capacities`` (the plan's, per pool) defaults to the largest limit the model used.
    """
    live = graph.liveness
    names = [p.name for p in system.pools]
    residencies: list[Residency] = []
    moves: list[Move] = []
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        tensor = graph.tensors[ts.tensor].name
        nbytes = int(live.nbytes[ts.tensor])
        state = index.states[_chosen(values, slot_vars[0], f"tensor {tensor!r}")]
        opened = {q: ts.slots[0].first for q in state.pools}
        for transition, tr_edges in zip(ts.transitions, edges, strict=True):
            edge = _chosen(values, tr_edges, f"a transition of tensor {tensor!r}")
            before, after = index.states[edge.before], index.states[edge.after]
            asynchronous = edge.async_kernel is not None
            at = edge.async_kernel if asynchronous else transition.kernel
            end = at if asynchronous else at - 1
            for q in sorted(before.pools - after.pools):
                residencies.append(Residency(tensor, names[q], opened.pop(q), end))
            for source, target, _ in move_sources(system, nbytes, before, after,
                                                  asynchronous=asynchronous):
                moves.append(Move(tensor, names[source], names[target], at,
                                  MoveKind.ASYNC if asynchronous else MoveKind.SYNC))
                opened[target] = at
        last = ts.slots[-1].last
        residencies.extend(Residency(tensor, names[q], first, last)
                           for q, first in sorted(opened.items()))
    if capacities is None:
        capacities = {
            p.name: None if cap is None else int(cap.max()) if len(cap) else p.capacity_nbytes
            for p, cap in zip(system.pools, index.capacities, strict=True)
        }
    return make_plan(graph, system, residencies=residencies, moves=moves, planner=planner,
                     attributes=attributes, capacities=capacities)

