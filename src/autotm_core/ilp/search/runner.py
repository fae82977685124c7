"""One runner for every step of the search, in the shape of torch.fx's ``PassManager``.

A search is a list of steps over a state (one model's search, one point's chain of
formulations). Each step is an object with a ``name`` (the phase its seconds are
recorded under, ``None`` for a decision that takes no time), what it says it does,
whether it is wanted in the state reached, and ``run``. :func:`run_steps` runs the
wanted ones in order, records each one's seconds in the budget, tells the
listener, and turns Ctrl-C anywhere in a step into :class:`SearchInterrupted`
naming the step: the steps after it do not run, and whoever holds the pool
returns its best plan.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Generic, Protocol, TypeVar

from autotm_core.ilp.search.budget import Budget
from autotm_core.ilp.search.events import Listener, PhaseStarted

State = TypeVar("State", contravariant=True)


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the search in a step (a ``KeyboardInterrupt``: code that does not catch
    it stops as it would on Ctrl-C)."""

    def __init__(self, step: str) -> None:
        super().__init__(step)
        self.step = step
        """The step that was running (its phase name)."""


class Step(Protocol, Generic[State]):
    """One step of a search."""

    @property
    def name(self) -> str | None:
        """The phase its seconds are recorded under (``None``: not recorded)."""

    def says(self, state: State) -> str:
        """One line for a person: what the step is doing."""

    def wanted(self, state: State) -> bool:
        """Whether the step runs in ``state``."""

    def run(self, state: State) -> None:
        """Do the step, changing ``state``."""


def run_steps(steps: Sequence[Step[State]], state: State, *, budget: Budget,
              listener: Listener) -> None:
    """Run each of ``steps`` that is wanted when its turn comes (see the module docstring)."""
    for step in steps:
        if not step.wanted(state):
            continue
        name = step.name
        with budget.phase(name) if name is not None else contextlib.nullcontext(), \
                interruptible(name or type(step).__name__):
            if name is not None:
                listener(PhaseStarted(budget.stage, name, step.says(state)))
            step.run(state)


@contextlib.contextmanager
def interruptible(step: str) -> Iterator[None]:
    """Ctrl-C in the ``with`` body raises :class:`SearchInterrupted` naming ``step`` (one already
    raised by an inner step passes through)."""
    try:
        yield
    except SearchInterrupted:
        raise
    except KeyboardInterrupt:
        raise SearchInterrupted(step) from None


__all__ = ["SearchInterrupted", "Step", "interruptible", "run_steps"]
