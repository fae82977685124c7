"""A lower bound on the optimum by Lagrangian relaxation of the rows that tie tensors together.

In the one formulation (:func:`~autotm_core.ilp.formulation.build_program`) with
separable costs, only two kinds of rows involve more than one tensor: the
running-sum capacity rows and the rows bounding each kernel's time. Moving them
into the objective with multipliers ``y`` leaves, per tensor, a shortest path
through its slots' states and its transitions' edges (the flow rows are kept),
and the kernel-time and occupancy variables at a bound. The steady-state rows
(a tensor's last slot holds the pools of its first) are not paths either: they
are priced in too, with multipliers ``mu >= 0``.

    L(y) = y . b + min over paths (c - A^T y) . x

Every ``L(y)`` (with ``y >= 0`` on inequality rows and the kernel times' reduced
costs kept non-negative) is a lower bound on the optimum, and the best over ``y``
equals the LP relaxation's bound (shortest-path polytopes are integral), which on
these models lies within a fraction of a percent of the optimum. Each evaluation
costs two sparse products and one pass over all slots (numba), so thousands of
subgradient steps fit where the LP relaxation itself would not: at 20,000 kernels
HiGHS's LP relaxation took over a minute.

Subgradient ascent with Polyak steps towards a known plan's objective, one step
length for the capacity multipliers and one for the kernel-time ones (on a
20,000-kernel chain started from the stretches' prices, one shared length left
the bound 7.9% below the LP relaxation after 100 steps, separate ones 0.9% after
200), and one for the steady-state multipliers; the best value seen is the bound.
"""

from __future__ import annotations

import itertools
import logging
import time

import attrs
import numba
import numpy as np
import scipy.sparse as sp

from autotm_core.ilp.approximate.layout import CONFIG, EDGE, OCCUPANCY, SLOT, TIME, ModelLayout
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy
from autotm_core.solvers.base import MatrixProblem

logger = logging.getLogger(__name__)

_INF = np.inf


@attrs.frozen(kw_only=True)
class LagrangianBound:
    """The best Lagrangian bound found, in the model's objective units."""

    objective: float
    """A proven lower bound on the optimum (``-inf`` when none was found)."""
    iterations: int
    """Subgradient steps taken."""
    seconds: float
    """Wall time taken."""


@attrs.frozen(kw_only=True, eq=False)
class _Paths:
    """Every tensor's slots and transitions as flat arrays, for :func:`_shortest_paths`."""

    slot_ptr: np.ndarray  # per tensor: its slots are slot_ptr[t]..slot_ptr[t+1]-1
    state_ptr: np.ndarray  # per slot: its state variables are state_ptr[s]..state_ptr[s+1]-1
    state_var: np.ndarray
    state_id: np.ndarray
    edge_ptr: np.ndarray  # per slot: its edges into the next slot are edge_ptr[s]..[s+1]-1
    edge_var: np.ndarray
    edge_before: np.ndarray
    edge_after: np.ndarray
    n_states: int


def _paths(layout: ModelLayout) -> _Paths:
    """The slots' state variables and the transitions' edges, grouped in slot order."""
    states = np.flatnonzero(layout.kind == SLOT)
    states = states[np.argsort(layout.slot[states], kind="stable")]
    edges = np.flatnonzero(layout.kind == EDGE)
    edges = edges[np.argsort(layout.slot[edges], kind="stable")]
    numbers = np.arange(layout.tensor_slots[-1] + 1)
    return _Paths(slot_ptr=layout.tensor_slots,
                  state_ptr=np.searchsorted(layout.slot[states], numbers),
                  state_var=states, state_id=layout.state[states],
                  # an edge leads into its slot from the one before it
                  edge_ptr=np.searchsorted(layout.slot[edges] - 1, numbers),
                  edge_var=edges, edge_before=layout.from_state[edges],
                  edge_after=layout.state[edges], n_states=int(layout.state.max()) + 1)


@numba.njit(cache=True, nogil=True)
def _shortest_paths(slot_ptr, state_ptr, state_var, state_id, edge_ptr, edge_var,
                    edge_before, edge_after, n_states, rc, upper, x):  # pragma: no cover - numba
    """Set ``x`` to each tensor's cheapest path under reduced costs ``rc``; return its cost."""
    total = 0.0
    dist = np.empty(n_states)
    nxt = np.empty(n_states)
    best_edge = np.full(state_var.size, -1, dtype=np.int64)
    for t in range(slot_ptr.size - 1):
        first, end = slot_ptr[t], slot_ptr[t + 1]
        dist[:] = _INF
        for j in range(state_ptr[first], state_ptr[first + 1]):
            if upper[state_var[j]] > 0.5:
                dist[state_id[j]] = rc[state_var[j]]
        for s in range(first, end - 1):
            nxt[:] = _INF
            for j in range(state_ptr[s + 1], state_ptr[s + 2]):
                best_edge[j] = -1
            for e in range(edge_ptr[s], edge_ptr[s + 1]):
                if upper[edge_var[e]] <= 0.5 or dist[edge_before[e]] == _INF:
                    continue
                value = dist[edge_before[e]] + rc[edge_var[e]]
                if value < nxt[edge_after[e]]:
                    nxt[edge_after[e]] = value
                    for j in range(state_ptr[s + 1], state_ptr[s + 2]):
                        if state_id[j] == edge_after[e]:
                            best_edge[j] = e
            dist[:] = _INF
            for j in range(state_ptr[s + 1], state_ptr[s + 2]):
                v = state_var[j]
                if best_edge[j] >= 0 and upper[v] > 0.5:
                    dist[state_id[j]] = nxt[state_id[j]] + rc[v]
        # the cheapest end state, then back along the edges
        pick, cost = -1, _INF
        for j in range(state_ptr[end - 1], state_ptr[end]):
            if dist[state_id[j]] < cost:
                cost, pick = dist[state_id[j]], j
        if pick < 0:
            return _INF  # no path within the bounds: L is +inf (cannot happen when feasible)
        total += cost
        for s in range(end - 1, first - 1, -1):
            x[state_var[pick]] = 1.0
            if s == first:
                break
            e = best_edge[pick]
            x[edge_var[e]] = 1.0
            before = edge_before[e]
            pick = -1
            for j in range(state_ptr[s - 1], state_ptr[s]):
                if state_id[j] == before:
                    pick = j
    return total


@attrs.frozen(kw_only=True, eq=False)
class _Relaxed:
    """The relaxed rows as matrices: kernel-time rows, and capacity as bytes held."""

    paths: _Paths
    cost: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    a_time: sp.csr_matrix  # kernel-time rows (``>= b_time``)
    at_time: sp.csr_matrix
    b_time: np.ndarray
    time_rows: np.ndarray  # their positions among the model's rows
    time_cols: np.ndarray  # the kernel-time columns
    per_kernel: sp.csr_matrix  # per kernel-time column, its rows (positions in a_time)
    delta: sp.csr_matrix  # per bounded pool and half step: the change in bytes held
    delta_t: sp.csr_matrix
    limit: np.ndarray  # the bytes each half step may hold
    scale: np.ndarray  # 1 / limit: capacity rows in fractions of their limit
    starts: np.ndarray  # where each pool's half steps begin in delta
    a_cyclic: sp.csr_matrix  # steady-state rows (``<= b_cyclic``)
    at_cyclic: sp.csr_matrix
    b_cyclic: np.ndarray
    cyclic_rows: np.ndarray  # their positions among the model's rows

    def held(self, x: np.ndarray) -> np.ndarray:
        """Bytes held by ``x`` at every half step of every bounded pool."""
        out = self.delta @ x
        for lo, hi in itertools.pairwise(self.starts):
            out[lo:hi] = np.cumsum(out[lo:hi])
        return out

    def suffix(self, weight: np.ndarray) -> np.ndarray:
        """Per half step, the weights of it and every later one of its pool."""
        out = np.empty_like(weight)
        for lo, hi in itertools.pairwise(self.starts):
            out[lo:hi] = np.cumsum(weight[lo:hi][::-1])[::-1]
        return out

    def value(self, y: np.ndarray, lam: np.ndarray, mu: np.ndarray, x: np.ndarray) -> float:
        """``L`` at multipliers ``y`` (kernel times), ``lam`` (capacity) and ``mu`` (steady
        state); sets ``x`` to the minimiser. ``-inf`` when a kernel's multipliers sum
        above one."""
        weight = lam * self.scale
        rc = (self.cost - self.at_time @ y + self.delta_t @ self.suffix(weight)
              + self.at_cyclic @ mu)
        x[:] = 0.0
        p = self.paths
        paths = _shortest_paths(p.slot_ptr, p.state_ptr, p.state_var, p.state_id, p.edge_ptr,
                                p.edge_var, p.edge_before, p.edge_after, p.n_states, rc,
                                self.upper, x)
        rc_time = rc[self.time_cols]
        if np.any(rc_time < -1e-12):
            return -_INF
        x[self.time_cols] = self.lower[self.time_cols]
        return (float(y @ self.b_time) + paths + float(rc_time @ x[self.time_cols])
                - float(weight @ self.limit) - float(mu @ self.b_cyclic))


def _relaxed(layout: ModelLayout, problem: MatrixProblem) -> _Relaxed:
    upper = np.asarray(problem.col_upper, dtype=np.float64)
    time_rows = np.flatnonzero(layout.time_row)
    a_time = layout.rows[time_rows].tocsr()
    at_time = a_time.T.tocsr()
    time_cols = np.flatnonzero(layout.kind == TIME)
    not_occupancy = (layout.kind != OCCUPANCY)[np.newaxis, :]
    # the running-sum row of half step h: O[h] - O[h-1] - change = 0
    deltas = [-layout.rows[rows].multiply(not_occupancy) for rows in layout.pool_rows]
    delta = (sp.vstack(deltas).tocsr() if deltas
             else sp.csr_matrix((0, layout.rows.shape[1])))
    limit = upper[np.concatenate(layout.pool_vars)] if deltas else np.zeros(0)
    cyclic_rows = np.flatnonzero(layout.cyclic_row)
    a_cyclic = layout.rows[cyclic_rows].tocsr()
    return _Relaxed(
        paths=_paths(layout), cost=np.asarray(problem.cost, dtype=np.float64),
        lower=np.asarray(problem.col_lower, dtype=np.float64), upper=upper,
        a_time=a_time, at_time=at_time,
        b_time=np.asarray(problem.row_lower, dtype=np.float64)[time_rows],
        time_rows=time_rows, time_cols=time_cols, per_kernel=at_time[time_cols],
        delta=delta, delta_t=delta.T.tocsr(), limit=limit,
        scale=1.0 / np.maximum(limit, 1.0),
        starts=np.cumsum([0] + [rows.size for rows in layout.pool_rows]),
        a_cyclic=a_cyclic, at_cyclic=a_cyclic.T.tocsr(),
        b_cyclic=np.asarray(problem.row_upper, dtype=np.float64)[cyclic_rows],
        cyclic_rows=cyclic_rows,
    )


def _start(layout: ModelLayout, relaxed: _Relaxed,
           row_duals: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starting multipliers: from ``row_duals``, else each kernel's first term carrying it."""
    y = np.zeros(relaxed.time_rows.size)
    lam = np.zeros(relaxed.limit.size)
    mu = np.zeros(relaxed.cyclic_rows.size)
    if row_duals is None:
        k = relaxed.per_kernel
        firsts = k.indptr[:-1][np.diff(k.indptr) > 0]
        y[k.indices[firsts]] = 1.0
        return y, lam, mu
    known = np.nan_to_num(np.asarray(row_duals, dtype=np.float64))
    y = np.maximum(known[relaxed.time_rows], 0.0)
    mu = np.maximum(-known[relaxed.cyclic_rows], 0.0)  # a binding upper row's dual is <= 0
    for rows, lo in zip(layout.pool_rows, relaxed.starts[:-1], strict=True):
        nu = known[rows]  # a running-sum row's dual: the later drops summed
        drop = nu - np.concatenate([nu[1:], [0.0]])
        lam[lo:lo + nu.size] = np.maximum(drop, 0.0) / relaxed.scale[lo:lo + nu.size]
    _cap_kernel_weights(relaxed.per_kernel.indptr, relaxed.per_kernel.indices, y)
    return y, lam, mu


def lagrangian_bound(layout: ModelLayout, problem: MatrixProblem, *,
                     target: float, deadline: float | None = None,
                     max_iterations: int = 3000,
                     row_duals: np.ndarray | None = None,
                     strategy: Strategy = DEFAULT_STRATEGY) -> LagrangianBound:
    """The bound of the module docstring; ``target`` is a known plan's objective (model units).

    ``row_duals`` (one per row of ``problem``, HiGHS's signs, NaN where unknown), for
    example from LP relaxations of parts of the model, give the starting multipliers.
    Stops at ``deadline`` (a :func:`time.perf_counter` value; one evaluation is always
    made), after ``max_iterations`` steps, or when the bound reaches ``target``. Table
    costs (configuration binaries) are not paths: the bound is then ``-inf``.
    """
    started = time.perf_counter()
    if np.any(layout.kind == CONFIG):
        return LagrangianBound(objective=-_INF, iterations=0, seconds=0.0)
    relaxed = _relaxed(layout, problem)
    y, lam, mu = _start(layout, relaxed, row_duals)
    x = np.zeros(len(relaxed.cost))
    best, iterations, step, stalled = -_INF, 0, 1.0, 0
    previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    while iterations < max_iterations:
        if iterations and deadline is not None and time.perf_counter() >= deadline:
            break  # the first evaluation is always made
        iterations += 1
        value = relaxed.value(y, lam, mu, x)
        logger.debug("lagrangian: step %d value %.9g length %.3g", iterations, value, step)
        if value > best:
            best, stalled = value, 0
        else:
            stalled += 1
            if stalled >= strategy.stall_steps:
                step, stalled = step / 2, 0
        if best >= target or step < 1e-4 or not np.isfinite(value):
            break
        # subgradient, projected on the signs, deflected by the previous direction
        g_cap = (relaxed.held(x) - relaxed.limit) * relaxed.scale
        g_cap = np.where(lam > 0, g_cap, np.maximum(g_cap, 0.0))
        g_time = relaxed.b_time - relaxed.a_time @ x
        g_time = np.where(y > 0, g_time, np.maximum(g_time, 0.0))
        g_cyc = relaxed.a_cyclic @ x - relaxed.b_cyclic
        g_cyc = np.where(mu > 0, g_cyc, np.maximum(g_cyc, 0.0))
        if previous is not None:
            g_cap, g_time, g_cyc = (g_cap + strategy.deflection * previous[0],
                                    g_time + strategy.deflection * previous[1],
                                    g_cyc + strategy.deflection * previous[2])
        previous = (g_cap, g_time, g_cyc)
        if not (g_cap.any() or g_time.any() or g_cyc.any()):
            break
        # Polyak's step towards the target, for each kind of row on its own: their units
        # differ (fractions of a limit, microseconds), and one shared length starves one kind
        lam = np.maximum(lam + _polyak(step * (target - value), g_cap), 0.0)
        y = np.maximum(y + _polyak(step * (target - value), g_time), 0.0)
        mu = np.maximum(mu + _polyak(step * (target - value), g_cyc), 0.0)
        _cap_kernel_weights(relaxed.per_kernel.indptr, relaxed.per_kernel.indices, y)
    return LagrangianBound(objective=best, iterations=iterations,
                           seconds=time.perf_counter() - started)


def _polyak(distance: float, g: np.ndarray) -> np.ndarray:
    """The move along ``g`` whose length covers ``distance`` (nothing when ``g`` is zero)."""
    norm = float(g @ g)
    return distance / norm * g if norm > 0 else np.zeros_like(g)


@numba.njit(cache=True, nogil=True)
def _cap_kernel_weights(indptr, indices, y):  # pragma: no cover - numba
    """Scale each kernel's time-row multipliers down to sum at most 1."""
    for i in range(indptr.size - 1):
        total = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            total += y[indices[j]]
        if total > 1.0:
            for j in range(indptr[i], indptr[i + 1]):
                y[indices[j]] /= total
