"""The Plan: where every tensor lives during one training step, and every move.

A plan describes ONE STEP OF A TRAINING LOOP: the next step starts where this
one ends. Time is counted in kernel positions ``0 .. n-1`` of the graph's order.
The semantics, which the verifier (:mod:`autotm_core.plans.verify`) enforces and
every planner, simulator and executor follows (docs/formats.md, section Plan,
lists them as rules):

Where tensors are

- A :class:`Residency` says tensor ``t`` occupies pool ``p`` during kernels
  ``first .. last`` (inclusive). A tensor may have residencies in several pools
  at once (a clean copy in slow memory while it is also in fast memory).
- A residency begins either where the tensor comes into existence (at its
  producer, in the pool the producer's configuration writes it to; at kernel 0
  for a tensor that exists before the step), or at the kernel of a move into
  that pool.
- A **synchronous** move ``before kernel k`` copies the tensor between kernels
  ``k-1`` and ``k``, blocking: the source residency covers ``k-1``, the target
  residency begins at ``k``, and kernel ``k`` may use the target copy. While it
  is copied it occupies both pools (checked at the boundary before ``k``). Its
  ``until`` is ``k``.
- An **asynchronous** move is issued when kernel ``k`` (its ``kernel``) starts and
  completes before kernel ``until`` starts (``k < until <= n``; by default
  ``until = k + 1``: it overlaps kernel ``k`` alone). It is *in flight* during
  kernels ``k .. until-1``, and may span many kernels: its target residency begins
  at ``k`` (the destination is reserved from issue) and covers ``until - 1``, its
  source residency covers ``k .. until-1`` (the source is kept until completion),
  so it occupies both pools during the whole flight; the target copy can be used
  from kernel ``until`` on (by a kernel, a move, or a rerun at the boundary before
  ``until``), never before. ``until = n`` completes with the step.
- ``configs[k][i]`` is the pool kernel ``k`` finds its ``i``-th tensor in
  (``Kernel.tensors`` order); that tensor must be resident there at ``k``, and not
  still arriving there by an asynchronous move in flight during ``k``.
- A kernel's workspace lives in the fastest pool while it runs.
- ``offset`` (optional) is the byte address of a residency inside its pool;
  residencies overlapping in time must not overlap in address.

Values: every copy holds the tensor's current value

- A residency holds the current value from where it begins: a tensor that
  exists before the step holds its pre-step value in the residencies it begins
  the step in (those at kernel 0, but a copy a move lands during kernel 0); the
  producer writes a new tensor into the pool its configuration names; a move
  copies its source's value.
- A kernel **writes** tensor ``t`` when ``t`` is among its outputs (an in-place
  update has ``t`` among its inputs and outputs). It writes the new value into
  the pool its configuration names for ``t``; every other residency of ``t``
  covering that kernel holds the old value and ends there (no stale copy lives
  on; at the last kernel the steady state below decides).
- A synchronous move before ``k`` reads its source after kernel ``k-1``: if
  ``k-1`` writes the tensor, the source is the pool ``k-1`` wrote it into
  (copying another, old copy over the new value is a lost update).
- An asynchronous move reads its source while it is in flight: no kernel
  ``k .. until-1`` writes the tensor (the copy would race the write).

Reruns: a value recomputed instead of kept

- A :class:`Rerun` runs kernel ``kernel`` again at the boundary before kernel ``before``
  (``kernel < before``), after that boundary's synchronous moves; the reruns at one boundary
  run in the plan's order. Only a kernel whose ``rerun`` is true and that updates none of its
  inputs in place may run again (the graph says which: a random op only when its generator
  state is kept), or a kernel filling a recomputable tensor in place
  (:attr:`~autotm_core.ir.RecomputeFacts.fill_of`) right after the reruns of the kernels
  before it that write the tensor, at the same boundary.
- It reads every input in the fastest pool, where at that boundary each is resident (over
  the boundary, or landed there by a synchronous move before ``before``) or is an output of
  an earlier rerun at the same boundary; and each holds the value the kernel read when it
  first ran: no kernel in between wrote it (a parameter already updated is a wrong plan).
- It writes all its outputs into the fastest pool. An output with a residency there
  beginning at ``before`` that no move lands is *restored*: that residency holds the value
  the last kernel rerun there that writes it first wrote (which no kernel in between may
  have changed). The others are dropped: one a kernel from ``before`` on reads once the
  boundary's reruns are done, any other (a chain's intermediate value) once the last rerun
  there reading or writing it has run.
- A tensor may so be resident nowhere between two of its uses: it is *dropped*, and its
  residency after the gap begins with a rerun that restores it.
- At the boundary, while a rerun runs, the fastest pool holds, beside what is resident over
  it, the outputs of the reruns so far not yet dropped and that rerun's workspace; each
  rerun takes its kernel's time with every tensor in the fastest pool.

Steady state: what the next step finds

- A tensor that exists before the step and survives it (parameter, optimizer
  state, constant: ``TensorKind.exists_before_step and survives_step``) holds
  its current value after the last kernel in every pool it begins the step in:
  a residency of it there covers kernel ``n-1``, and if ``n-1`` writes it, that
  is the pool ``n-1`` writes into; when the first and the last residency there
  carry offsets, they are equal. Evicting or updating such a tensor pays, inside
  the step, the copies that put it back: nothing is free between steps.
- A tensor that exists before the step but does not survive it (an input)
  begins the step in exactly one pool, where its data arrives.
- An output survives to the last kernel in some pool; activations and gradients
  live from their producer to their last use.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Iterable, Mapping
from typing import Any

import attrs


class MoveKind(enum.Enum):
    """Whether a move blocks the program or overlaps a kernel."""

    SYNC = "sync"
    """Blocking copy between kernel ``k-1`` and kernel ``k``."""
    ASYNC = "async"
    """Copy issued when kernel ``k`` starts, on its link's copy stream, complete before kernel
    ``until``; kernels wait for it only there."""


@attrs.frozen(slots=True)
class Residency:
    """Tensor ``tensor`` occupies pool ``pool`` during kernels ``first..last``."""

    tensor: str
    """Tensor name."""
    pool: str
    """Pool name."""
    first: int
    """First kernel position it occupies the pool at."""
    last: int
    """Last kernel position it occupies the pool at (inclusive)."""
    offset: int | None = None
    """Byte address inside the pool, when the planner assigned addresses."""


@attrs.frozen(slots=True, repr=False)
class Move:
    """A copy of a tensor from one pool to another."""

    tensor: str
    """Tensor name."""
    source: str
    """Pool copied from."""
    target: str
    """Pool copied to."""
    kernel: int
    """Kernel position: sync moves happen just before it, async moves are issued when it
    starts."""
    kind: MoveKind = MoveKind.SYNC
    """Blocking or overlapping."""
    _until: int | None = attrs.field(default=None, alias="until")
    # Kept as None when it is the default, so that a copy made by ``attrs.evolve`` with
    # another kernel or kind gets that kernel's default rather than keeping a stale one.

    def __attrs_post_init__(self) -> None:
        if self._until is not None and self._until == self.default_until:
            object.__setattr__(self, "_until", None)

    def __repr__(self) -> str:  # as the constructor is called: ``until`` when not the default
        until = "" if self._until is None else f", until={self._until!r}"
        return (f"Move(tensor={self.tensor!r}, source={self.source!r}, target={self.target!r}, "
                f"kernel={self.kernel!r}, kind={self.kind!r}{until})")

    @property
    def until(self) -> int:
        """The kernel before which the copy is complete and from which its target is usable
        (argument ``until``): ``kernel + 1`` by default for an async move (a one-kernel
        copy), later for one that spans kernels; always ``kernel`` for a sync move."""
        return self.default_until if self._until is None else self._until

    @property
    def default_until(self) -> int:
        """``until`` of a one-kernel copy of this kind: ``kernel + 1`` (async), ``kernel``
        (sync)."""
        return self.kernel + (self.kind is MoveKind.ASYNC)

    @property
    def spans_kernels(self) -> bool:
        """Whether this is an async move in flight over more than its issuing kernel."""
        return self.kind is MoveKind.ASYNC and self.until > self.kernel + 1


@attrs.frozen(slots=True)
class Rerun:
    """Kernel ``kernel`` runs again at the boundary before kernel ``before`` (see the module
    doc): it recomputes its outputs into the fastest pool instead of their being kept."""

    kernel: int
    """Position of the kernel that runs again."""
    before: int
    """Position of the kernel it runs just before (after that boundary's synchronous moves)."""


def _to_reruns(value: Iterable[Rerun]) -> tuple[Rerun, ...]:
    return tuple(value)


def _to_residencies(value: Iterable[Residency]) -> tuple[Residency, ...]:
    return tuple(value)


def _to_moves(value: Iterable[Move]) -> tuple[Move, ...]:
    return tuple(value)


def _to_configs(configs: Any) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(row) for row in configs)


def _to_workspaces(value: Mapping[int, int] | None) -> Mapping[int, int]:
    return types.MappingProxyType({int(k): int(o) for k, o in sorted((value or {}).items())})


@attrs.frozen(slots=True)
class Plan:
    """What a planner decided; everything downstream (verify, simulate, run) reads this."""

    graph: str
    """Name of the graph it was made for."""
    system: str
    """Name of the memory system it was made for."""
    capacities: Mapping[str, int | None]
    """Capacity of each pool the plan was made to respect (``None``: unbounded)."""
    residencies: tuple[Residency, ...] = attrs.field(converter=_to_residencies)
    """Where each tensor lives over time."""
    moves: tuple[Move, ...] = attrs.field(converter=_to_moves)
    """Every copy between pools."""
    configs: tuple[tuple[str, ...], ...] = attrs.field(converter=_to_configs)
    """For each kernel, the pool of each of its tensors (``Kernel.tensors`` order)."""
    planner: str = ""
    """Who made it, e.g. ``"ilp/synchronous"`` or ``"baseline/first-touch"``."""
    attributes: Mapping[str, Any] = attrs.field(factory=dict)
    """Planner facts worth keeping: objective, bound, gap, solver, options (JSON values)."""
    workspace_offsets: Mapping[int, int] = attrs.field(factory=dict, converter=_to_workspaces)
    """Byte address in the fastest pool of each kernel's workspace (kernel position ->
    offset), when addresses were assigned; a kernel without one gets scratch memory."""
    reruns: tuple[Rerun, ...] = attrs.field(default=(), converter=_to_reruns)
    """Kernels run again to recompute values that were dropped, in the order they run."""

    @property
    def has_spanning_copies(self) -> bool:
        """Whether some move has an ``until`` other than a one-kernel copy's (an async move
        in flight over several kernels, or a wrong ``until`` the verifier reports)."""
        return any(m.until != m.default_until for m in self.moves)

    @property
    def has_offsets(self) -> bool:
        """Whether every residency in a bounded pool carries an address."""
        bounded = {p for p, c in self.capacities.items() if c is not None}
        return all(r.offset is not None for r in self.residencies if r.pool in bounded)
