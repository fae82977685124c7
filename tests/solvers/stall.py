"""A real HiGHS that hangs: its solver thread stuck in a callback, checking neither its time
limit nor a cancellation, as HiGHS's presolve, symmetry detection and cut separation do
(the Llama-7B-shaped step's whole model ran 13.7 s past its limit without checking it).
The hang is HiGHS's MIP interrupt callback waiting until the test releases it; a
backend (:class:`StallsSome`) arms it for the solves a test picks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import ClassVar

import attrs
import numpy as np
import pytest

from autotm_core.solvers import MatrixProblem, SolverCapabilities
from autotm_core.solvers.highs import HighsSolver, abandoned_still_running

RELEASE_SECONDS = 60.0
"""The longest a stalled solve waits to be released (a test that forgets it)."""


@attrs.define
class Stall:
    """What the next HiGHS solves do: hang (``armed``), at once or after their first
    improving solution, until :attr:`release` is set."""

    armed: bool = False
    after_a_solution: bool = False
    """Hang only once the solve reported an improving solution (which it then keeps)."""
    hang_seconds: float = RELEASE_SECONDS
    """How long a solve hangs unless released first (then it sees a cancellation, if one
    came, at its next check)."""
    release: threading.Event = attrs.Factory(threading.Event)
    stalled: int = 0
    """Solves that hung."""


def knapsack(n_items: int = 60, n_rows: int = 40, *, seed: int = 0) -> MatrixProblem:
    """A multi-dimensional knapsack HiGHS does not prove in seconds (60 x 40: 3% gap after
    2 s), with an offset to check objectives by."""
    rng = np.random.default_rng(seed)
    weights = rng.integers(1, 50, (n_rows, n_items)).astype(np.float64)
    return MatrixProblem(
        cost=rng.integers(1, 100, n_items).astype(np.float64), col_lower=np.zeros(n_items),
        col_upper=np.ones(n_items), is_integer=np.ones(n_items, dtype=bool),
        start=np.arange(0, n_rows * n_items + 1, n_items),
        index=np.tile(np.arange(n_items), n_rows), value=weights.ravel(),
        row_lower=np.full(n_rows, -np.inf), row_upper=weights.sum(axis=1) // 3, offset=7.0,
        maximize=True, name="knapsack")


@pytest.fixture
def stall(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stall]:
    """HiGHS solves hang while :attr:`Stall.armed`; at the end every hung solve is released
    and the abandoned ones waited for (highspy's one lock: no other solve starts before)."""
    import highspy

    control = Stall()
    start_solve = highspy.Highs.startSolve

    def stalling_start(highs: highspy.Highs) -> threading.Thread:
        if control.armed:
            reported: list[bool] = []
            hung: list[float] = []
            after, seconds = control.after_a_solution, control.hang_seconds

            def hang(_event: object) -> None:
                if (reported or not after) and not control.release.is_set():
                    if not hung:
                        hung.append(time.perf_counter())
                        control.stalled += 1
                    control.release.wait(max(0.0, hung[0] + seconds - time.perf_counter()))

            highs.cbMipImprovingSolution.subscribe(lambda _event: reported.append(True))
            highs.cbMipInterrupt.subscribe(hang)
        return start_solve(highs)

    monkeypatch.setattr(highspy.Highs, "startSolve", stalling_start)
    yield control
    control.release.set()
    waited = time.perf_counter() + RELEASE_SECONDS
    while abandoned_still_running() and time.perf_counter() < waited:
        time.sleep(0.05)


@attrs.define
class StallsSome:
    """HiGHS, hanging (:class:`Stall`) on the problems ``picks`` chooses."""

    control: Stall
    picks: Callable[[MatrixProblem], bool]
    name: str = "highs"
    description: str = "HiGHS, hanging on chosen problems"
    capabilities: ClassVar[SolverCapabilities] = HighsSolver.capabilities
    hung: list[str] = attrs.Factory(list)
    """The names of the problems it was armed for."""

    def unavailable_reason(self) -> None:
        return None

    def solve(self, problem, config=None, start=None):  # type: ignore[no-untyped-def]
        self.control.armed = self.picks(problem)
        if self.control.armed:
            self.hung.append(problem.name)
        try:
            return HighsSolver().solve(problem, config, start)
        finally:
            self.control.armed = False
