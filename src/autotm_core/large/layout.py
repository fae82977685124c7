"""When each variable and each row of the ILP matters: its *anchor* kernel.

The window planners of :mod:`autotm_core.large` cut the program into stretches of
kernels and solve one stretch at a time. For that every column and row of the
one formulation (:func:`~autotm_core.ilp.formulation.build_program`) gets an
anchor:

- a slot's state variables: the slot's first kernel (the state is decided there);
- an edge (a way of crossing a transition): the transition's kernel;
- a configuration binary (table costs): its kernel;
- a row: the latest anchor of the decision columns in it (for a running-sum
  capacity row, at least the kernel of its half step);
- a kernel-time or occupancy variable (it only follows the decisions): the
  latest anchor of the rows it appears in, so it is settled only once all of
  them are.

It also knows, per slot, the state that holds the fewest bytes in bounded pools
(what a stretch assumes of the slots it has not planned yet) and, per edge,
its transition's *before* slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
import scipy.sparse as sp

from autotm_core.ilp.formulation import ModelIndex

if TYPE_CHECKING:
    from autotm_core.solvers.highs import MatrixProblem

SLOT, EDGE, TIME, OCCUPANCY, CONFIG = range(5)
"""Column kinds (:attr:`ModelLayout.kind`)."""


@attrs.frozen(kw_only=True, eq=False)
class ModelLayout:
    """Anchors and kinds of the columns and rows of one model (see the module docstring)."""

    kind: np.ndarray
    """Per column: ``SLOT``, ``EDGE``, ``TIME``, ``OCCUPANCY`` or ``CONFIG``."""
    col_anchor: np.ndarray
    """Per column: its anchor kernel."""
    row_anchor: np.ndarray
    """Per row: its anchor kernel."""
    capacity_row: np.ndarray
    """Per row: whether it is a running-sum capacity row."""
    time_row: np.ndarray
    """Per row: whether it bounds a kernel's time (or ties its configuration)."""
    before_anchor: np.ndarray
    """Per column: for an edge, the anchor of its transition's slot before; else -1."""
    least: np.ndarray
    """Per column: a value of every slot and edge variable in which each slot holds the
    fewest bytes in bounded pools its bounds allow (0 for the other columns)."""
    slot: np.ndarray
    """Per column: for a slot's state variable, the slot (numbered over all tensors);
    for an edge, the slot after its transition; else -1."""
    state: np.ndarray
    """Per column: for a slot's state variable, the state; for an edge, the state after;
    else -1."""
    from_state: np.ndarray
    """Per column: for an edge, the state before it; else -1."""
    asynchronous: np.ndarray
    """Per column: whether it is an asynchronous edge."""
    tensor_slots: np.ndarray
    """Per tensor planned, where its slots begin in the numbering of :attr:`slot` (one
    more entry: the number of slots)."""
    pool_rows: tuple[np.ndarray, ...]
    """Per bounded pool, its running-sum capacity rows in half-step order."""
    pool_vars: tuple[np.ndarray, ...]
    """Per bounded pool, its occupancy variables, aligned with :attr:`pool_rows`."""
    rows: sp.csr_matrix
    """The rows, compressed by row."""
    columns: sp.csc_matrix
    """The rows, compressed by column."""

    @property
    def n_kernels(self) -> int:
        """Kernels of the program (anchors lie in ``0..n_kernels - 1``)."""
        return int(self.col_anchor.max()) + 1 if self.col_anchor.size else 0


def model_layout(index: ModelIndex, problem: MatrixProblem) -> ModelLayout:
    """The :class:`ModelLayout` of ``index``'s model as handed over in ``problem``.

    ``problem`` is the :class:`~autotm_core.solvers.highs.MatrixProblem` of the model
    (with any reductions applied: fixed bounds decide the least-occupancy states).
    """
    start, col, val = problem.start, problem.index, problem.value
    lower = np.asarray(problem.col_lower)
    upper = np.asarray(problem.col_upper)
    n_rows, n_cols = len(start) - 1, len(lower)
    rows = sp.csr_matrix((val, col, start), shape=(n_rows, n_cols))
    kind = np.full(n_cols, -1, dtype=np.int8)
    anchor = np.full(n_cols, -1, dtype=np.int64)
    before = np.full(n_cols, -1, dtype=np.int64)
    least = np.zeros(n_cols)
    states = index.states
    bounded = list(index.occupancy_vars)  # pools with capacity rows
    # fewer bounded pools held, then fewer pools, then the slower usable pool
    rank = [(sum(q in st.pools for q in bounded), len(st.pools), -st.usable) for st in states]
    forced, closed = (lower >= 0.5).tolist(), (upper < 0.5).tolist()
    slot_cols: list[int] = []
    slot_anchor: list[int] = []
    edge_cols: list[int] = []
    edge_anchor: list[int] = []
    edge_before: list[int] = []
    picked: list[int] = []
    slot_ids: list[int] = []
    slot_states: list[int] = []
    edge_slot: list[int] = []
    edge_state: list[int] = []
    edge_from: list[int] = []
    edge_async: list[int] = []
    tensor_slots = [0]
    number = 0
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        chosen = []
        first_slot = number
        tensor_slots.append(first_slot + len(ts.slots))
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            slot_cols.extend(xs.values())
            slot_anchor.extend([slot.first] * len(xs))
            slot_ids.extend([number] * len(xs))
            slot_states.extend(xs)
            number += 1
            pick = next((st for st, v in xs.items() if forced[v]), None)
            if pick is None:
                open_ = [st for st, v in xs.items() if not closed[v]] or list(xs)
                pick = min(open_, key=rank.__getitem__)
            picked.append(xs[pick])
            chosen.append(pick)
        for i, (transition, tr_edges) in enumerate(zip(ts.transitions, edges, strict=True)):
            edge_cols.extend(e.var for e in tr_edges)
            edge_anchor.extend([transition.kernel] * len(tr_edges))
            edge_before.extend([ts.slots[i].first] * len(tr_edges))
            edge_slot.extend([first_slot + i + 1] * len(tr_edges))
            edge_state.extend(e.after for e in tr_edges)
            edge_from.extend(e.before for e in tr_edges)
            edge_async.extend(e.var for e in tr_edges if e.async_kernel is not None)
            stay = next((e for e in tr_edges if e.async_kernel is None
                         and e.before == chosen[i] and e.after == chosen[i + 1]), None)
            if stay is not None:
                picked.append(stay.var)
    kind[slot_cols], anchor[slot_cols] = SLOT, slot_anchor
    kind[edge_cols], anchor[edge_cols], before[edge_cols] = EDGE, edge_anchor, edge_before
    least[picked] = 1.0
    slot_of = np.full(n_cols, -1, dtype=np.int64)
    state_of = np.full(n_cols, -1, dtype=np.int64)
    from_of = np.full(n_cols, -1, dtype=np.int64)
    slot_of[slot_cols], state_of[slot_cols] = slot_ids, slot_states
    slot_of[edge_cols], state_of[edge_cols], from_of[edge_cols] = edge_slot, edge_state, edge_from
    asynchronous = np.zeros(n_cols, dtype=bool)
    asynchronous[edge_async] = True
    for k, (tk, zs) in enumerate(zip(index.kernel_time_vars, index.config_vars, strict=True)):
        kind[tk], anchor[tk] = TIME, k
        if zs:
            kind[zs], anchor[zs] = CONFIG, k
    pool_rows = tuple(np.asarray([r for r in index.occupancy_rows[q] if r >= 0], dtype=np.int64)
                      for q in index.occupancy_rows)
    pool_vars = tuple(np.asarray([v for v in index.occupancy_vars[q] if v >= 0], dtype=np.int64)
                      for q in index.occupancy_rows)
    occupancy = np.concatenate(pool_vars) if pool_vars else np.zeros(0, dtype=np.int64)
    kind[occupancy] = OCCUPANCY
    for vars_ in pool_vars:  # position i holds half step i + 1
        anchor[vars_] = np.arange(1, vars_.size + 1) // 2
    decision = (kind == SLOT) | (kind == EDGE) | (kind == CONFIG) | (kind == OCCUPANCY)
    rows_of = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(start))
    row_anchor = np.zeros(n_rows, dtype=np.int64)
    on = decision[col]
    np.maximum.at(row_anchor, rows_of[on], anchor[col[on]])
    follows = (kind == TIME) | (kind == OCCUPANCY)
    on = follows[col]
    anchor[follows] = -1
    np.maximum.at(anchor, col[on], row_anchor[rows_of[on]])
    times = np.asarray(index.kernel_time_vars, dtype=np.int64)
    anchor[times] = np.maximum(anchor[times], np.arange(times.size))
    anchor[occupancy] = np.maximum(anchor[occupancy], 0)
    capacity_row = np.zeros(n_rows, dtype=bool)
    for rows_q in pool_rows:
        capacity_row[rows_q] = True
    time_row = np.zeros(n_rows, dtype=bool)
    for k_rows in index.kernel_time_rows:
        time_row[k_rows] = True
    config = kind == CONFIG
    if config.any():  # rows tying configurations to usable pools count as kernel-time rows
        time_row[np.unique(rows_of[config[col]])] = True
    return ModelLayout(kind=kind, col_anchor=anchor, row_anchor=row_anchor,
                       capacity_row=capacity_row, time_row=time_row, before_anchor=before,
                       least=least, slot=slot_of, state=state_of, from_state=from_of,
                       asynchronous=asynchronous,
                       tensor_slots=np.asarray(tensor_slots, dtype=np.int64),
                       pool_rows=pool_rows, pool_vars=pool_vars, rows=rows,
                       columns=rows.tocsc())


def restricted_problem(layout: ModelLayout, problem: MatrixProblem, *, rows: np.ndarray,
                       free: np.ndarray, values: np.ndarray, cost: np.ndarray,
                       integer: np.ndarray, name: str) -> tuple[MatrixProblem, np.ndarray]:
    """The model restricted to ``rows``, the columns outside ``free`` held at ``values``.

    Returns the :class:`~autotm_core.solvers.highs.MatrixProblem` over the free columns
    that appear in ``rows`` or have a cost, and those columns' positions. The held
    columns' part of each row moves to its bounds; ``cost`` (per column of the model)
    is the objective, its held part the offset; ``integer`` marks integer columns.
    """
    from autotm_core.solvers.highs import MatrixProblem

    sub = layout.rows[rows]
    held = np.where(free, 0.0, values)
    shift = sub @ held
    used = np.zeros(len(free), dtype=bool)
    used[sub.indices] = True
    cols = np.flatnonzero(free & (used | (cost != 0)))
    matrix = sub[:, cols].tocsr()
    return MatrixProblem(
        cost=cost[cols], col_lower=np.asarray(problem.col_lower)[cols],
        col_upper=np.asarray(problem.col_upper)[cols],
        is_integer=integer[cols], start=matrix.indptr, index=matrix.indices, value=matrix.data,
        row_lower=np.asarray(problem.row_lower)[rows] - shift,
        row_upper=np.asarray(problem.row_upper)[rows] - shift,
        offset=float(cost[~free] @ values[~free]), name=name,
    ), cols
