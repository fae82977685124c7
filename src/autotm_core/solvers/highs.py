"""HiGHS through highspy directly: the default solver.

The problem goes to HiGHS as the arrays of its :class:`MatrixProblem`, not
through Pyomo's solver interfaces: on a 5,000-binary model the hand-off took
0.3 s this way (from a Pyomo model, :func:`~autotm_core.solvers.pyomo.from_pyomo`
included) against 2-3 s through Pyomo's appsi and contrib interfaces, and those
ignore Ctrl-C until HiGHS returns. HiGHS runs in highspy's worker thread while
this thread waits, so Ctrl-C cancels it and the best solution so far is kept.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs

from autotm_core.errors import SolveInterruptedError, SolverError
from autotm_core.solvers.base import (
    MatrixProblem,
    SolutionStatus,
    SolverCapabilities,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    native_result,
)

log = logging.getLogger(__name__)

_TERMINATION_BY_MODEL_STATUS = {
    "kOptimal": TerminationCondition.OPTIMAL,
    "kTimeLimit": TerminationCondition.TIME_LIMIT,
    "kIterationLimit": TerminationCondition.ITERATION_LIMIT,
    "kSolutionLimit": TerminationCondition.ITERATION_LIMIT,
    "kObjectiveBound": TerminationCondition.ITERATION_LIMIT,
    "kObjectiveTarget": TerminationCondition.ITERATION_LIMIT,
    "kInfeasible": TerminationCondition.INFEASIBLE,
    "kUnbounded": TerminationCondition.UNBOUNDED,
    "kUnboundedOrInfeasible": TerminationCondition.INFEASIBLE_OR_UNBOUNDED,
    "kInterrupt": TerminationCondition.INTERRUPTED,
    "kHighsInterrupt": TerminationCondition.INTERRUPTED,
    "kLoadError": TerminationCondition.ERROR,
    "kModelError": TerminationCondition.ERROR,
    "kPresolveError": TerminationCondition.ERROR,
    "kSolveError": TerminationCondition.ERROR,
    "kPostsolveError": TerminationCondition.ERROR,
    "kMemoryLimit": TerminationCondition.ERROR,
}
"""HiGHS model status name -> termination condition; anything else is UNKNOWN."""

_FEASIBLE_SOLUTION = 2
"""HiGHS's ``kSolutionStatusFeasible``."""


def _highs_lp(problem: MatrixProblem) -> Any:
    import highspy
    import numpy as np

    lp = highspy.HighsLp()
    lp.num_col_ = problem.n_columns
    lp.num_row_ = problem.n_rows
    lp.col_cost_ = np.asarray(problem.cost, dtype=np.float64)
    lp.offset_ = float(problem.offset)
    lp.sense_ = highspy.ObjSense.kMaximize if problem.maximize else highspy.ObjSense.kMinimize
    inf = highspy.kHighsInf
    lp.col_lower_ = np.clip(problem.col_lower, -inf, inf)
    lp.col_upper_ = np.clip(problem.col_upper, -inf, inf)
    lp.row_lower_ = np.clip(problem.row_lower, -inf, inf)
    lp.row_upper_ = np.clip(problem.row_upper, -inf, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.asarray(problem.start, dtype=np.int32)
    lp.a_matrix_.index_ = np.asarray(problem.index, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(problem.value, dtype=np.float64)
    return lp


def _new_highs() -> Any:
    """A HiGHS instance, its start-up banner kept off standard output."""
    import highspy
    from pyomo.common.tee import capture_output

    with capture_output(capture_fd=True):
        return highspy.Highs()


def _set_option(highs: Any, key: str, value: Any) -> None:
    import highspy

    if highs.setOptionValue(key, value) != highspy.HighsStatus.kOk:
        raise SolverError(
            f"HiGHS rejected the option {key}={value!r}",
            hint="see the HiGHS option list; pass native options unchanged in SolverConfig.options",
        )


OVERRUN_GRACE = 0.05
"""HiGHS checks its time limit only between some of its steps (a long LP iteration or
presolve runs past it: retiming at GPT-2 12 layers took 16.5 s on a 3.5 s limit): past
the limit by this fraction of it (at least :data:`OVERRUN_GRACE_SECONDS`), the solve is
cancelled as Ctrl-C would, keeping its best solution, and reported as out of time."""
OVERRUN_GRACE_SECONDS = 0.5


_abandon_after_seconds: float | None = None
"""See :func:`abandon_on_interrupt` (``None``: wait until HiGHS stops)."""
_abandon_overruns = False
"""See :func:`abandon_on_interrupt`."""
_abandoned: list[Any] = []
"""HiGHS instances whose solve was abandoned (see :func:`abandoned_still_running`)."""


def abandoned_still_running() -> bool:
    """Whether a solve this process abandoned still runs. Its worker thread is a daemon, but
    HiGHS's C++ threads abort the process (``terminate called without an active
    exception``, status 134) when the interpreter finalizes under them: a process that
    abandoned a solve leaves with ``os._exit`` (the command line does)."""
    return any(h.is_solver_running() for h in _abandoned)


@contextlib.contextmanager
def abandon_on_interrupt(seconds: float, *, overruns: bool = False) -> Iterator[None]:
    """Within the ``with`` body, a HiGHS solve still running ``seconds`` after Ctrl-C (with
    ``overruns``, also after its time limit and grace) is abandoned: reported interrupted
    (or out of time) without a solution while its worker thread (a daemon) runs on. Some
    phases of HiGHS (presolve, symmetry detection, cut separation) never check for an
    interrupt or their
    time limit: Inception v4's synchronous MIP ran on for minutes after Ctrl-C (a MIP that
    does check stopped within 0.04-1.0 s at load 2-3), and retiming GPT-2 12 layers' start
    ran 27 s on a 9 s limit. highspy holds one lock for every instance in a process: until
    the abandoned solve ends, another cannot start and reports an error without a
    solution after waiting for it within its own time limit. The command line abandons
    both (every command's time limit is the user's deadline; a sweep's next point may then
    wait for the abandoned solve within its own limit); a library caller, by default,
    waits."""
    global _abandon_after_seconds, _abandon_overruns
    saved = _abandon_after_seconds, _abandon_overruns
    _abandon_after_seconds, _abandon_overruns = seconds, overruns
    try:
        yield
    finally:
        _abandon_after_seconds, _abandon_overruns = saved


@attrs.frozen
class _Run:
    """How a HiGHS solve ended."""

    interrupted: bool
    """Ctrl-C came while it ran."""
    overran: bool
    """It ran past its time limit by more than the grace, and was cancelled."""
    abandoned: bool
    """It did not stop soon enough after Ctrl-C or past its cutoff
    (:func:`abandon_on_interrupt`): nothing of it can be read."""
    busy: bool = False
    """It could not start: a solve this process abandoned still runs."""


def _wait_for_abandoned(highs: Any, time_limit_seconds: float | None) -> bool:
    """Whether HiGHS can start: a solve this process abandoned holds highspy's one lock
    until it ends; it is waited for, within the new solve's time limit."""
    if not highs.is_solver_running():
        return True
    log.info("waiting for a HiGHS solve this process abandoned to end")
    deadline = None if time_limit_seconds is None else time.perf_counter() + time_limit_seconds
    while highs.is_solver_running():
        if deadline is not None and time.perf_counter() > deadline:
            return False
        time.sleep(0.05)
    return True


def _run_interruptibly(highs: Any, time_limit_seconds: float | None) -> _Run:
    """Run HiGHS in its worker thread; on Ctrl-C, or past its time limit by more than the
    grace, cancel it and wait (after Ctrl-C, within :func:`abandon_on_interrupt`, no longer
    than its seconds)."""
    from highspy.highs import HighsError

    interrupted_at: float | None = None
    overran = False
    highs.HandleUserInterrupt = True
    started = time.perf_counter()
    cutoff = (None if time_limit_seconds is None else
              started + time_limit_seconds + max(OVERRUN_GRACE_SECONDS,
                                                 OVERRUN_GRACE * time_limit_seconds))
    if not _wait_for_abandoned(highs, time_limit_seconds):
        return _Run(interrupted=False, overran=False, abandoned=False, busy=True)
    try:
        highs.startSolve()
    except HighsError:  # highspy's one lock, taken again since
        return _Run(interrupted=False, overran=False, abandoned=False, busy=True)
    while True:
        try:
            finished, _ = highs.wait(0.1)
            if finished:
                return _Run(interrupted_at is not None, overran, abandoned=False)
            now = time.perf_counter()
            if cutoff is not None and not overran and now > cutoff:
                log.info("HiGHS ran past its time limit: cancelling it")
                overran = True
            if overran or interrupted_at is not None:
                highs.cancelSolve()  # again: a phase may start after the last request
            asked = interrupted_at if interrupted_at is not None else (
                cutoff if overran and _abandon_overruns else None)
            if (asked is not None and _abandon_after_seconds is not None
                    and now - asked > _abandon_after_seconds):
                log.warning("HiGHS does not stop (a phase that checks for no interrupt): "
                            "its solve is abandoned")
                _abandoned.append(highs)
                return _Run(interrupted=interrupted_at is not None, overran=overran,
                            abandoned=True)
        except KeyboardInterrupt:
            if interrupted_at is None:
                log.warning("interrupted: asking HiGHS to stop and keep its best solution")
                interrupted_at = time.perf_counter()
            highs.cancelSolve()


@attrs.frozen
class HighsSolver:
    """The HiGHS MILP solver (highspy); see the module docstring."""

    name: str = "highs"
    """Entry-point name."""
    description: str = "HiGHS MILP solver via highspy (default; warm start, Ctrl-C keeps best plan)"
    """One line for ``plugins``."""
    capabilities: ClassVar[SolverCapabilities] = SolverCapabilities(
        mip=True, warm_start=True, interrupt=True, duals=True)
    """Mixed-integer programs, partial starts, Ctrl-C keeps the best solution, row duals."""

    def unavailable_reason(self) -> str | None:
        """Why HiGHS cannot run here, or ``None``."""
        for module, package in (("highspy", "highspy"), ("scipy", "scipy")):
            if importlib.util.find_spec(module) is None:
                return f"the Python package {package!r} is not installed: pip install {package}"
        return None

    def solve(self, problem: MatrixProblem, config: SolverConfig | None = None,
              start: Any = None) -> tuple[SolveResult, Any]:
        """Solve ``problem`` with HiGHS (see :meth:`autotm_core.solvers.Solver.solve`).

        ``start`` may be partial (NaN where unknown): HiGHS completes it. With
        ``config.duals``, a continuous problem's row duals come back in the result's
        ``row_duals``.
        """
        return _solve(problem, SolverConfig() if config is None else config, start)


def _solve(problem: MatrixProblem, config: SolverConfig, start: Any) -> tuple[SolveResult, Any]:
    import highspy
    import numpy as np

    started = time.perf_counter()
    highs = _new_highs()
    log_fd, log_path = tempfile.mkstemp(prefix="autotm-highs-", suffix=".log")
    os.close(log_fd)
    try:
        _set_option(highs, "output_flag", True)
        _set_option(highs, "log_to_console", config.log_to_terminal)
        _set_option(highs, "log_file", log_path)
        if config.time_limit_seconds is not None:
            _set_option(highs, "time_limit", float(config.time_limit_seconds))
        _set_option(highs, "mip_rel_gap", float(config.relative_gap))
        if config.threads is not None:
            _set_option(highs, "threads", config.threads)
        for key, value in config.options.items():
            _set_option(highs, key, value)
        if highs.passModel(_highs_lp(problem)) == highspy.HighsStatus.kError:
            raise SolverError(f"HiGHS could not load model {problem.name!r}",
                              hint="see the HiGHS log with log_to_terminal=True")
        integer = np.flatnonzero(problem.is_integer).astype(np.int32)
        if integer.size:
            kinds = np.full(integer.size, highspy.HighsVarType.kInteger.value, dtype=np.uint8)
            highs.changeColsIntegrality(int(integer.size), integer, kinds)
        if config.warm_start and start is not None:
            _offer_start(highs, np.asarray(start, dtype=np.float64))
        handed_off = time.perf_counter()
        run = _run_interruptibly(highs, config.time_limit_seconds)
        solved = time.perf_counter()
        with open(log_path, encoding="utf-8", errors="replace") as stream:
            log_text = stream.read()
    finally:
        os.unlink(log_path)
    if run.abandoned or run.busy:  # nothing of it can be read
        if run.busy:
            termination, message = (TerminationCondition.ERROR, "HiGHS is still running a "
                                    "solve this process abandoned; no other can start")
        elif run.interrupted:
            termination, message = (TerminationCondition.INTERRUPTED, "interrupted (Ctrl-C); "
                                    "HiGHS did not stop, its solve was abandoned")
        else:
            termination, message = (TerminationCondition.TIME_LIMIT, "HiGHS ran past its "
                                    "time limit and did not stop; its solve was abandoned")
        return SolveResult(solver_name="highs", solver_version=highs.version(),
                           termination=termination, status=SolutionStatus.NO_SOLUTION,
                           message=message, handoff_seconds=handed_off - started,
                           solve_seconds=solved - handed_off), None
    result, values = _result(highs, problem, interrupted=run.interrupted, overran=run.overran,
                             log_text=log_text)
    if config.duals and values is not None and not problem.is_integer.any():
        result = attrs.evolve(result, row_duals=np.asarray(highs.getSolution().row_dual,
                                                           dtype=np.float64))
    loaded = time.perf_counter()
    result = attrs.evolve(result, handoff_seconds=(handed_off - started) + (loaded - solved),
                          solve_seconds=solved - handed_off)
    return result, values


def _result(highs: Any, problem: MatrixProblem, *, interrupted: bool, overran: bool,
            log_text: str) -> tuple[SolveResult, Any]:
    import numpy as np

    status_name = highs.getModelStatus().name
    termination = _TERMINATION_BY_MODEL_STATUS.get(status_name, TerminationCondition.UNKNOWN)
    if overran and termination is TerminationCondition.INTERRUPTED:
        termination = TerminationCondition.TIME_LIMIT
    if interrupted:
        termination = TerminationCondition.INTERRUPTED
    info = highs.getInfo()
    has_solution = info.primal_solution_status == _FEASIBLE_SOLUTION
    objective = best_bound = values = None
    if has_solution:
        values = np.asarray(highs.getSolution().col_value, dtype=np.float64)
        objective = info.objective_function_value
        if problem.is_integer.any():
            best_bound = info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else None
        elif termination is TerminationCondition.OPTIMAL:
            best_bound = objective
    if termination is TerminationCondition.INTERRUPTED and not has_solution:
        raise SolveInterruptedError(
            "HiGHS was interrupted (Ctrl-C) before it found any feasible solution",
            hint="let it run longer, or set a time limit to get the best plan found in time",
        )
    return native_result(
        problem, solver_name="highs", solver_version=highs.version(), termination=termination,
        has_solution=has_solution, objective=objective, best_bound=best_bound, log=log_text,
        message=status_name), values


def _offer_start(highs: Any, values: Any) -> None:
    """Give HiGHS the ``values`` known (NaN elsewhere); HiGHS completes a partial start."""
    import highspy
    import numpy as np

    known = np.flatnonzero(~np.isnan(values)).astype(np.int32)
    if known.size == 0:
        return
    status = highs.setSolution(int(known.size), known, values[known])
    if status == highspy.HighsStatus.kError:
        log.warning("HiGHS rejected the starting values; solving without a warm start")
    else:
        log.debug("warm start: %d of %d columns set", known.size, values.size)
