"""The time one planning call may take, shared by all its steps, and where it went.

``--time-limit`` bounds the whole call: every formulation of the chain, every
address-fitting round, relax-and-fix's LP and fixed MIP, retiming, windows, the
full MIP, decoding, verification and packing. A :class:`Budget` is the only unit
of time the search passes around: it holds the deadline, gives each solve its
limit (a share of what remains, less the reserve kept for checking the plan
after it) and the moment its caller stops waiting for it (the deadline plus the
call's grace, less that reserve: a solver that ignores its limit is abandoned
then), estimates a model's build from its size before it is built, and records
the seconds of each phase so that reports can say where the time went.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import attrs

from autotm_core.ilp.options import Formulation

BUILD_SECONDS_PER_KERNEL = {Formulation.STATIC: 0.2e-3, Formulation.SYNCHRONOUS: 0.7e-3,
                            Formulation.ASYNCHRONOUS: 4.5e-3}
"""Seconds to build a formulation's model per kernel of a training graph at no load (2 cores;
example:chain-500 and chain-2000, VGG-19 b128 on optane-2019 4:1: static 0.12-0.18 ms, synchronous
0.42-0.60 ms, asynchronous 2.9-4.1 ms per kernel). A build this call already made scales the
estimate to the machine's present speed."""


@attrs.frozen
class Phase:
    """Seconds spent in one step of planning."""

    name: str
    """The step, e.g. ``"synchronous: solve"``."""
    seconds: float
    """Wall seconds, summed over every time the step ran (e.g. over fitting rounds)."""


@attrs.define
class _Shared:
    """What every budget of one planning call shares: the phases and the build speed seen."""

    spent: dict[str, float] = attrs.field(factory=dict)
    """Seconds per phase name, in the order first recorded."""
    slowdown: float = 1.0
    """Measured build seconds over :data:`BUILD_SECONDS_PER_KERNEL`'s, last build seen."""


@attrs.define
class Budget:
    """A deadline (``None``: no limit) and the seconds spent per phase so far."""

    deadline: float | None
    """The :func:`time.perf_counter` reading by which planning should be done."""
    min_solve_seconds: float = 0.5
    """The least limit :meth:`limit` gives a solve, even past the deadline (the strategy's)."""
    grace_seconds: float = 0.0
    """How long past the deadline the call may end when a solver does not stop at its limit
    (the strategy's :meth:`~autotm_core.ilp.search.Strategy.grace_seconds` of the call's
    time limit): see :meth:`abandon_at`."""
    answer_seconds: float = 0.0
    """Seconds of the grace kept for making the answer after a solve is abandoned (the
    strategy's :attr:`~autotm_core.ilp.search.Strategy.answer_seconds`)."""
    stage: str = ""
    """Prefix of the phases recorded now (the formulation being planned)."""
    shared: _Shared = attrs.field(factory=_Shared)
    """Phases and build speed, shared with every budget :meth:`part` makes."""

    @classmethod
    def of(cls, seconds: float | None, *, min_solve_seconds: float = 0.5,
           grace_seconds: float = 0.0, answer_seconds: float = 0.0,
           started: float | None = None) -> Budget:
        """A budget of ``seconds`` from ``started`` (a :func:`time.perf_counter` reading;
        ``None``: now), unlimited when ``seconds`` is ``None``."""
        start = time.perf_counter() if started is None else started
        return cls(None if seconds is None else start + seconds,
                   min_solve_seconds=min_solve_seconds, grace_seconds=grace_seconds,
                   answer_seconds=answer_seconds)

    def remaining(self) -> float | None:
        """Seconds left (never negative); ``None`` without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.perf_counter())

    @property
    def expired(self) -> bool:
        """Whether the deadline has passed."""
        remaining = self.remaining()
        return remaining is not None and remaining <= 0.0

    def limit(self, share: float = 1.0, *, reserve: float = 0.0) -> float | None:
        """A solve's time limit: ``share`` of what remains after ``reserve`` seconds kept for
        the work after it, at least :attr:`min_solve_seconds`; ``None`` without a deadline."""
        remaining = self.remaining()
        if remaining is None:
            return None
        return max(self.min_solve_seconds, (remaining - reserve) * share)

    def abandon_at(self, *, reserve: float = 0.0) -> float | None:
        """When a solve started now is abandoned if it is still running, as a
        :func:`time.perf_counter` reading (``None``: no deadline): the deadline plus
        :attr:`grace_seconds`, less ``reserve`` seconds kept for the work after it and
        :attr:`answer_seconds`, and no sooner than :attr:`min_solve_seconds` from now, as
        :meth:`limit` gives a solve started late. Solves get it as
        :attr:`~autotm_core.solvers.SolverConfig.abandon_after_seconds` (see
        :func:`seconds_until`)."""
        if self.deadline is None:
            return None
        return max(time.perf_counter() + self.min_solve_seconds,
                   self.deadline + self.grace_seconds - self.answer_seconds - reserve)

    def until(self, share: float, *, reserve: float = 0.0) -> float | None:
        """The deadline of a part taking ``share`` of what remains after ``reserve``
        (``None``: no deadline)."""
        remaining = self.remaining()
        if remaining is None:
            return None
        return time.perf_counter() + max(0.0, remaining - reserve) * share

    def part(self, share: float, *, stage: str | None = None) -> Budget:
        """A budget for a part of the work: ``share`` of what remains, recording its phases
        (under ``stage``, else this budget's) with this one's."""
        return Budget(self.until(share), min_solve_seconds=self.min_solve_seconds,
                      grace_seconds=self.grace_seconds, answer_seconds=self.answer_seconds,
                      stage=self.stage if stage is None else stage, shared=self.shared)

    def allows(self, seconds: float) -> bool:
        """Whether ``seconds`` of work fit in what remains (always, without a deadline)."""
        remaining = self.remaining()
        return remaining is None or seconds <= remaining

    def build_estimate(self, kernels: int, formulation: Formulation) -> float:
        """Seconds building ``formulation``'s model of a graph of ``kernels`` kernels will take,
        before it is built (see :data:`BUILD_SECONDS_PER_KERNEL`)."""
        return kernels * BUILD_SECONDS_PER_KERNEL[formulation] * self.shared.slowdown

    def built(self, kernels: int, formulation: Formulation, seconds: float, *,
              recompute: bool = False) -> None:
        """Record that a model of ``kernels`` kernels took ``seconds`` to build: later
        estimates scale to that speed. A recomputing model (``recompute``) is larger by its
        rerun options, not slower to build per column: it scales nothing (Inception v4 b64:
        1.95 s against the synchronous model's 0.88 s, which made the asynchronous estimate
        1.7 times too long)."""
        expected = kernels * BUILD_SECONDS_PER_KERNEL[formulation]
        if expected > 0.05 and not recompute:  # tiny builds measure start-up, not speed
            self.shared.slowdown = max(1.0, seconds / expected)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Record the seconds of the ``with`` body under ``name`` (prefixed by the stage)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def add(self, name: str, seconds: float) -> None:
        """Record ``seconds`` under ``name`` (prefixed by the stage)."""
        key = f"{self.stage}: {name}" if self.stage else name
        self.shared.spent[key] = self.shared.spent.get(key, 0.0) + seconds

    def phases(self) -> tuple[Phase, ...]:
        """Every phase recorded, in the order first recorded."""
        return tuple(Phase(name, seconds) for name, seconds in self.shared.spent.items())


def seconds_until(moment: float | None) -> float | None:
    """Seconds from now until ``moment`` (a :func:`time.perf_counter` reading), at least 0;
    ``None`` for ``None``."""
    return None if moment is None else max(0.0, moment - time.perf_counter())


__all__ = ["BUILD_SECONDS_PER_KERNEL", "Budget", "Phase", "seconds_until"]
