"""Improving a feasible solution of the model one window of kernels at a time.

A large-neighbourhood search for models whose full MIP does not pay within the
time asked for (asynchronous models of large graphs: Inception v4 b64 has
441,470 columns, and the full MIP's root LP alone outlasts a minute). Retiming
(:func:`~autotm_core.ilp.incumbent.retime`) keeps every state of the held plan and
only moves its copies; the gain of overlap needs states to change too (a tensor
fetched during an earlier compute-bound kernel instead of read from the slow pool,
room made for it by an earlier eviction). So, a window of
the strategy's :attr:`~autotm_core.ilp.search.strategy.Strategy.window_kernels`
kernels at a time:

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
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import numpy as np

from autotm_core.errors import AutotmError, SolveInterruptedError
from autotm_core.ilp.incumbent import RelaxAndFix
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.model_index import EDGE, OCCUPANCY, TIME, ModelIndex
from autotm_core.ilp.search.budget import seconds_until
from autotm_core.solvers.base import (
    SolverConfig,
    SolveResult,
    TerminationCondition,
    settle_status,
)

if TYPE_CHECKING:
    from autotm_core.ilp.search.strategy import Strategy
    from autotm_core.solvers.base import Solver

logger = logging.getLogger(__name__)

def improve_by_windows(index: ModelIndex, start: np.ndarray, *, solver: Solver,
                       deadline: float | None, relative_gap: float, strategy: Strategy,
                       accept: Callable[[np.ndarray], bool] | None = None,
                       abandon_at: float | None = None) -> RelaxAndFix:
    """``start`` improved window by window (see the module docstring), sized and timed by
    ``strategy``, until ``deadline`` (a :func:`time.perf_counter` reading; ``None``: until a
    pass gains nothing).

    ``start`` is a feasible solution of ``index``'s model (one value per column). The
    result's :attr:`~autotm_core.ilp.incumbent.RelaxAndFix.trail` holds the newest
    :attr:`~autotm_core.ilp.search.strategy.Strategy.trail_length` incumbents it replaced,
    oldest first; its solve says the best objective found, no bound, the seconds of every
    solve, and why the search ended: ``time_limit`` at the deadline, else ``unknown`` (a
    pass gained nothing: not proven optimal). A failing solve ends the search with the best
    solution found so far; Ctrl-C raises ``KeyboardInterrupt``. A window's solve still
    running at ``abandon_at`` (a :func:`time.perf_counter` reading) is abandoned.
    """
    model = _Windows(index, solver)
    width = max(1, min(strategy.window_kernels, model.n // strategy.model_windows))
    values = np.asarray(start, dtype=np.float64).copy()
    search = _Search(model=model, strategy=strategy, deadline=deadline, abandon_at=abandon_at,
                     accept=accept,
                     width=width, starts=_window_starts(model.n, width),
                     config=SolverConfig(relative_gap=min(relative_gap, 1e-4), warm_start=True),
                     values=values, best=float(model.cost @ values),
                     trail=deque(maxlen=strategy.trail_length))
    initial = search.best
    termination = search.run()
    logger.info("windows: %d solved, %d improved the incumbent (%d more refused by the "
                "caller's test): objective %.6g -> %.6g", search.windows, search.gains,
                search.refused, initial, search.best)
    return RelaxAndFix(values=search.values, result=model.result(search.best, termination),
                       trail=tuple(search.trail))


def _window_starts(n: int, width: int) -> list[int]:
    """The first kernel of each window of ``width`` of ``n`` kernels: half a window apart,
    the last one ending at the last kernel (none when one window would cover them all)."""
    if n <= width:
        return []
    return sorted({*range(0, n - width + 1, max(1, width // 2)), n - width})


@attrs.define(kw_only=True)
class _Search:
    """One search by windows: what it is given, and the incumbent as it improves."""

    model: _Windows
    strategy: Strategy
    deadline: float | None
    abandon_at: float | None
    """When a window's solve still running is abandoned (:func:`time.perf_counter`)."""
    accept: Callable[[np.ndarray], bool] | None
    width: int
    """Kernels per window."""
    starts: list[int]
    """Each window's first kernel."""
    config: SolverConfig
    """Every window's solve settings but its time limit."""
    values: np.ndarray
    """The incumbent: one value per column."""
    best: float
    """The incumbent's objective."""
    trail: deque[np.ndarray]
    """Incumbents replaced, oldest first."""
    windows: int = 0
    """Windows solved."""
    gains: int = 0
    """Windows that improved the incumbent."""
    refused: int = 0
    """Windows that would have, but the caller's test refused."""

    def run(self) -> TerminationCondition:
        """Try windows, best score first, in passes until one gains nothing, the deadline
        comes or a solve fails; why it stopped (``unknown`` but at the deadline)."""
        tried: set[int] = set()
        gained_in_pass = False
        while True:
            left = None if self.deadline is None else self.deadline - time.perf_counter()
            if left is not None and left < self.strategy.min_solve_seconds:
                return TerminationCondition.TIME_LIMIT
            untried = [s for s in self.starts if s not in tried]
            if not untried:
                if not gained_in_pass:
                    return TerminationCondition.UNKNOWN
                tried.clear()
                gained_in_pass = False
                continue
            score = self.model.scores(self.values)
            first = max(untried, key=lambda s: score[s + self.width] - score[s])
            tried.add(first)
            try:
                candidate = self._solve(first, left)
            except AutotmError as exc:  # the incumbent stands
                logger.info("windows: the solve of kernels %d-%d failed (%s)", first,
                            first + self.width, exc.message)
                return TerminationCondition.UNKNOWN
            if candidate is not None and self._offer(first, candidate):
                gained_in_pass = True

    def _solve(self, first: int, left: float | None) -> np.ndarray | None:
        """The window from kernel ``first`` solved within ``left`` seconds (``None``: no
        deadline) and the strategy's window seconds; ``None`` without a solution."""
        limit = (self.strategy.window_seconds if left is None
                 else min(self.strategy.window_seconds, left))
        candidate = self.model.solve(self.values, first, first + self.width,
                                     attrs.evolve(self.config, time_limit_seconds=limit,
                                                  abandon_after_seconds=seconds_until(
                                                      self.abandon_at)))
        self.windows += 1
        return candidate

    def _offer(self, first: int, candidate: np.ndarray) -> bool:
        """Take ``candidate`` (the window from kernel ``first``'s solution) as the incumbent
        if it gains more than the strategy's tolerance and the caller's test accepts it;
        whether it was taken."""
        objective = float(self.model.cost @ candidate)
        if not objective < self.best * (1 - self.strategy.improvement_tolerance):
            return False
        if self.accept is not None and not self.accept(candidate):
            self.refused += 1
            return False
        logger.debug("windows: kernels %d-%d: %.6g -> %.6g", first, first + self.width,
                     self.best, objective)
        self.trail.append(self.values)
        self.values, self.best = candidate, objective
        self.gains += 1
        return True


class _Windows:
    """A model cut into windows: the sub-model of the decisions anchored in some kernels,
    every other held at given values, and its solve."""

    def __init__(self, index: ModelIndex, solver: Solver) -> None:
        from autotm_core.ilp.approximate.layout import model_layout

        self.index, self.solver = index, solver
        self.problem = to_matrix_problem(index.lp, name="windows")
        self.layout = model_layout(index, self.problem)
        self.cost = np.asarray(self.problem.cost, dtype=np.float64)
        self.binary = np.asarray(self.problem.is_integer, dtype=bool)
        self.kind, self.anchor = self.layout.kind, self.layout.col_anchor
        self.follows = (self.kind == TIME) | (self.kind == OCCUPANCY)
        self.rows_of_follows = np.unique(
            self.layout.columns[:, np.flatnonzero(self.follows)].indices)
        self.n = self.layout.n_kernels
        self.handoff_seconds = self.solve_seconds = 0.0
        self.version = ""
        self.times = np.asarray(index.kernel_time_vars, dtype=np.int64)
        self.time_floor = np.asarray(self.problem.col_lower, dtype=np.float64)[self.times]
        self.copies = np.flatnonzero((self.kind == EDGE) & (self.cost != 0))

    def scores(self, values: np.ndarray) -> np.ndarray:
        """What windows could gain under ``values``, as a running sum from kernel 0 (``n +
        1`` entries): per kernel, its time over its lower bound plus the synchronous copies
        anchored at it (objective units)."""
        score = values[self.times] - self.time_floor
        np.add.at(score, self.anchor[self.copies], self.cost[self.copies] * values[self.copies])
        return np.concatenate([[0.0], np.cumsum(score)])

    def solve(self, values: np.ndarray, first: int, last: int,
              config: SolverConfig) -> np.ndarray | None:
        """``values`` with the decisions anchored in kernels ``first..last - 1`` and every
        kernel time and occupancy solved for, starting from ``values``, the rest held;
        ``None`` without a solution. Ctrl-C raises ``KeyboardInterrupt``."""
        from autotm_core.ilp.approximate.layout import restricted_problem

        layout = self.layout
        free = self.follows | ((self.anchor >= first) & (self.anchor < last))
        touched = np.zeros(layout.rows.shape[0], dtype=bool)
        touched[layout.columns[:, np.flatnonzero(free & ~self.follows)].indices] = True
        touched[self.rows_of_follows] = True
        sub, cols = restricted_problem(layout, self.problem, rows=np.flatnonzero(touched),
                                       free=free, values=values, cost=self.cost,
                                       integer=self.binary, name=f"window {first}-{last}")
        try:
            result, solution = self.solver.solve(sub, config, values[cols])
        except SolveInterruptedError:
            raise KeyboardInterrupt from None
        if result.termination is TerminationCondition.INTERRUPTED:
            raise KeyboardInterrupt
        self.handoff_seconds += result.handoff_seconds
        self.solve_seconds += result.solve_seconds
        self.version = result.solver_version
        if solution is None:
            return None
        out = values.copy()
        out[cols] = solution
        return out

    def result(self, objective: float, termination: TerminationCondition) -> SolveResult:
        """A solve result for the search: its best ``objective``, no bound, every solve's
        seconds."""
        termination, status = settle_status(termination, has_solution=True,
                                            objective=objective, best_bound=None)
        lp = self.index.lp
        return SolveResult(solver_name=self.solver.name, solver_version=self.version,
                           termination=termination, status=status, objective=objective,
                           handoff_seconds=self.handoff_seconds,
                           solve_seconds=self.solve_seconds, n_variables=lp.n_vars,
                           n_binaries=lp.n_binaries, n_constraints=lp.n_rows)


__all__ = ["improve_by_windows"]
