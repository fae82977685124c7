"""From solution values back to a :class:`~autotm_core.plans.model.Plan`.

:func:`decode_plan` reads the chosen state of every slot and the chosen edge of
every transition and writes residencies and moves (the reverse, a plan made
elsewhere as a solver's start, is :mod:`autotm_core.ilp.warm`).
:func:`settled_values` gives the continuous variables the values the decisions
imply: what the objective of a plan is, without the slack a solver may leave.

A tensor that exists before the step and survives it begins the step in the pools of
its first slot's state, each in one residency from kernel 0, and ends it in those of
its last slot's state, each in one residency covering the last kernel; the model
makes the second set hold the first. So per pool there is exactly one residency
where the step begins and one where it ends (often the same one), the two an
address packer must give one offset.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from autotm_core.errors import SolverError
from autotm_core.ilp.gadgets import move_sources
from autotm_core.ilp.model_index import CONFIG, EDGE, RERUN, SLOT, Edge, ModelIndex
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.build import make_plan
from autotm_core.plans.model import Move, MoveKind, Plan, Rerun, Residency


def _chosen_state(values: np.ndarray, options: Mapping[int, int], what: str) -> int:
    """The state whose variable the solution sets (of ``options``: state -> variable)."""
    state = max(options, key=lambda s: values[options[s]])
    _check_chosen(values[options[state]], what)
    return state


def _chosen_edge(values: np.ndarray, options: list[Edge], what: str) -> Edge:
    """The edge the solution takes among ``options``."""
    edge = max(options, key=lambda e: values[e.var])
    _check_chosen(values[edge.var], what)
    return edge


def _check_chosen(score: float, what: str) -> None:
    if not score > 0.5:
        raise SolverError(f"the solution chooses nothing for {what} (largest value {score})",
                          hint="this is a bug in the formulation or the solver; please report it")


def decode_plan(index: ModelIndex, values: np.ndarray, graph: Graph, system: MemorySystem, *,
                planner: str, attributes: Mapping[str, object] | None = None,
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
        state = index.states[_chosen_state(values, slot_vars[0], f"tensor {tensor!r}")]
        opened = {q: ts.slots[0].first for q in state.pools}
        for transition, tr_edges in zip(ts.transitions, edges, strict=True):
            edge = _chosen_edge(values, tr_edges, f"a transition of tensor {tensor!r}")
            before, after = index.states[edge.before], index.states[edge.after]
            asynchronous = edge.async_kernel is not None
            if edge.async_kernel is not None:  # in flight from issue until its until
                at, until = edge.async_kernel, edge.until
                assert until is not None
                end = until - 1
            else:
                at, until, end = transition.kernel, None, transition.kernel - 1
            for q in sorted(before.pools - after.pools):
                residencies.append(Residency(tensor, names[q], opened.pop(q), end))
            if not before.pools:  # restored by a rerun at this boundary
                opened.update((q, at) for q in after.pools)
                continue
            for source, target, _ in move_sources(system, nbytes, before, after,
                                                  asynchronous=asynchronous):
                moves.append(Move(tensor, names[source], names[target], at,
                                  MoveKind.ASYNC if asynchronous else MoveKind.SYNC,
                                  until=until))
                opened[target] = at
        last = ts.slots[-1].last
        residencies.extend(Residency(tensor, names[q], first, last)
                           for q, first in sorted(opened.items()))
    reruns = [Rerun(k, b) for k, b in graph.recompute.with_fills(
        (option.kernel, option.before) for var, option in index.reruns if values[var] > 0.5)]
    if capacities is None:
        capacities = {
            p.name: None if cap is None else int(cap.max()) if len(cap) else p.capacity_nbytes
            for p, cap in zip(system.pools, index.capacities, strict=True)
        }
    return make_plan(graph, system, residencies=residencies, moves=moves, planner=planner,
                     attributes=attributes, capacities=capacities, reruns=reruns)


def settled_values(index: ModelIndex, values: np.ndarray) -> np.ndarray:
    """``values`` with every decision (state, edge, configuration) rounded, each kernel
    time at the largest of its lower bounds for those decisions, and each occupancy at
    its running sum: the plan's own objective, without slack a solver may have left in
    the continuous variables (at a gap, a kernel time may sit above all its rows).
    """
    lp = index.lp
    kind = index.columns.kind
    out = np.asarray(values, dtype=np.float64).copy()
    decision = (kind == SLOT) | (kind == EDGE) | (kind == CONFIG) | (kind == RERUN)
    out[decision] = np.round(out[decision])
    times = np.asarray(index.kernel_time_vars, dtype=np.int64)
    occupancy = [np.asarray(v[1:], dtype=np.int64) for v in index.occupancy_vars.values()]
    out[times] = 0.0
    for vars_ in occupancy:
        out[vars_] = 0.0
    start, column, coefficient = lp.csr()
    rows_of = np.repeat(np.arange(lp.n_rows), np.diff(start))
    row_lb = np.asarray(lp.row_lb, dtype=np.float64)
    if index.peaks:  # each at the largest of its rows, in order (a row holds earlier ones)
        peaks = np.fromiter((v for v, _ in index.peaks), dtype=np.int64,
                            count=len(index.peaks))
        out[peaks] = 0.0
        for var, rows in index.peaks:
            activity = _activity(out, column, coefficient, start, rows)
            out[var] = max(0.0, float((row_lb[rows] - activity).max(initial=0.0)))
    activity = np.bincount(rows_of, weights=coefficient * out[column], minlength=lp.n_rows)
    for tk, rows in zip(times.tolist(), index.kernel_time_rows, strict=True):
        need = row_lb[rows] - activity[rows]
        out[tk] = max(lp.var_lb[tk], float(need.max(initial=-np.inf)))
    for vars_, rows in zip(occupancy, index.occupancy_rows.values(), strict=True):
        # the row of half step h: O[h] - O[h-1] - (what enters and leaves) = 0
        out[vars_] = np.cumsum(-activity[np.asarray(rows[1:], dtype=np.int64)])
    return out


def _activity(values: np.ndarray, column: np.ndarray, coefficient: np.ndarray,
              start: np.ndarray, rows: list[int]) -> np.ndarray:
    """``A x`` of ``rows`` alone."""
    return np.array([float(coefficient[start[r]:start[r + 1]]
                           @ values[column[start[r]:start[r + 1]]]) for r in rows])


def overfilled(index: ModelIndex, settled: np.ndarray) -> tuple[int, int, float] | None:
    """Where :func:`settled_values` ``settled`` hold a pool over its capacity row's bound,
    as ``(pool, kernel, bytes over)`` at the worst half step; ``None`` where they hold none.

    A solver takes a binary within its integrality tolerance of 0 or 1 (HiGHS: 1e-6), and
    rounded, such a solution may overfill a pool its unrounded values did not: the static
    model of three 4 MiB blocks (``tests.baselines.blocks``) on ``gpu-h200`` at 1:1,
    counted in bytes, took a tensor's state at 1 - 4.8e-7 and filled HBM 2 bytes over.
    """
    worst: tuple[int, int, float] | None = None
    bound = np.asarray(index.lp.var_ub, dtype=np.float64)
    for q, vars_ in index.occupancy_vars.items():
        occupancy = np.asarray(vars_[1:], dtype=np.int64)  # half steps 1 .. 2n - 1
        if not len(occupancy):
            continue
        over = settled[occupancy] - bound[occupancy]
        h = int(np.argmax(over))
        nbytes = float(over[h]) * index.nbytes_per_unit
        if nbytes >= 1.0 and (worst is None or nbytes > worst[2]):
            worst = (q, (h + 1) // 2, nbytes)
    return worst


def objective_of(index: ModelIndex, values: np.ndarray) -> float:
    """The objective of ``values`` in seconds."""
    return index.objective_seconds(index.lp.objective_value(values))
