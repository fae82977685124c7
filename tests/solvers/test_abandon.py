"""A HiGHS solve that does not stop is left behind at the caller's
``abandon_after_seconds``, keeping the last solution it reported, and a process that left
one behind still exits cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import autotm_core
from autotm_core.solvers import SolutionStatus, SolverConfig, TerminationCondition
from autotm_core.solvers.highs import CANCEL_SHARE, HighsSolver, _cutoffs

from .stall import Stall, knapsack, stall  # noqa: F401 (the fixture)

ABANDON_SECONDS = 1.5
"""When the tests' stalled solves are abandoned."""
LATE_SECONDS = 0.5
"""How late the caller may get its answer: the waiting thread looks every 0.1 s, and a
loaded machine's hand-off and reading back take some more."""


@pytest.mark.highs
@pytest.mark.parametrize("after_a_solution", [False, True])
def test_a_solve_that_does_not_stop_is_abandoned_with_what_it_reported(
        stall: Stall, after_a_solution: bool) -> None:  # noqa: F811
    problem = knapsack()
    stall.armed, stall.after_a_solution = True, after_a_solution
    started = time.perf_counter()
    result, values = HighsSolver().solve(problem, SolverConfig(
        time_limit_seconds=0.5, relative_gap=0.0, abandon_after_seconds=ABANDON_SECONDS))
    took = time.perf_counter() - started
    assert stall.stalled == 1
    assert ABANDON_SECONDS <= took <= ABANDON_SECONDS + LATE_SECONDS
    assert result.termination is TerminationCondition.ABANDONED
    assert "abandoned" in result.message
    if after_a_solution:
        assert result.status is SolutionStatus.FEASIBLE and values is not None
        assert result.objective == pytest.approx(float(problem.cost @ values) + problem.offset)
        # the dual bound it had reported by then (a maximisation: above the solution)
        assert result.best_bound is not None and result.best_bound >= result.objective - 1e-6
        weights = np.asarray(problem.value).reshape(problem.n_rows, problem.n_columns)
        assert (weights @ values <= problem.row_upper + 1e-6).all()
    else:
        assert result.status is SolutionStatus.NO_SOLUTION and values is None


@pytest.mark.highs
def test_a_sweep_point_waits_for_an_earlier_points_abandoned_solve(
        stall: Stall, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # planned after an abandoned solve still running, a point's own solves would wait for it
    # within their time limits: the point waits first, outside its own time
    import threading

    from autotm_core.solvers.highs import abandoned_still_running, wait_for_abandoned_solves
    from autotm_core.sweep import SweepPoint, run_point

    stall.armed = True
    HighsSolver().solve(knapsack(), SolverConfig(time_limit_seconds=0.2, relative_gap=0.0,
                                                 abandon_after_seconds=0.5))
    stall.armed = False
    assert abandoned_still_running()
    # it stops at its next check after this: later than the point's whole time limit
    threading.Timer(5.0, stall.release.set).start()
    started = time.perf_counter()
    result = run_point(SweepPoint(graph="example:mlp", system="optane-2019",
                                  planner="static", limit="4:1", time_limit_seconds=2.0))
    assert not abandoned_still_running() and time.perf_counter() - started >= 4.9
    # without the wait its one solve could not start within its limit: greedy's or no plan
    assert result.status == "ok" and result.source == "ilp"
    assert result.termination in ("gap_reached", "optimal", "time_limit")
    assert wait_for_abandoned_solves() == 0.0  # none left


@pytest.mark.highs
def test_a_solve_that_stops_in_time_is_not_abandoned() -> None:
    result, values = HighsSolver().solve(knapsack(), SolverConfig(
        time_limit_seconds=0.3, relative_gap=0.0, abandon_after_seconds=30.0))
    assert result.termination is TerminationCondition.TIME_LIMIT
    assert values is not None


def test_the_cancellation_comes_before_the_abandonment() -> None:
    cancel, abandon = _cutoffs(100.0, 100.0, 204.0)  # before its own grace (5 s) is out
    assert abandon == 204.0 and cancel == pytest.approx(200.0 + CANCEL_SHARE * 4.0)
    assert _cutoffs(100.0, 10.0, None) == (pytest.approx(110.5), None)  # the grace alone
    assert _cutoffs(100.0, 10.0, 114.0)[0] == pytest.approx(110.5)
    cancel, abandon = _cutoffs(100.0, 10.0, 105.0)  # abandoned before its own limit
    assert cancel == abandon == 105.0
    cancel, abandon = _cutoffs(100.0, None, 104.0)  # no limit: cancelled near the end
    assert 100.0 < cancel < abandon == 104.0


EXITS = textwrap.dedent("""
    import threading, highspy
    from autotm_core.solvers import SolverConfig
    from autotm_core.solvers.highs import HighsSolver, abandoned_still_running
    from solvers.stall import knapsack
    cancel = highspy.Highs.cancelSolve
    highspy.Highs.cancelSolve = lambda highs: None  # deaf to cancellations, still solving
    def hear_again():
        highspy.Highs.cancelSolve = cancel
    timer = threading.Timer(2.0, hear_again)  # a while after the process began to exit
    timer.daemon = True
    timer.start()
    result, _ = HighsSolver().solve(knapsack(120, 60), SolverConfig(
        relative_gap=0.0, abandon_after_seconds=0.5))
    assert result.termination.value == "abandoned" and abandoned_still_running()
""")


@pytest.mark.slow
@pytest.mark.highs
def test_a_process_that_abandoned_a_solve_exits_cleanly() -> None:
    # without waiting for it at exit, HiGHS's threads abort the process (status 134)
    tests = Path(__file__).resolve().parents[1]
    package = Path(autotm_core.__file__).resolve().parents[1]  # this autotm_core, not another
    path = os.pathsep.join(p for p in (str(package), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", EXITS], capture_output=True, text=True,
                          cwd=tests, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr
    assert "waiting for 1 abandoned HiGHS solve" in done.stderr
