"""What one tensor may do at one kernel: the local choices the exhaustive search combines.

At each kernel of its life a tensor is held by a set of pools (:attr:`Step.hold`).
Each pool's residency either continues from the previous kernel
(:attr:`Step.kept`), begins at the tensor's birth (:attr:`Step.born`), arrives by
a synchronous move before the kernel (:attr:`Step.sync`) or by an asynchronous
move during it (:attr:`Step.asyn`, usable from the next kernel). A kernel that
writes the tensor writes it into :attr:`Step.written`; every other pool then holds
the old value and ends there. The rules are those of docs/formats.md ("Plan")
and issue 14 (a move copies the current value; nothing is free between steps).

``strict`` options follow those rules and leave out only choices that are
dominated: re-copying a pool that already holds the current value. ``lenient``
options add rule breakers (copies of stale values, stale copies kept, async
copies racing a write, free double residencies, several input pools) so the
checkers have refusals to agree on.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import attrs

from autotm_core.ir import Graph, TensorKind
from autotm_core.memory import MemorySystem

from .rules import lives

FORMULATIONS = ("static", "synchronous", "asynchronous")
"""No moves; synchronous moves only; synchronous and asynchronous moves."""

Copy = tuple[int, int]
"""A copy ``(source pool, target pool)`` by pool position."""


@attrs.frozen
class Track:
    """Facts about one tensor that the search needs."""

    name: str
    """Tensor name."""
    nbytes: int
    """Its size."""
    pools: frozenset[int]
    """Pool positions it may live in."""
    first: int
    """First kernel of its life."""
    last: int
    """Last kernel of its life."""
    kind: TensorKind
    """Its kind."""
    writers: frozenset[int]
    """Kernels that write it."""

    @property
    def pre_existing(self) -> bool:
        """Whether it holds a value before the step."""
        return self.kind.exists_before_step

    @property
    def steady(self) -> bool:
        """Whether it must end the step current in every pool it began in."""
        return self.kind.exists_before_step and self.kind.survives_step


def tracks(graph: Graph, system: MemorySystem) -> list[Track]:
    """One :class:`Track` per tensor that lives (never-live tensors have nothing to decide)."""
    names = [p.name for p in system.pools]
    out, life_of = [], lives(graph)
    for tensor in graph.tensors:
        life = life_of[tensor.name]
        if life.last < life.first:
            continue
        allowed = range(len(names)) if tensor.pools is None else [
            names.index(p) for p in tensor.pools if p in names]
        writers = frozenset(k for k, kernel in enumerate(graph.kernels)
                            if tensor.name in kernel.outputs)
        out.append(Track(tensor.name, tensor.nbytes, frozenset(allowed), life.first, life.last,
                         tensor.kind, writers))
    return out


@attrs.frozen
class Step:
    """What one tensor does at one kernel."""

    hold: frozenset[int]
    """Pools holding it while the kernel runs."""
    kept: frozenset[int] = frozenset()
    """Pools whose residency continues from the previous kernel."""
    born: frozenset[int] = frozenset()
    """Pools it comes into being in here (its producer's pool; kernel 0's start pools)."""
    sync: tuple[Copy, ...] = ()
    """Synchronous copies just before the kernel."""
    asyn: tuple[Copy, ...] = ()
    """Asynchronous copies during the kernel."""
    written: int | None = None
    """Pool the kernel writes it into, when it writes it."""
    restored: frozenset[int] = frozenset()
    """Pools a rerun at the boundary before the kernel restores it into (the fastest pool
    only; :mod:`.recompute`)."""

    @property
    def usable(self) -> frozenset[int]:
        """Pools the kernel may use it in (not still arriving)."""
        return self.kept | self.born | self.restored | {t for _, t in self.sync}

    @property
    def config_pools(self) -> frozenset[int]:
        """Pools the kernel's configuration may name for it: where it writes it, else usable."""
        return self.usable if self.written is None else frozenset({self.written})

    @property
    def current(self) -> frozenset[int]:
        """Pools holding its current value once the kernel has run."""
        return self.hold if self.written is None else frozenset({self.written})

    @property
    def boundary(self) -> frozenset[int]:
        """Pools it occupies at the boundary before the kernel (a copy holds both ends)."""
        return self.kept | {p for copy in self.sync for p in copy}


def _subsets(items: Iterable[int], *, empty: bool = True) -> Iterator[frozenset[int]]:
    items = sorted(items)
    for size in range(0 if empty else 1, len(items) + 1):
        for chosen in itertools.combinations(items, size):
            yield frozenset(chosen)


def _sourced(targets: frozenset[int], sources: frozenset[int]) -> Iterator[tuple[Copy, ...]]:
    """Every way of giving each target a source other than itself."""
    choices = [[(s, t) for s in sorted(sources) if s != t] for t in sorted(targets)]
    yield from itertools.product(*choices)


def options(track: Track, k: int, before: Step | None, *, formulation: str,
            lenient: bool = False) -> list[Step]:
    """Every step ``track`` may take at kernel ``k`` after ``before`` (``None`` at its birth).

    A steady tensor's start pools are checked at its last kernel by :func:`ends_current`.
    """
    writes = k in track.writers
    moves = formulation != "static"
    overlap = formulation == "asynchronous" and (lenient or not writes)
    if before is None:
        return list(_births(track, writes, overlap, lenient))
    current = before.hold if lenient else before.current
    out = []
    for kept in _subsets(current):
        fresh = track.pools - kept - (frozenset() if lenient else before.current)
        for targets in _subsets(fresh if moves else ()):
            for sync in _sourced(targets, before.hold if lenient else before.current):
                usable = kept | targets
                late = fresh - targets if overlap else frozenset()
                for arriving in _subsets(late):
                    for asyn in _sourced(arriving, usable):
                        hold = usable | arriving
                        if not hold:
                            continue
                        for written in sorted(usable) if writes else [None]:
                            out.append(Step(hold, kept, frozenset(), sync, asyn, written))
    return out


def _births(track: Track, writes: bool, overlap: bool, lenient: bool) -> Iterator[Step]:
    if not track.pre_existing:
        for pool in sorted(track.pools):
            yield Step(frozenset({pool}), born=frozenset({pool}), written=pool)
        return
    single = track.kind is TensorKind.INPUT and not lenient
    for start in _subsets(track.pools, empty=False):
        if single and len(start) > 1:
            continue
        for arriving in _subsets(track.pools - start if overlap else ()):
            for asyn in _sourced(arriving, start):
                for written in sorted(start) if writes else [None]:
                    yield Step(start | arriving, born=start, asyn=asyn, written=written)


def ends_current(track: Track, start: frozenset[int], last: Step) -> bool:
    """Whether a steady tensor that began in ``start`` ends the step current there."""
    return not track.steady or start <= last.current
