"""When each variable and each row of the ILP matters: its *anchor* kernel.

The approximate planner cuts the program into stretches of kernels and solves
one stretch at a time. For that every column and row of the one formulation
(:func:`~autotm_core.ilp.formulation.build_program`) gets an anchor. The
formulation records each column's kind and kernel as it adds it
(:class:`~autotm_core.ilp.model_index.Columns`): a slot's state variables the
slot's first kernel, an edge its transition's kernel, a configuration binary its
kernel. From those:

- a row: the latest anchor of the decision columns in it (occupancy counts as a
  decision here, so a running-sum capacity row is at least at the kernel of its
  half step);
- a kernel-time or occupancy variable (it only follows the decisions): the
  latest anchor of the rows it appears in (a kernel-time variable at least its
  kernel), so it is settled only once all of them are.

The steady-state rows (a tensor that exists before the step and survives it ends
holding every pool it began in) tie its first slot, at kernel 0, to its last one, at
the last kernel: they are anchored at the last kernel.

It also knows, per slot, the state that holds the fewest bytes in bounded pools
(what a stretch assumes of the slots it has not planned yet) and, per edge, the
anchor of its transition's *before* slot.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from autotm_core.ilp.model_index import CONFIG, EDGE, OCCUPANCY, SLOT, TIME, ModelIndex
from autotm_core.solvers.base import MatrixProblem


@attrs.frozen(kw_only=True, eq=False)
class ModelLayout:
    """Anchors and kinds of the columns and rows of one model (see the module docstring)."""

    kind: np.ndarray
    """Per column: its :class:`~autotm_core.ilp.model_index.ColumnKind` value."""
    col_anchor: np.ndarray
    """Per column: its anchor kernel."""
    row_anchor: np.ndarray
    """Per row: its anchor kernel."""
    capacity_row: np.ndarray
    """Per row: whether it is a running-sum capacity row."""
    time_row: np.ndarray
    """Per row: whether it bounds a kernel's time (or ties its configuration)."""
    cyclic_row: np.ndarray
    """Per row: whether it is a steady-state row (a last slot holds the first one's pools)."""
    last_slot: np.ndarray
    """Per column: whether it is a state variable of the last slot of a tensor with
    steady-state rows."""
    before_anchor: np.ndarray
    """Per column: for an edge, the anchor of its transition's slot before; else -1."""
    least: np.ndarray
    """Per column: a value of every slot and edge variable in which each slot holds the
    fewest bytes in bounded pools its bounds allow (0 for the other columns)."""
    state_order: np.ndarray
    """Per state: its place from the least occupancy (fewest bounded pools, then fewest
    pools, then the slower usable pool) on."""
    covers: np.ndarray
    """Per pair of states ``(a, b)``: whether ``b`` holds every pool ``a`` holds."""
    open_state: np.ndarray
    """Per column: whether its bounds let it be 1."""
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

    ``problem`` is the model's :class:`~autotm_core.solvers.MatrixProblem` (with any
    reductions applied: fixed bounds decide the least-occupancy states).
    """
    facts = index.columns
    kind, slot, state = facts.kind, facts.slot, facts.state
    rows = sp.csr_matrix((problem.value, problem.index, problem.start),
                         shape=(problem.n_rows, problem.n_columns))
    edges = kind == EDGE
    slot_first = np.zeros(int(slot.max()) + 1 if slot.size else 0, dtype=np.int64)
    slot_first[slot[kind == SLOT]] = facts.anchor[kind == SLOT]
    before = np.full(slot.size, -1, dtype=np.int64)
    before[edges] = slot_first[slot[edges] - 1]
    pool_rows = tuple(np.asarray(index.occupancy_rows[q][1:], dtype=np.int64)
                      for q in index.occupancy_rows)
    pool_vars = tuple(np.asarray(index.occupancy_vars[q][1:], dtype=np.int64)
                      for q in index.occupancy_rows)
    row_anchor, anchor = _anchors(index, rows)
    capacity_row = np.zeros(problem.n_rows, dtype=bool)
    for rows_q in pool_rows:
        capacity_row[rows_q] = True
    time_row = np.zeros(problem.n_rows, dtype=bool)
    for k_rows in index.kernel_time_rows:
        time_row[k_rows] = True
    cyclic_row = np.zeros(problem.n_rows, dtype=bool)
    cyclic_row[np.asarray(index.cyclic_rows, dtype=np.int64)] = True
    starts = index.tensor_slots
    cyclic = np.asarray([ts.cyclic and len(ts.slots) > 1 for ts in index.tensors], dtype=bool)
    last = np.zeros(int(starts[-1]), dtype=bool)
    last[starts[1:][cyclic] - 1] = True
    last_slot = np.zeros(slot.size, dtype=bool)
    states = np.flatnonzero(kind == SLOT)
    last_slot[states] = last[slot[states]]
    columns = rows.tocsc()
    config = np.flatnonzero(kind == CONFIG)
    if config.size:  # rows tying configurations to usable pools count as kernel-time rows
        time_row[np.unique(columns[:, config].indices)] = True
    return ModelLayout(kind=kind, col_anchor=anchor, row_anchor=row_anchor,
                       capacity_row=capacity_row, time_row=time_row, cyclic_row=cyclic_row,
                       last_slot=last_slot, before_anchor=before,
                       least=_least(index, problem), state_order=_state_order(index),
                       covers=np.array([[a.pools <= b.pools for b in index.states]
                                        for a in index.states], dtype=bool),
                       open_state=np.asarray(problem.col_upper) >= 0.5, slot=slot, state=state,
                       from_state=facts.from_state, asynchronous=facts.asynchronous,
                       tensor_slots=index.tensor_slots, pool_rows=pool_rows,
                       pool_vars=pool_vars, rows=rows, columns=columns)


def _anchors(index: ModelIndex, rows: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per row and per column, its anchor (see the module docstring)."""
    kind = index.columns.kind
    anchor = index.columns.anchor.copy()
    entries = rows.tocoo()
    decision = (kind != TIME)[entries.col]
    row_anchor = np.zeros(rows.shape[0], dtype=np.int64)
    np.maximum.at(row_anchor, entries.row[decision], anchor[entries.col[decision]])
    follows = (kind == TIME) | (kind == OCCUPANCY)
    on = follows[entries.col]
    anchor[follows] = np.where(kind[follows] == TIME, anchor[follows], 0)
    np.maximum.at(anchor, entries.col[on], row_anchor[entries.row[on]])
    return row_anchor, anchor


def _state_order(index: ModelIndex) -> np.ndarray:
    """Per state, its place by occupancy: fewest bounded pools (those with capacity rows),
    then fewest pools, then the slower usable pool."""
    bounded = list(index.occupancy_vars)
    rank = [(sum(q in st.pools for q in bounded), len(st.pools), -st.usable) if st.pools
            else (len(bounded) + 1, 0, 0)  # dropped: restoring it takes a rerun
            for st in index.states]
    return np.array([sorted(set(rank)).index(r) for r in rank], dtype=np.int64)


def _least(index: ModelIndex, problem: MatrixProblem) -> np.ndarray:
    """Per column, 1 on each slot's least-occupancy state and the synchronous edges joining
    them: a state fixed to 1 when there is one, else among the states its bounds leave
    open (all, when none is) the one holding the fewest bounded pools, then the fewest
    pools, then the slower usable pool (the first such)."""
    facts = index.columns
    order = _state_order(index)
    cols = np.flatnonzero(facts.kind == SLOT)
    slot, state = facts.slot[cols], facts.state[cols]
    forced = np.asarray(problem.col_lower)[cols] >= 0.5
    closed = np.asarray(problem.col_upper)[cols] < 0.5
    any_open = np.zeros(int(slot.max()) + 1 if slot.size else 0, dtype=bool)
    any_open[slot[~closed]] = True
    # the first key decides: slot, a forced state (the first), an open one, rank, column
    pick = np.lexsort((cols, order[state], closed & any_open[slot], np.where(forced, cols, 0),
                       ~forced, slot))
    first = pick[np.diff(slot[pick], prepend=-1) != 0]
    chosen = np.full(any_open.size, -1, dtype=np.int64)
    chosen[slot[first]] = state[first]
    least = np.zeros(len(facts.kind))
    least[cols[first]] = 1.0
    sync = np.flatnonzero((facts.kind == EDGE) & ~facts.asynchronous)
    after = facts.slot[sync]
    least[sync[(chosen[after - 1] == facts.from_state[sync])
               & (chosen[after] == facts.state[sync])]] = 1.0
    return least


def restricted_problem(layout: ModelLayout, problem: MatrixProblem, *, rows: np.ndarray,
                       free: np.ndarray, values: np.ndarray, cost: np.ndarray,
                       integer: np.ndarray, name: str) -> tuple[MatrixProblem, np.ndarray]:
    """The model restricted to ``rows``, the columns outside ``free`` held at ``values``.

    Returns the :class:`~autotm_core.solvers.MatrixProblem` over the free columns
    that appear in ``rows`` or have a cost, and those columns' positions. The held
    columns' part of each row moves to its bounds; ``cost`` (per column of the model)
    is the objective, its held part the offset; ``integer`` marks integer columns.
    """
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
