"""Improving a feasible solution of the model one window of kernels at a time.

A large-neighbourhood search for models whose full MIP does not pay within the
time asked for (asynchronous models of large graphs: Inception v4 b64 has
441,470 columns, and the full MIP's root LP alone outlasts a minute). Retiming
(:func:`~autotm_core.ilp.incumbent.retime`) keeps every state of the held plan and
only moves its copies; the gain of overlap needs states to change too (a tensor
fetched during an earlier compute-bound kernel instead of read from the slow pool,
room made for it by an earlier eviction). So, a window of
:data:`WINDOW_KERNELS` kernels at a time:

- the decisions anchored in the window (state variables of slots beginning there,
  edges of transitions there, configurations of its kernels) are free, binary;
- every other decision is held at the incumbent's value;
- every kernel-time and occupancy variable is free (continuous): a copy decided in
  the window may overlap an earlier kernel, and a slot beginning there may last
  past its end;
- the rows touching a free column form the sub-model
  (:func:`~autotm_core.ilp.approximate.layout.restricted_problem`); a row of held
  columns only holds already.

The sub-model starts from the incumbent, so its solution is never worse, and
with the held values it is a solution of the full model (only bounds were
tightened). Windows are tried in order of what they could gain (the kernels' time
over their lower bounds and the synchronous copies anchored there); a window that
improves the incumbent changes the scores. After every window was tried, another
pass starts if the last one gained; the search ends when one gains nothing or the
time is up. The result carries no bound: each sub-model is narrower than the model.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from autotm_core.errors import AutotmError, SolveInterruptedError
from autotm_core.ilp.budget import MIN_SOLVE_SECONDS
from autotm_core.ilp.incumbent import RelaxAndFix
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.model_index import EDGE, OCCUPANCY, TIME, ModelIndex
from autotm_core.solvers.base import (
    SolverConfig,
    SolveResult,
    TerminationCondition,
    settle_status,
)

if TYPE_CHECKING:
    from autotm_core.solvers.base import Solver

logger = logging.getLogger(__name__)

WINDOW_KERNELS = 60
"""Kernels per window. At Inception v4 b64 (optane-2019 4:1) a window of 100 kernels is a
sub-model of about 25,000 columns (20,000 binaries) that HiGHS improves in a few seconds;
40 s of windows took the synchronous plan from 3.5893 s to 3.5370 s (0.985x)."""

WINDOW_SECONDS = 3.0
"""The most one window's solve may take."""

IMPROVEMENT_TOLERANCE = 1e-7
"""A window's solution replaces the incumbent only when better by this fraction of it."""


def improve_by_windows(index: ModelIndex, start: np.ndarray, *, solver: Solver,
                       deadline: float | None, relative_gap: float,
                       window_kernels: int | None = None,
                       window_seconds: float = WINDOW_SECONDS) -> RelaxAndFix:
    """``start`` improved window by window (see the module docstring), ``window_kernels``
    kernels at a time (default :data:`WINDOW_KERNELS`), until ``deadline`` (a
    :func:`time.perf_counter` reading; ``None``: until a pass gains nothing).

    ``start`` is a feasible solution of ``index``'s model (one value per column). The
    result's solve says the best objective found, no bound, the seconds of every solve,
    and why the search ended: ``time_limit`` at the deadline, else ``unknown`` (a pass
    gained nothing: not proven optimal). A model of no more than ``window_kernels``
    kernels is one window, the whole model: its solution is ``start`` (solve the model
    itself instead). A failing solve ends the search with the best solution found so far;
    Ctrl-C raises ``KeyboardInterrupt``.
    """
    from autotm_core.ilp.approximate.layout import model_layout, restricted_problem

    window_kernels = window_kernels or WINDOW_KERNELS  # read now: a caller may change it
    problem = to_matrix_problem(index.lp, name="windows")
    layout = model_layout(index, problem)
    cost = np.asarray(problem.cost, dtype=np.float64)
    binary = np.asarray(problem.is_integer, dtype=bool)
    kind, anchor = layout.kind, layout.col_anchor
    follows = (kind == TIME) | (kind == OCCUPANCY)
    rows_of_follows = np.unique(layout.columns[:, np.flatnonzero(follows)].indices)
    n = layout.n_kernels
    width = max(1, window_kernels)
    # a window as big as the model would be the model itself: none is solved then
    starts = sorted({*range(0, n - width + 1, max(1, width // 2)), n - width}) if n > width else []
    scorer = _Scorer(index, problem.col_lower, cost, kind, anchor, n)
    values = np.asarray(start, dtype=np.float64).copy()
    best = initial = float(cost @ values)
    handoff_seconds, solve_seconds, windows, gains, version = 0.0, 0.0, 0, 0, ""
    tried: set[int] = set()
    gained_in_pass = False
    config = SolverConfig(relative_gap=min(relative_gap, 1e-4), warm_start=True)
    termination = TerminationCondition.UNKNOWN
    while True:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left < MIN_SOLVE_SECONDS:
            termination = TerminationCondition.TIME_LIMIT
            break
        untried = [s for s in starts if s not in tried]
        if not untried:
            if not gained_in_pass:
                break
            tried.clear()
            gained_in_pass = False
            continue
        score = scorer.cumulative(values)
        first = max(untried, key=lambda s: score[s + width] - score[s])
        tried.add(first)
        free = follows | ((anchor >= first) & (anchor < first + width))
        touched = np.zeros(layout.rows.shape[0], dtype=bool)
        touched[layout.columns[:, np.flatnonzero(free & ~follows)].indices] = True
        touched[rows_of_follows] = True
        sub, cols = restricted_problem(layout, problem, rows=np.flatnonzero(touched), free=free,
                                       values=values, cost=cost, integer=binary,
                                       name=f"window {first}-{first + width}")
        limit = window_seconds if left is None else min(window_seconds, left)
        try:
            result, solution = solver.solve(
                sub, attrs.evolve(config, time_limit_seconds=limit), values[cols])
        except SolveInterruptedError:
            raise KeyboardInterrupt from None
        except AutotmError as exc:  # the incumbent stands
            logger.info("windows: the solve of kernels %d-%d failed (%s)", first,
                        first + width, exc.message)
            break
        if result.termination is TerminationCondition.INTERRUPTED:
            raise KeyboardInterrupt
        windows += 1
        handoff_seconds += result.handoff_seconds
        solve_seconds += result.solve_seconds
        version = result.solver_version
        if solution is None:
            continue
        candidate = values.copy()
        candidate[cols] = solution
        objective = float(cost @ candidate)
        if objective < best * (1 - IMPROVEMENT_TOLERANCE):
            logger.debug("windows: kernels %d-%d: %.6g -> %.6g", first, first + width, best,
                         objective)
            values, best = candidate, objective
            gains += 1
            gained_in_pass = True
    logger.info("windows: %d solved, %d improved the incumbent: objective %.6g -> %.6g",
                windows, gains, initial, best)
    termination, status = settle_status(termination, has_solution=True, objective=best,
                                        best_bound=None)
    result = SolveResult(solver_name=solver.name, solver_version=version,
                         termination=termination, status=status, objective=best,
                         handoff_seconds=handoff_seconds, solve_seconds=solve_seconds,
                         n_variables=index.lp.n_vars, n_binaries=index.lp.n_binaries,
                         n_constraints=index.lp.n_rows)
    return RelaxAndFix(values=values, result=result)


class _Scorer:
    """What each window could gain under a solution: per kernel, its time over its lower
    bound plus the synchronous copies anchored at it (objective units), summed."""

    def __init__(self, index: ModelIndex, col_lower: Any, cost: np.ndarray, kind: np.ndarray,
                 anchor: np.ndarray, n: int) -> None:
        self.times = np.asarray(index.kernel_time_vars, dtype=np.int64)
        self.lower = np.asarray(col_lower, dtype=np.float64)[self.times]
        self.copies = np.flatnonzero((kind == EDGE) & (cost != 0))
        self.copy_cost, self.copy_anchor = cost[self.copies], anchor[self.copies]
        self.n = n

    def cumulative(self, values: np.ndarray) -> np.ndarray:
        """The scores' running sum from kernel 0 (``n + 1`` entries)."""
        score = values[self.times] - self.lower
        np.add.at(score, self.copy_anchor, self.copy_cost * values[self.copies])
        return np.concatenate([[0.0], np.cumsum(score)])


__all__ = ["WINDOW_KERNELS", "WINDOW_SECONDS", "improve_by_windows"]
