"""The time one planning call may take, shared by all its solves, and where it went.

``--time-limit`` bounds the whole call: every formulation of the chain, every
address-fitting round, relax-and-fix's LP and fixed MIP, retiming, the full MIP,
decoding, verification and packing. A :class:`Budget` holds the deadline; each
solve asks it for a limit (a share of what remains, less a reserve for the work
after the solve), and each step records its seconds under a phase name, so that
reports can say where the time went.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import attrs

MIN_SOLVE_SECONDS = 0.5
"""The least time limit a solve is given, even past the deadline (a solver needs a moment
to load the start it is offered)."""


@attrs.frozen
class Phase:
    """Seconds spent in one step of planning."""

    name: str
    """The step, e.g. ``"synchronous: solve"``."""
    seconds: float
    """Wall seconds, summed over every time the step ran (e.g. over fitting rounds)."""


@attrs.define
class Budget:
    """A deadline (``None``: no limit) and the seconds spent per phase so far."""

    deadline: float | None
    """The :func:`time.perf_counter` reading by which planning should be done."""
    stage: str = ""
    """Prefix of the phases recorded now (the formulation being planned)."""
    spent: dict[str, float] = attrs.field(factory=dict)
    """Seconds per phase name, in the order first recorded."""

    @classmethod
    def of(cls, seconds: float | None) -> Budget:
        """A budget of ``seconds`` from now (``None``: unlimited)."""
        return cls(None if seconds is None else time.perf_counter() + seconds)

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
        the work after it, at least :data:`MIN_SOLVE_SECONDS`; ``None`` without a deadline."""
        remaining = self.remaining()
        if remaining is None:
            return None
        return max(MIN_SOLVE_SECONDS, (remaining - reserve) * share)

    def until(self, share: float) -> float | None:
        """The deadline of a part taking ``share`` of what remains (``None``: no deadline)."""
        remaining = self.remaining()
        if remaining is None:
            return None
        return time.perf_counter() + remaining * share

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
        self.spent[key] = self.spent.get(key, 0.0) + seconds

    def phases(self) -> tuple[Phase, ...]:
        """Every phase recorded, in the order first recorded."""
        return tuple(Phase(name, seconds) for name, seconds in self.spent.items())


__all__ = ["MIN_SOLVE_SECONDS", "Budget", "Phase"]
