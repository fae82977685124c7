"""A plan of the whole program, planned one stretch of kernels at a time (rolling horizon).

Stretches of ``core`` kernels are planned in program order. Planning a stretch
solves a slice of the one formulation by relax-and-fix
(:func:`~autotm_core.ilp.incumbent.relax_and_fix_matrix`) on the solver given:

- what earlier stretches decided is held (the columns anchored before it,
  :mod:`autotm_core.ilp.approximate.layout`);
- the stretch's own decisions are binary; those of the next ``margin`` kernels
  are relaxed (continuous), so the stretch sees what comes soon after it (and
  the time of any later kernel an asynchronous move of the slice overlaps);
- further on, every slot not planned yet is held in its least-occupancy state
  (:attr:`~autotm_core.ilp.approximate.layout.ModelLayout.least`) and every capacity row is
  kept: nothing decided now can leave a later stretch without room. A far
  transition of a slot decided now is left to the stretch that reaches it (its
  edges count nothing in the slice; at that boundary a copy out of the slowest
  pool can usually be avoided, and without one the boundary holds no more than the
  kernel before it when capacities do not change from kernel to kernel);
- except the last slot of each tensor with steady-state rows (it exists before the
  step and survives it): that slot, at the last kernel, is relaxed in every slice
  with its steady-state rows, so a stretch that decides where such a tensor begins
  the step reserves room for it where the step ends. The copy that brings it back
  there, at the boundary before the last kernel, is left to the last stretch; when
  that stretch finds no room, the slice fails as below.

When fixing what the LP made integral leaves the rest of a slice without a
solution, the slice is solved whole. Only the stretch's own binaries are kept;
the next stretch solves its margin again. With an unbounded slowest pool every
slice has a solution (everything not yet planned can stay in the slowest pool);
otherwise a slice may fail, and
:func:`rolling_plan` says so by returning ``None``.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import attrs
import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

from autotm_core.ilp.approximate.layout import (
    EDGE,
    OCCUPANCY,
    SLOT,
    TIME,
    ModelLayout,
    restricted_problem,
)
from autotm_core.ilp.incumbent import RelaxAndFix, relax_and_fix_matrix
from autotm_core.solvers.base import MatrixProblem, Solver, SolverConfig

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True, eq=False)
class RollingPlan:
    """A feasible solution of the whole model, planned stretch by stretch."""

    values: np.ndarray
    """One value per column of the model."""
    row_duals: np.ndarray
    """Per row, its dual in the LP relaxation of the slice whose stretch it is anchored in
    (NaN where that slice was solved whole or never solved): prices for
    :func:`~autotm_core.ilp.approximate.lagrangian.lagrangian_bound` to start from."""
    planned_kernels: int
    """Kernels planned by slices; the rest (when the deadline came first) have every slot
    in its least-occupancy state. Kernel-time and occupancy values are then not set."""


def rolling_plan(layout: ModelLayout, problem: MatrixProblem, *, solver: Solver,
                 core_kernels: int, margin_kernels: int, relative_gap: float,
                 deadline: float | None = None) -> RollingPlan | None:
    """A feasible solution of ``problem`` (see the module docstring) by ``solver``, or ``None``.

    ``None`` when a slice has no solution. When ``deadline`` (a :func:`time.perf_counter`
    value) passes first, the kernels not planned yet keep every slot in its
    least-occupancy state (:func:`_complete`; ``None`` if that cannot be joined up).
    The slices' row duals (:attr:`RollingPlan.row_duals`) come from a backend that
    gives them (:attr:`~autotm_core.solvers.SolverCapabilities.duals`); NaN otherwise.
    """
    n = layout.n_kernels
    cost = np.asarray(problem.cost, dtype=np.float64)
    binary = np.asarray(problem.is_integer, dtype=bool)
    anchor, kind = layout.col_anchor, layout.kind
    follows = (kind == TIME) | (kind == OCCUPANCY)
    values = np.where(follows, 0.0, layout.least)
    columns = layout.columns
    duals = np.full(layout.rows.shape[0], np.nan)
    core = max(1, core_kernels)
    for s in range(0, n, core):
        e, m = min(n, s + core), min(n, s + core + max(0, margin_kernels))
        left = _left(deadline)
        if left is not None and left <= 0:
            logger.info("rolling: out of time before stretch %d-%d of %d kernels", s, e, n)
            return _complete(layout, values, duals, s)
        near = (anchor >= s) & (anchor < m)
        values[(kind == EDGE) & (anchor >= m) & (layout.before_anchor < m)] = 0.0
        free = near | ((follows | layout.last_slot) & (anchor >= m))
        far_rows, far_vars = _far_capacity(layout, m)
        free[far_vars] = False
        touched = np.zeros(layout.rows.shape[0], dtype=bool)
        touched[columns[:, np.flatnonzero(free)].indices] = True
        # far kernel-time rows count only where a decision of the slice loads them (an
        # asynchronous move overlapping a kernel beyond the margin)
        loads = np.zeros(layout.rows.shape[0], dtype=bool)
        loads[columns[:, np.flatnonzero(near & ~follows)].indices] = True
        touched &= (layout.capacity_row | layout.cyclic_row | (layout.row_anchor < m)
                    | (layout.time_row & loads))
        touched[far_rows] = False
        rows = np.flatnonzero(touched)
        integer = binary & (anchor >= s) & (anchor < e)
        sub, cols = restricted_problem(layout, problem, rows=rows, free=free, values=values,
                                       cost=cost, integer=integer, name=f"stretch {s}-{e}")
        sub = _with_far_capacity(sub, layout, problem, m=m, cols=cols, free=free, values=values)
        found = relax_and_fix_matrix(sub, solver=solver, time_limit_seconds=_left(deadline),
                                     relative_gap=relative_gap, threads=1,
                                     duals=solver.capabilities.duals)
        if isinstance(found, RelaxAndFix):
            values[cols] = found.values[:cols.size]
            if found.row_duals is not None:
                own = (layout.row_anchor[rows] >= s) & (layout.row_anchor[rows] < e)
                duals[rows[own]] = found.row_duals[:rows.size][own]
            continue
        # fixing what the LP made integral can leave the rest without a solution: solve it all
        left = _left(deadline)
        if left is not None and left <= 0:
            logger.info("rolling: out of time in stretch %d-%d of %d kernels", s, e, n)
            return _complete(layout, values, duals, s)
        config = SolverConfig(time_limit_seconds=left, relative_gap=relative_gap, threads=1,
                              warm_start=False)
        _, solved = solver.solve(sub, config)
        if solved is None:
            logger.info("rolling: stretch %d-%d has no solution", s, e)
            return None
        values[cols] = solved[:cols.size]
    binaries = binary & np.isfinite(values)
    values[binaries] = np.round(values[binaries])
    return RollingPlan(values=values, row_duals=duals, planned_kernels=n)


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (``None``: no deadline); at least 0 so solvers accept it."""
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


def _complete(layout: ModelLayout, values: np.ndarray, duals: np.ndarray,
              s: int) -> RollingPlan | None:
    """The decisions before kernel ``s``, every later slot in its least-occupancy state
    (a last slot with steady-state rows: the least one holding the first slot's pools).

    Each later transition takes the synchronous edge joining its two slots' states;
    ``None`` when one has none. Every slice kept room for these states (its far
    capacity rows hold them), so the verifier should accept the plan; callers check
    it all the same.
    """
    anchor, kind = layout.col_anchor, layout.kind
    later = anchor >= s
    slots = (kind == SLOT)
    out = np.where(slots & later, layout.least, np.round(values))
    chosen = np.full(int(layout.slot.max()) + 1 if layout.slot.size else 0, -1, dtype=np.int64)
    held = slots & (out > 0.5)
    chosen[layout.slot[held]] = layout.state[held]
    if not _end_where_begun(layout, out, chosen, later):
        logger.info("rolling: a tensor cannot end the step where it began it (kernel %d on)", s)
        return None
    edges = (kind == EDGE) & later
    out[edges] = 0.0
    sync = np.flatnonzero(edges & ~layout.asynchronous)
    joins = sync[(chosen[layout.slot[sync] - 1] == layout.from_state[sync])
                 & (chosen[layout.slot[sync]] == layout.state[sync])]
    out[joins] = 1.0
    needed = np.unique(layout.slot[np.flatnonzero(edges)])
    if np.setdiff1d(needed, layout.slot[joins]).size:
        logger.info("rolling: the plan before kernel %d cannot be joined to the rest", s)
        return None
    return RollingPlan(values=out, row_duals=duals, planned_kernels=s)


def _end_where_begun(layout: ModelLayout, out: np.ndarray, chosen: np.ndarray,
                     later: np.ndarray) -> bool:
    """Put every later last slot with steady-state rows (in ``out`` and ``chosen``) in the
    least-occupancy state its bounds allow that holds its first slot's pools; ``False``
    when one has none."""
    lasts = np.flatnonzero(layout.last_slot & later)
    if lasts.size == 0:
        return True
    slot = layout.slot[lasts]
    first = layout.tensor_slots[np.searchsorted(layout.tensor_slots, slot, side="right") - 1]
    ok = layout.covers[chosen[first], layout.state[lasts]] & layout.open_state[lasts]
    fits = lasts[ok]
    pick = np.lexsort((fits, layout.state_order[layout.state[fits]], layout.slot[fits]))
    picked = fits[pick][np.diff(layout.slot[fits][pick], prepend=-1) != 0]
    if np.setdiff1d(slot, layout.slot[picked]).size:
        return False
    out[lasts] = 0.0
    out[picked] = 1.0
    chosen[layout.slot[picked]] = layout.state[picked]
    return True


def _far_capacity(layout: ModelLayout, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The running-sum rows and occupancy variables of half steps ``2m`` on (all pools)."""
    rows = [r[2 * m - 1:] for r in layout.pool_rows]  # position i holds half step i + 1
    vars_ = [v[2 * m - 1:] for v in layout.pool_vars]
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(rows) if rows else empty), (np.concatenate(vars_) if vars_ else empty)


def _with_far_capacity(sub: MatrixProblem, layout: ModelLayout, problem: MatrixProblem, *,
                       m: int, cols: np.ndarray, free: np.ndarray,
                       values: np.ndarray) -> MatrixProblem:
    """``sub`` with the capacity of half steps ``2m`` on, compressed exactly.

    From there on only decisions held elsewhere change the bytes held, except where a
    slot of the slice ends: between two such *breakpoints* the held bytes are the
    slice's (one new variable per breakpoint) plus a known amount, so each breakpoint's
    variable gets the tightest of its half steps' limits less that amount, and one row
    carries it to the next breakpoint. A last slot with steady-state rows is counted
    from the boundary before it (:func:`_from_the_boundary`).
    """
    import scipy.sparse as sp

    lower = np.asarray(problem.col_lower, dtype=np.float64)
    upper = np.asarray(problem.col_upper, dtype=np.float64)
    decision = layout.kind != OCCUPANCY
    held = np.where(~free & decision, values, 0.0)
    position = np.full(len(free), -1, dtype=np.int64)
    position[cols] = np.arange(cols.size)
    blocks, y_lower, y_upper, n_new = [], [], [], 0
    for rows_q, vars_q in zip(layout.pool_rows, layout.pool_vars, strict=True):
        far_rows, far_vars = rows_q[2 * m - 1:], vars_q[2 * m - 1:]
        if far_rows.size == 0:
            continue
        link = position[vars_q[2 * m - 2]]  # the slice's last occupancy variable
        matrix = layout.rows[far_rows]
        known = np.cumsum(-(matrix @ held))  # bytes the held decisions add, half step by step
        own = matrix[:, cols].tocsr()
        own = own.multiply(decision[cols][np.newaxis, :]).tocsr()
        own.eliminate_zeros()
        own = _from_the_boundary(own, layout.last_slot[cols])
        breaks = np.flatnonzero(np.diff(own.indptr) > 0)
        if breaks.size == 0 or breaks[0] != 0:
            breaks = np.concatenate([[0], breaks])
        y_lower.append(np.maximum.reduceat(lower[far_vars] - known, breaks))
        y_upper.append(np.minimum.reduceat(upper[far_vars] - known, breaks))
        k = breaks.size
        y = sub.n_columns + n_new + np.arange(k)
        previous = np.concatenate([[link], y[:-1]])
        chain = sp.csr_matrix(
            (np.concatenate([np.ones(k), -np.ones(k)]),
             (np.concatenate([np.arange(k), np.arange(k)]), np.concatenate([y, previous]))),
            shape=(k, sub.n_columns + n_new + k))
        terms = own[breaks]
        terms = sp.csr_matrix((terms.data, terms.indices, terms.indptr), shape=chain.shape)
        blocks.append(chain + terms)
        n_new += k
    if not blocks:
        return sub
    width = sub.n_columns + n_new
    base = sp.csr_matrix((sub.value, sub.index, sub.start), shape=(sub.n_rows, sub.n_columns))
    base = sp.csr_matrix((base.data, base.indices, base.indptr), shape=(sub.n_rows, width))
    added = sp.vstack([sp.csr_matrix((b.data, b.indices, b.indptr), shape=(b.shape[0], width))
                       for b in blocks]).tocsr()
    matrix = sp.vstack([base, added]).tocsr()
    zeros = np.zeros(added.shape[0])
    return attrs.evolve(
        sub, cost=np.concatenate([sub.cost, np.zeros(n_new)]),
        col_lower=np.concatenate([sub.col_lower, *y_lower]),
        col_upper=np.concatenate([sub.col_upper, *y_upper]),
        is_integer=np.concatenate([sub.is_integer, np.zeros(n_new, dtype=bool)]),
        start=matrix.indptr, index=matrix.indices, value=matrix.data,
        row_lower=np.concatenate([sub.row_lower, zeros]),
        row_upper=np.concatenate([sub.row_upper, zeros]))


def _from_the_boundary(own: sp.csr_matrix, last: np.ndarray) -> sp.csr_matrix:
    """``own`` (far capacity rows by the slice's columns) with the columns marked ``last``
    (reserved last slots: relaxed, at the last kernel) entering one half step earlier.

    Whatever edge leads into a slot, the boundary before it holds the slot's pools (a
    tensor being copied occupies source and target), so the reservation counts there
    too: a later stretch then finds room to bring the tensor back where it began.
    """
    import scipy.sparse as sp

    if not last.any():
        return own
    coo = own.tocoo()
    rows = coo.row.copy()
    moved = last[coo.col] & (rows > 0)
    rows[moved] -= 1
    return sp.csr_matrix((coo.data, (rows, coo.col)), shape=own.shape)
