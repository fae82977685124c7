"""Near-optimal starting plans for the solver to start from: relax-and-fix, and retiming.

On these models the LP relaxation's bound sits within a fraction of a percent of
the integer optimum, but HiGHS spends most of its time in cut rounds before a
heuristic finds an incumbent that good; starting from the greedy plan (often
15-20% worse) does not help it stop. Relax-and-fix: solve the LP relaxation,
fix every binary the LP already sets to 0 or 1, and solve the small MIP left.
Its solution is feasible for the full model (only bounds were tightened), so it
is a plan of the full problem, and the LP relaxation's objective is a proven
lower bound: when the two are within the gap asked for, the problem is solved to
that gap without the full MIP; otherwise the solution is offered to the full
solve as its warm start. Either way the decoded plan is verified and simulated.
Both solves run on the backend the caller chose.

Retiming (asynchronous models whose LP relaxation is too big to pay: 441,000 columns
at Inception v4, or whose relax-and-fix LP ran out of time): keep where a held plan
(the synchronous plan) puts every tensor, slot by slot, and solve for when each of its
copies happens alone, at the boundary or overlapping a kernel of its window. Every
state fixed, only a transition's own edges stay free; the solution is feasible for the
full model and never worse than the held plan, which is its starting solution.
"""

from __future__ import annotations

import logging

import attrs
import numpy as np

from autotm_core.errors import AutotmError, SolveInterruptedError
from autotm_core.ilp.lp import LinearProgram, to_matrix_problem
from autotm_core.ilp.model_index import SLOT, ModelIndex
from autotm_core.ilp.search.budget import seconds_until
from autotm_core.solvers.base import (
    MatrixProblem,
    Solver,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    settle_status,
)

logger = logging.getLogger(__name__)

INTEGRAL_TOLERANCE = 1e-6
"""An LP value this close to 0 or 1 counts as integral (the binary is fixed to it)."""


@attrs.frozen(kw_only=True, eq=False)
class RelaxAndFix:
    """A feasible solution of the full model, with the LP relaxation's bound."""

    values: np.ndarray
    """One value per variable of the model."""
    result: SolveResult
    """The :class:`~autotm_core.solvers.SolveResult` of the fixed MIP, with the LP
    relaxation's objective as its best bound (so its gap is proven for the full model)."""
    row_duals: np.ndarray | None = None
    """The LP relaxation's row duals, when asked for."""
    trail: tuple[np.ndarray, ...] = ()
    """Earlier solutions the search held (windows), oldest first, each slower than
    :attr:`values`: fallbacks when a later check (e.g. packing) refuses the best."""


@attrs.frozen
class Unrelaxed:
    """Relax-and-fix gave no solution because its LP relaxation was not solved."""

    termination: TerminationCondition
    """Why the LP solve stopped (e.g. the time limit)."""


def relax_and_fix(index: ModelIndex, *, solver: Solver, time_limit_seconds: float | None,
                  relative_gap: float, lp: LinearProgram | None = None,
                  abandon_at: float | None = None) -> RelaxAndFix | Unrelaxed | None:
    """A feasible solution of ``index``'s model found by relax-and-fix; :class:`Unrelaxed`
    when its LP relaxation was not solved (e.g. out of time), ``None`` when it failed after.

    ``lp`` is the model to relax: ``index.lp`` by default, or the same with variables
    fixed by exact reductions (:mod:`autotm_core.ilp.reductions`; a smaller LP, the
    same optimum). Each of the two solves by ``solver`` gets ``time_limit_seconds``
    (``None``: no limit), and is abandoned still running at ``abandon_at`` (a
    :func:`time.perf_counter` reading; ``None``: never).
    """
    problem = to_matrix_problem(index.lp if lp is None else lp, name="relax-and-fix")
    if not np.asarray(problem.is_integer, dtype=bool).any():
        return None
    return relax_and_fix_matrix(problem, solver=solver, time_limit_seconds=time_limit_seconds,
                                relative_gap=relative_gap, abandon_at=abandon_at)


def relax_and_fix_matrix(problem: MatrixProblem, *, solver: Solver,
                         time_limit_seconds: float | None, relative_gap: float,
                         threads: int | None = None, duals: bool = False,
                         abandon_at: float | None = None) -> RelaxAndFix | Unrelaxed | None:
    """Relax-and-fix on ``problem`` with ``solver`` (see the module docstring).

    :class:`Unrelaxed` when the LP relaxation gives no solution, ``None`` when the fixed
    MIP gives none or a solve fails; Ctrl-C raises ``KeyboardInterrupt``.
    With ``duals``, the LP relaxation's row duals come back too (from a backend that
    gives them). A solve still running at ``abandon_at`` (a :func:`time.perf_counter`
    reading) is abandoned.
    """
    binary = np.asarray(problem.is_integer, dtype=bool)
    config = SolverConfig(time_limit_seconds=time_limit_seconds, relative_gap=relative_gap,
                          threads=threads, warm_start=False)
    try:
        relaxed, x = solver.solve(attrs.evolve(problem, is_integer=np.zeros_like(binary)),
                                  attrs.evolve(config, duals=duals,
                                               abandon_after_seconds=seconds_until(abandon_at)))
        if relaxed.termination is TerminationCondition.INTERRUPTED:
            raise KeyboardInterrupt  # the user's Ctrl-C, not a failed start
        if x is None:
            logger.info("relax-and-fix: the LP relaxation gave no solution (%s)",
                        relaxed.termination.value)
            return Unrelaxed(relaxed.termination)
        lower = np.array(problem.col_lower, dtype=np.float64)
        upper = np.array(problem.col_upper, dtype=np.float64)
        ones = binary & (x >= 1 - INTEGRAL_TOLERANCE)
        zeros = binary & (x <= INTEGRAL_TOLERANCE)
        lower[ones], upper[zeros] = 1.0, 0.0
        logger.info("relax-and-fix: the LP fixes %d of %d binaries", int(ones.sum() + zeros.sum()),
                    int(binary.sum()))
        settled = relaxed.termination is TerminationCondition.OPTIMAL
        if settled and not (binary & ~ones & ~zeros).any():
            return _integral(relaxed, x, ones, zeros)
        fixed, y = solver.solve(attrs.evolve(problem, col_lower=lower, col_upper=upper),
                                attrs.evolve(config,
                                             abandon_after_seconds=seconds_until(abandon_at)))
    except SolveInterruptedError:
        raise KeyboardInterrupt from None  # the user's Ctrl-C, not a failed start
    except AutotmError as exc:  # only a start: planning goes on without it
        logger.info("relax-and-fix failed: %s", exc.message)
        return None
    if fixed.termination is TerminationCondition.INTERRUPTED:
        raise KeyboardInterrupt
    if y is None or fixed.objective is None or relaxed.objective is None:
        logger.info("relax-and-fix: the fixed MIP gave no solution (%s)", fixed.termination.value)
        return None
    bound = relaxed.objective if relaxed.termination is TerminationCondition.OPTIMAL else None
    termination, status = settle_status(
        TerminationCondition.OPTIMAL if fixed.has_solution else fixed.termination,
        has_solution=True, objective=fixed.objective, best_bound=bound)
    result = attrs.evolve(fixed, best_bound=bound, termination=termination, status=status,
                          solve_seconds=relaxed.solve_seconds + fixed.solve_seconds,
                          handoff_seconds=relaxed.handoff_seconds + fixed.handoff_seconds)
    logger.info("relax-and-fix: the fixed MIP's objective %.6g (%s), the LP's %.6g, in %.1f s",
                fixed.objective, fixed.termination.value, relaxed.objective,
                result.solve_seconds)
    return RelaxAndFix(values=y, result=result, row_duals=relaxed.row_duals)


def _integral(relaxed: SolveResult, x: np.ndarray, ones: np.ndarray,
              zeros: np.ndarray) -> RelaxAndFix:
    """The LP relaxation's optimum when it set every binary to 0 or 1: an optimum of the
    MIP too, with the LP's objective as its bound. The fixed MIP is not solved (on a
    stretch of chain:20000, 49,585 rows: HiGHS took 4.9 s over a model with nothing left
    to decide)."""
    values = np.array(x, dtype=np.float64)
    values[ones], values[zeros] = 1.0, 0.0
    result = attrs.evolve(relaxed, best_bound=relaxed.objective, row_duals=None)
    return RelaxAndFix(values=values, result=result, row_duals=relaxed.row_duals)


def retime(index: ModelIndex, start: np.ndarray, *, solver: Solver,
           time_limit_seconds: float | None, relative_gap: float,
           abandon_at: float | None = None) -> RelaxAndFix | None:
    """The best timing of ``start``'s copies with its states kept (see the module
    docstring), or ``None`` when the solve gives no solution (``start`` is then the best
    known). The result carries no bound: the model it solves is narrower than the full one.
    A solve still running at ``abandon_at`` (a :func:`time.perf_counter` reading) is
    abandoned. Ctrl-C raises ``KeyboardInterrupt``.
    """
    problem = to_matrix_problem(index.lp, name="retime")
    slots = np.asarray(index.columns.kind) == SLOT
    lower = np.array(problem.col_lower, dtype=np.float64)
    upper = np.array(problem.col_upper, dtype=np.float64)
    lower[slots] = upper[slots] = np.round(np.asarray(start, dtype=np.float64)[slots])
    config = SolverConfig(time_limit_seconds=time_limit_seconds, relative_gap=relative_gap,
                          warm_start=True, abandon_after_seconds=seconds_until(abandon_at))
    try:
        result, values = solver.solve(attrs.evolve(problem, col_lower=lower, col_upper=upper),
                                      config, start)
    except SolveInterruptedError:
        raise KeyboardInterrupt from None
    except AutotmError as exc:  # only a start: planning goes on without it
        logger.info("retiming failed: %s", exc.message)
        return None
    if result.termination is TerminationCondition.INTERRUPTED:
        raise KeyboardInterrupt
    if values is None or result.objective is None:
        logger.info("retiming gave no solution (%s)", result.termination.value)
        return None
    logger.info("retiming: objective %.6g in %.1f s (%s)", result.objective,
                result.solve_seconds, result.termination.value)
    return RelaxAndFix(values=values, result=attrs.evolve(result, best_bound=None))
