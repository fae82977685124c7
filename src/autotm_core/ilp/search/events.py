"""What the search tells its caller while it runs: typed events, not log text.

A caller (the command line's progress line, a benchmark, a test) passes a
:data:`Listener`; the search calls it with one event each time a phase starts, a
model is built, or the pool holds a better plan, as OR-Tools' solution callback
reports every improving solution. Listeners must be quick and must not raise.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen
class PhaseStarted:
    """A step of the search begins."""

    stage: str
    """The formulation being planned (``""`` outside the chain's stages)."""
    phase: str
    """The step (``"build"``, ``"solve"``, ``"windows"``, ...)."""
    says: str
    """One line for a person: what the step does."""


@attrs.frozen
class ModelBuilt:
    """A formulation's model was built."""

    stage: str
    """The formulation."""
    variables: int
    """Its columns."""
    binaries: int
    """Binary columns among them."""
    rows: int
    """Its rows."""
    nonzeros: int
    """Nonzero coefficients of its rows."""
    seconds: float
    """Seconds the build took."""


@attrs.frozen
class IncumbentFound:
    """The pool holds a faster plan than before."""

    step_seconds: float
    """The plan's simulated step time."""
    source: str
    """Where it came from, in words."""


SearchEvent = PhaseStarted | ModelBuilt | IncumbentFound
"""Every event the search emits."""

Listener = Callable[[SearchEvent], None]
"""Called with each event as it happens."""


def ignore(_event: SearchEvent) -> None:
    """The listener of a caller that does not listen."""


__all__ = ["IncumbentFound", "Listener", "ModelBuilt", "PhaseStarted", "SearchEvent", "ignore"]
