"""One kernel of the exhaustive search: every tensor's choices combined at once, with NumPy.

Each tensor alive at a kernel brings a list of :class:`Choice` (a step and what it
costs); :func:`cheapest` crosses the lists, drops the combinations that overflow
a bounded pool at the kernel or at the boundary before it, prices the rest
(synchronous copies + max(kernel, asynchronous copies)) and keeps the cheapest
combination per resulting state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from .space import Step

State = tuple[frozenset[int], frozenset[int]]
"""A tensor after a kernel: the pools holding its current value, its start pools (steady
tensors only, else empty)."""


@attrs.frozen
class Choice:
    """One option of one tensor at one kernel, with what it costs."""

    step: Step
    """The option."""
    state: State
    """The tensor's state after the kernel."""
    held: tuple[int, ...]
    """Bytes in each bounded pool while the kernel runs."""
    cross: tuple[int, ...]
    """Bytes in each bounded pool at the boundary before it."""
    sync: float
    """Seconds of its synchronous copies."""
    asyn: float
    """Seconds of its asynchronous copies."""
    allowed: frozenset[int]
    """Pools the kernel may use it in (empty when the kernel does not touch it)."""

    def dominates(self, other: Choice) -> bool:
        """Whether this choice is as good as ``other`` in every respect.

        Same state, no more bytes anywhere, no more copy time, no fewer usable
        pools: swapping it in keeps every combination valid and makes none slower.
        """
        return (self.state == other.state and self.allowed >= other.allowed
                and self.sync <= other.sync and self.asyn <= other.asyn
                and all(a <= b for a, b in zip(self.held, other.held, strict=True))
                and all(a <= b for a, b in zip(self.cross, other.cross, strict=True)))


def undominated(choices: Sequence[Choice]) -> list[Choice]:
    """``choices`` less those another one dominates (the first of equals is kept)."""
    kept: list[Choice] = []
    for c in choices:
        if not any(d.dominates(c) for d in kept):
            kept = [d for d in kept if not c.dominates(d)] + [c]
    return kept


@attrs.frozen(eq=False)
class Column:
    """One tensor's choices as arrays."""

    choices: Sequence[Choice]
    """The choices."""
    held: np.ndarray
    """``(n, bounded pools)`` bytes at the kernel."""
    cross: np.ndarray
    """``(n, bounded pools)`` bytes at the boundary."""
    sync: np.ndarray
    """``(n,)`` synchronous seconds."""
    asyn: np.ndarray
    """``(n,)`` asynchronous seconds."""
    code: np.ndarray
    """``(n,)`` which of :attr:`states` each choice leads to."""
    states: int
    """Distinct states the choices lead to."""

    @classmethod
    def of(cls, choices: Sequence[Choice], bounded: int) -> Column:
        states = {c.state: None for c in choices}
        codes = {s: j for j, s in enumerate(states)}
        shape = (len(choices), bounded)
        return cls(choices,
                   np.array([c.held for c in choices], dtype=np.int64).reshape(shape),
                   np.array([c.cross for c in choices], dtype=np.int64).reshape(shape),
                   np.array([c.sync for c in choices], dtype=np.float64),
                   np.array([c.asyn for c in choices], dtype=np.float64),
                   np.array([codes[c.state] for c in choices], dtype=np.int64), len(states))


KernelTime = Callable[[tuple[frozenset[int], ...]], "tuple[float, tuple[int, ...]] | None"]
"""The fastest time and configuration of the kernel for the allowed pools of its tensors."""


def cheapest(columns: Sequence[Column], touched: Sequence[int], *, room: Sequence[int],
             limits: Sequence[int], kernel_time: KernelTime
             ) -> dict[tuple[State, ...], tuple[float, tuple[Choice, ...], tuple[int, ...]]]:
    """Per resulting state, the cheapest fitting combination: (seconds, choices, config).

    ``touched`` are the positions of the kernel's tensors (its order) among ``columns``;
    ``room`` the bytes left in each bounded pool at the kernel (its workspace taken),
    ``limits`` at the boundary.
    """
    shape = [len(c.choices) for c in columns]
    if 0 in shape:
        return {}
    grid = np.indices(shape).reshape(len(shape), -1)
    held = sum((c.held[grid[j]] for j, c in enumerate(columns)), np.zeros((1, len(room)), int))
    cross = sum((c.cross[grid[j]] for j, c in enumerate(columns)),
                np.zeros((1, len(room)), int))
    fits = (held <= np.asarray(room)).all(axis=1) & (cross <= np.asarray(limits)).all(axis=1)
    grid = grid[:, fits]
    if not grid.shape[1]:
        return {}
    times = np.full([shape[p] for p in touched], np.inf)
    configs: dict[tuple[int, ...], tuple[int, ...]] = {}
    for at in itertools.product(*(range(shape[p]) for p in touched)):
        timed = kernel_time(tuple(columns[p].choices[j].allowed for p, j in zip(
            touched, at, strict=True)))
        if timed is not None:
            times[at] = timed[0]
            configs[at] = timed[1]
    kernel = times[tuple(grid[p] for p in touched)] if touched else np.full(grid.shape[1], times)
    sync = sum((c.sync[grid[j]] for j, c in enumerate(columns)), np.zeros(1))
    asyn = sum((c.asyn[grid[j]] for j, c in enumerate(columns)), np.zeros(1))
    total = sync + np.maximum(kernel, asyn)
    code = np.zeros(grid.shape[1], dtype=np.int64)
    for j, c in enumerate(columns):
        code = code * c.states + c.code[grid[j]]
    order = np.lexsort((total, code))
    first = order[np.r_[True, code[order][1:] != code[order][:-1]]]
    out = {}
    for at in first:
        if not np.isfinite(total[at]):
            continue
        picked = tuple(c.choices[grid[j, at]] for j, c in enumerate(columns))
        config = configs[tuple(int(grid[p, at]) for p in touched)]
        out[tuple(c.state for c in picked)] = (float(total[at]), picked, config)
    return out
