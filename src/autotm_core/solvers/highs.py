"""HiGHS through highspy directly: the default solver.

The problem goes to HiGHS as the arrays of its :class:`MatrixProblem`, not
through Pyomo's solver interfaces: on a 5,000-binary model the hand-off took
0.3 s this way (from a Pyomo model, :func:`~autotm_core.solvers.pyomo.from_pyomo`
included) against 2-3 s through Pyomo's appsi and contrib interfaces, and those
ignore Ctrl-C until HiGHS returns. HiGHS runs in highspy's worker thread while
this thread waits, so Ctrl-C cancels it and the best solution so far is kept.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import attrs

from autotm_core.errors import SolveInterruptedError, SolverError
from autotm_core.solvers.base import (
    MatrixProblem,
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
    """A HiGHS instance, its start-up banner kept off standard output. Ctrl-C while Pyomo
    gives the streams back is a KeyboardInterrupt (Pyomo reports it as a RuntimeError
    starting ``KeyboardInterrupt:``, which the command line took for an internal error)."""
    import highspy
    from pyomo.common.tee import capture_output

    try:
        with capture_output(capture_fd=True):
            return highspy.Highs()
    except RuntimeError as exc:
        if str(exc).startswith("KeyboardInterrupt"):
            raise KeyboardInterrupt from exc
        raise


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
CANCEL_SHARE = 0.25
"""A solve the caller abandons (:attr:`~autotm_core.solvers.SolverConfig.abandon_after_seconds`)
is cancelled no later than this share of the way from its time limit to the abandonment,
the rest left for it to stop with its solution: a MIP that checks stopped within
0.04-1.0 s of a cancellation at load 2-3, the Llama-7B-shaped step's whole model (861,339
nonzeros, 4:1) in 1.3 s at load 3.5, after 13.7 s past its limit without checking it."""
POLL_SECONDS = 0.1
"""How often the waiting thread looks at the solve (Ctrl-C, the cutoffs)."""


_abandon_after_seconds: float | None = None
"""See :func:`abandon_on_interrupt` (``None``: wait until HiGHS stops)."""
_abandon_overruns = False
"""See :func:`abandon_on_interrupt`."""
_abandoned: list[tuple[Any, threading.Thread]] = []
"""HiGHS instances whose solve was abandoned, with the thread that runs it (see
:func:`abandoned_still_running`)."""


def abandoned_still_running() -> bool:
    """Whether a solve this process abandoned still runs. Its worker thread is a daemon, but
    HiGHS's C++ threads abort the process (``terminate called without an active
    exception``, status 134) when the interpreter finalizes under them: a process that
    abandoned a solve leaves with ``os._exit`` (the command line does), or waits for it at
    exit (:func:`_wait_for_abandoned_at_exit`, registered with the first abandonment)."""
    return any(thread.is_alive() for _, thread in _abandoned)


def _abandon(highs: Any, thread: threading.Thread) -> None:
    """Leave ``highs``'s solve, cancelled, to end on its own."""
    if not _abandoned:
        atexit.register(_wait_for_abandoned_at_exit)
    _abandoned[:] = [(h, t) for h, t in _abandoned if t.is_alive()]  # free ended ones
    _abandoned.append((highs, thread))


def wait_for_abandoned_solves(why: str = "") -> float:
    """Wait for every solve this process abandoned to end (each was cancelled and stops at
    HiGHS's next check), asking each again to stop as it goes; the seconds waited. A sweep
    calls it between points: an abandoned solve still running holds highspy's one lock, and
    the next point's solves would wait for it within their own time limits, or not start
    at all."""
    running = [(h, t) for h, t in _abandoned if t.is_alive()]
    if not running:
        return 0.0
    started = time.perf_counter()
    log.info("waiting for %d abandoned HiGHS solve(s) to stop%s", len(running), why)
    for highs, thread in running:
        while thread.is_alive():
            highs.cancelSolve()
            thread.join(POLL_SECONDS)
    return time.perf_counter() - started


def _wait_for_abandoned_at_exit() -> None:
    """At exit (``atexit``, before the interpreter finalizes), wait for the solves this process
    abandoned: they were cancelled and stop at HiGHS's next check, and a process that
    finalizes under HiGHS's threads aborts. A library caller's process thus exits late,
    never with a crash; the command line leaves with ``os._exit`` before this runs."""
    running = sum(thread.is_alive() for _, thread in _abandoned)
    if running:
        log.warning("waiting for %d abandoned HiGHS solve(s) to stop before exiting", running)
    wait_for_abandoned_solves()


@contextlib.contextmanager
def abandon_on_interrupt(seconds: float, *, overruns: bool = False) -> Iterator[None]:
    """Within the ``with`` body, a HiGHS solve still running ``seconds`` after Ctrl-C (with
    ``overruns``, also after its time limit and grace) is abandoned: reported interrupted
    (or abandoned) with the best solution it had reported, while its worker thread (a
    daemon) runs on. Some
    phases of HiGHS (presolve, symmetry detection, cut separation) never check for an
    interrupt or their
    time limit: Inception v4's synchronous MIP ran on for minutes after Ctrl-C (a MIP that
    does check stopped within 0.04-1.0 s at load 2-3), and retiming GPT-2 12 layers' start
    ran 27 s on a 9 s limit. highspy holds one lock for every instance in a process: until
    the abandoned solve ends, another cannot start and reports an error without a
    solution after waiting for it within its own time limit. The command line abandons
    both (every command's time limit is the user's deadline; a sweep's next point may then
    wait for the abandoned solve within its own limit); a library caller waits after
    Ctrl-C, and past its limit until the config's
    :attr:`~autotm_core.solvers.SolverConfig.abandon_after_seconds` (planning sets it)."""
    global _abandon_after_seconds, _abandon_overruns
    saved = _abandon_after_seconds, _abandon_overruns
    _abandon_after_seconds, _abandon_overruns = seconds, overruns
    try:
        yield
    finally:
        _abandon_after_seconds, _abandon_overruns = saved


@attrs.define
class _Incumbent:
    """What HiGHS reported while it ran: its last improving solution (a copy) and its latest
    dual bound (``None``: none finite yet), what an abandoned solve leaves, since nothing
    can be read from HiGHS while its solve runs. Written by HiGHS's thread (its MIP
    callbacks), read after it is abandoned; each field is replaced whole."""

    values: Any = None
    bound: float | None = None

    def improved(self, event: Any) -> None:
        import numpy as np

        self.values = np.array(event.data_out.mip_solution, dtype=np.float64, copy=True)
        self.bounded(event)

    def bounded(self, event: Any) -> None:
        bound = float(event.data_out.mip_dual_bound)
        if math.isfinite(bound):
            self.bound = bound


@attrs.frozen
class _Run:
    """How a HiGHS solve ended."""

    interrupted: bool
    """Ctrl-C came while it ran."""
    overran: bool
    """It ran past its time limit by more than the grace, and was cancelled."""
    abandoned: bool
    """It did not stop soon enough after Ctrl-C or past its cutoff
    (:func:`abandon_on_interrupt`, the config's ``abandon_after_seconds``): nothing of it
    can be read but what it reported while it ran."""
    busy: bool = False
    """It could not start: a solve this process abandoned still runs."""


def _wait_for_abandoned(highs: Any, seconds: float | None) -> bool:
    """Whether HiGHS can start: a solve this process abandoned holds highspy's one lock
    until it ends; it is waited for, asked again to stop, for at most ``seconds``."""
    if not highs.is_solver_running():
        return True
    log.info("waiting for a HiGHS solve this process abandoned to end")
    deadline = None if seconds is None else time.perf_counter() + seconds
    while highs.is_solver_running():
        for abandoned, _ in _abandoned:
            abandoned.cancelSolve()
        if deadline is not None and time.perf_counter() > deadline:
            return False
        time.sleep(POLL_SECONDS / 2)
    return True


def _cutoffs(started: float, time_limit_seconds: float | None,
             abandon_at: float | None) -> tuple[float | None, float | None]:
    """When to cancel a solve started at ``started`` and when to abandon it (``None``:
    never), as :func:`time.perf_counter` readings: cancelled past its limit by the grace
    (:data:`OVERRUN_GRACE`), but no later than :data:`CANCEL_SHARE` of the way from its
    limit to ``abandon_at``, so that a phase that does check stops, keeping its solution,
    before the caller leaves."""
    cancel_at = (None if time_limit_seconds is None else
                 started + time_limit_seconds + max(OVERRUN_GRACE_SECONDS,
                                                    OVERRUN_GRACE * time_limit_seconds))
    if abandon_at is not None:  # without a limit, cancelled as close to it as past one
        limit_end = (started + time_limit_seconds if time_limit_seconds is not None
                     else abandon_at - CANCEL_SHARE * max(0.0, abandon_at - started))
        before = limit_end + CANCEL_SHARE * max(0.0, abandon_at - limit_end)
        cancel_at = min(before, abandon_at) if cancel_at is None else min(cancel_at, before,
                                                                          abandon_at)
    return cancel_at, abandon_at


def _run_interruptibly(highs: Any, time_limit_seconds: float | None,
                       abandon_at: float | None = None) -> _Run:
    """Run HiGHS in its worker thread; on Ctrl-C, or past its time limit by more than the
    grace, cancel it and wait (after Ctrl-C, within :func:`abandon_on_interrupt`, no longer
    than its seconds); at ``abandon_at`` (a :func:`time.perf_counter` reading), abandon it
    whatever it is doing."""
    from highspy.highs import HighsError

    interrupted_at: float | None = None
    overran = False
    highs.HandleUserInterrupt = True
    started = time.perf_counter()
    cutoff, abandon_at = _cutoffs(started, time_limit_seconds, abandon_at)
    waits = [s for s in (time_limit_seconds,
                         None if abandon_at is None else abandon_at - started) if s is not None]
    if not _wait_for_abandoned(highs, min(waits) if waits else None):
        return _Run(interrupted=False, overran=False, abandoned=False, busy=True)
    try:
        thread = highs.startSolve()
    except HighsError:  # highspy's one lock, taken again since
        return _Run(interrupted=False, overran=False, abandoned=False, busy=True)
    while True:
        try:
            wait = POLL_SECONDS if abandon_at is None else min(
                POLL_SECONDS, max(0.0, abandon_at - time.perf_counter()))
            finished, _ = highs.wait(wait)
            if finished:
                return _Run(interrupted_at is not None, overran, abandoned=False)
            now = time.perf_counter()
            if cutoff is not None and not overran and now >= cutoff:
                log.info("HiGHS ran past its time limit: cancelling it")
                overran = True
            if overran or interrupted_at is not None:
                highs.cancelSolve()  # again: a phase may start after the last request
            asked = interrupted_at if interrupted_at is not None else (
                cutoff if overran and _abandon_overruns else None)
            late = (asked is not None and _abandon_after_seconds is not None
                    and now - asked > _abandon_after_seconds)
            if late or (abandon_at is not None and now >= abandon_at):
                log.warning("HiGHS does not stop (a phase that checks for no interrupt): "
                            "its solve is abandoned")
                _abandon(highs, thread)
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
        mip=True, warm_start=True, interrupt=True, duals=True, abandon=True)
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
        incumbent = _Incumbent()
        if integer.size:
            highs.cbMipImprovingSolution.subscribe(incumbent.improved)
            highs.cbMipInterrupt.subscribe(incumbent.bounded)
        abandon_at = (None if config.abandon_after_seconds is None
                      else started + config.abandon_after_seconds)
        handed_off = time.perf_counter()
        run = _run_interruptibly(highs, config.time_limit_seconds, abandon_at)
        solved = time.perf_counter()
        with open(log_path, encoding="utf-8", errors="replace") as stream:
            log_text = stream.read()
    finally:
        os.unlink(log_path)
    if run.abandoned or run.busy:  # nothing of it can be read but what it reported
        return _left(highs, problem, run, incumbent, log_text=log_text,
                     handoff_seconds=handed_off - started, solve_seconds=solved - handed_off)
    result, values = _result(highs, problem, interrupted=run.interrupted, overran=run.overran,
                             log_text=log_text)
    if config.duals and values is not None and not problem.is_integer.any():
        result = attrs.evolve(result, row_duals=np.asarray(highs.getSolution().row_dual,
                                                           dtype=np.float64))
    loaded = time.perf_counter()
    result = attrs.evolve(result, handoff_seconds=(handed_off - started) + (loaded - solved),
                          solve_seconds=solved - handed_off)
    return result, values


def _left(highs: Any, problem: MatrixProblem, run: _Run, reported: _Incumbent, *,
          log_text: str, handoff_seconds: float,
          solve_seconds: float) -> tuple[SolveResult, Any]:
    """The result of a solve that could not start (``busy``) or was abandoned still running:
    the last improving solution it reported, if any, and the last dual bound."""
    values, bound = reported.values, reported.bound
    if run.busy:
        termination, message = (TerminationCondition.ERROR, "HiGHS is still running a "
                                "solve this process abandoned; no other can start")
        values = bound = None
    elif run.interrupted:
        termination, message = (TerminationCondition.INTERRUPTED, "interrupted (Ctrl-C); "
                                "HiGHS did not stop, its solve was abandoned")
    else:
        termination, message = (TerminationCondition.ABANDONED, "HiGHS had not stopped "
                                "when the caller stopped waiting (past its time limit, "
                                "cancelled); its solve was abandoned")
    if values is not None:
        message += "; the last solution it reported is kept"
    result = native_result(
        problem, solver_name="highs", solver_version=highs.version(), termination=termination,
        has_solution=values is not None,
        objective=None if values is None else float(problem.cost @ values + problem.offset),
        best_bound=bound, log=log_text, message=message)
    return attrs.evolve(result, handoff_seconds=handoff_seconds,
                        solve_seconds=solve_seconds), values


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
