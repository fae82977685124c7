"""The best plan with recomputation on a tiny graph, by exhaustive search.

Written from the rules of :mod:`autotm_core.plans.model` ("Reruns"), not from the
formulation (:mod:`autotm_core.ilp.reruns`). On top of where each tensor is
(:mod:`.space`), the boundary before every kernel ``k`` chooses a set of kernels to run
again there (:class:`~autotm_core.plans.Rerun`, in kernel order: an order in which each
rerun's recomputed inputs come before it exists only so). A set is possible when

- each kernel may run again: the graph says so (``rerun``), it writes something, and it
  updates none of its inputs in place, or writes only what it updates in place, each an
  output of an earlier kernel of the set that no kernel between the two wrote (a fill:
  the value it first updated);
- no kernel between it and ``k`` writes one of its inputs (they hold what it first read);
- each input is an output of an earlier kernel of the set that no kernel between the two
  wrote (the value this one read), or else it is in the fastest pool at the boundary:
  resident there over it, landed there by a synchronous move, or being copied out of it
  (the tensor must be alive at ``k`` for that);
- each kernel of the set writes something that is restored at ``k`` or read by a later
  kernel of the set (a rerun doing neither only costs: leaving it out is never worse).

A tensor may then, besides the steps of :mod:`.space`,

- be **dropped** at ``k``: resident nowhere, when ``k`` does not use it and is not its last
  kernel; a dropped tensor can only be dropped again or restored;
- be **restored** into the fastest pool at ``k`` by a kernel of the set that writes it when
  no kernel between the two changed it, while the fastest pool does not hold its current
  value (were it there, keeping it is the same plan at the same cost): the residency
  begins at ``k`` and no move lands it; copies it has elsewhere may be kept, fed by a
  synchronous copy, or arrive by an asynchronous copy from any usable copy.

At the boundary, while each kernel of the set runs, the fastest pool holds, beside what is
resident over it, its workspace, every output of the set alive at ``k`` (one it restores
once, in its residency) and every other output of a kernel of the set so far that it or a
later kernel of the set reads or writes; each rerun costs its kernel's time with every
tensor in the fastest pool. The search is
the dynamic programme of :mod:`.exhaustive`, each kernel's combination taken per set.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import attrs

from autotm_core.costs import KernelCosts
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Rerun

from .combine import Choice, Column, cheapest, undominated
from .exhaustive import Optimum, Search
from .space import Step, Track, _sourced, _subsets, ends_current

FAST = 0
"""Position of the fastest pool, the only one reruns read from and write to."""


@attrs.frozen
class Need:
    """What one set of reruns at a boundary asks of one tensor alive there."""

    fast: bool = False
    """A rerun reads it from the fastest pool at the boundary."""
    restorable: bool = False
    """A rerun writes it, and no kernel in between changed it: it may be restored."""
    writes: int = 0
    """Whether reruns write it (1: one copy in the fastest pool, unless restored; a kernel
    updating it in place writes where an earlier one of the set did)."""


@attrs.frozen
class RerunSet:
    """The reruns at one boundary and what they mean."""

    kernels: tuple[int, ...]
    """The kernels run again, in order."""
    seconds: float
    """Their time, each with every tensor in the fastest pool."""
    fixed_nbytes: int
    """Bytes they hold in the fastest pool at the boundary whatever the tensors do: the most,
    while one runs, of its workspace and the outputs not alive there still held."""
    needs: tuple[tuple[int, Need], ...]
    """Per tensor (track position) alive at the boundary that they concern, what they ask."""


def may_rerun(graph: Graph) -> list[bool]:
    """Per kernel: ``rerun`` in the graph, writes something, and updates none of its inputs
    or writes only what it updates (a fill, once fed by an earlier rerun: ``_set``)."""
    return [k.rerun and bool(k.outputs) and (not set(k.inputs) & set(k.outputs)
                                             or set(k.outputs) <= set(k.inputs))
            for k in graph.kernels]


class RecomputeSearch(Search):
    """The search space of :class:`~.exhaustive.Search` with reruns (see the module doc)."""

    def __init__(self, graph: Graph, system: MemorySystem, costs: KernelCosts, *,
                 formulation: str, restore_held: bool = True) -> None:
        super().__init__(graph, system, costs, formulation=formulation)
        self.restore_held = restore_held
        """Whether a rerun may restore a tensor held in another pool (the rules allow it);
        ``False``: only a dropped one (what the formulation offers, to tell the two apart)."""
        self.writers = {t.name: [k for k, kernel in enumerate(graph.kernels)
                                 if t.name in kernel.outputs] for t in graph.tensors}
        self.may_rerun = may_rerun(graph)
        self.rerun_seconds = [costs.seconds(k, [FAST] * len(kernel.tensors))
                              for k, kernel in enumerate(graph.kernels)]
        self.sets = [self._sets(k) for k in range(self.n)]
        self._recompute_columns: dict[tuple, Column] = {}

    # -- which reruns --------------------------------------------------------------------

    def unchanged(self, tensor: str, after: int, before: int) -> bool:
        """Whether no kernel strictly between ``after`` and ``before`` writes ``tensor``."""
        return not any(after < w < before for w in self.writers[tensor])

    def _sets(self, k: int) -> list[RerunSet]:
        """Every possible set of reruns at the boundary before ``k`` (the empty one first)."""
        empty = RerunSet((), 0.0, 0, ())
        if k == 0:
            return [empty]
        kernels = self.graph.kernels
        alive = {self.tracks[i].name: i for i in self.alive[k]}
        candidates = [p for p in range(k) if self.may_rerun[p]
                      and all(self.unchanged(t, p, k) for t in kernels[p].inputs
                              if t not in kernels[p].outputs)]
        out = [empty]
        for size in range(1, len(candidates) + 1):
            for chosen in itertools.combinations(candidates, size):
                found = self._set(k, chosen, alive)
                if found is not None:
                    out.append(found)
        return out

    def _set(self, k: int, chosen: Sequence[int], alive: dict[str, int]) -> RerunSet | None:
        kernels = self.graph.kernels
        needs: dict[int, Need] = {}
        fixed = 0
        feeds: set[int] = set()  # members whose output a later member reads
        for p in chosen:
            for t in kernels[p].inputs:
                earlier = [m for m in chosen if m < p and t in kernels[m].outputs]
                if earlier and self.unchanged(t, earlier[-1], p):
                    feeds.add(earlier[-1])
                    continue
                if t in kernels[p].outputs or t not in alive:  # a fill not fed: another value
                    return None
                need = needs.get(alive[t], Need())
                needs[alive[t]] = attrs.evolve(need, fast=True)
        for i, p in enumerate(chosen):  # while each runs: its workspace, the values held
            dead = {t for q in chosen[:i + 1] for t in kernels[q].outputs if t not in alive
                    and any(t in kernels[r].tensors for r in chosen[i:])}
            fixed = max(fixed, kernels[p].workspace_nbytes
                        + sum(self.graph.tensor(t).nbytes for t in dead))
        for p in chosen:
            useful = p in feeds
            for t in kernels[p].outputs:
                if t not in alive:
                    continue
                i = alive[t]
                restorable = (self.unchanged(t, p, k) and FAST in self.tracks[i].pools
                              and self.tracks[i].first < k)
                need = needs.get(i, Need())
                needs[i] = attrs.evolve(need, restorable=need.restorable or restorable,
                                        writes=1)
                useful = useful or restorable
            if not useful:
                return None
        return RerunSet(tuple(chosen), sum(self.rerun_seconds[p] for p in chosen), fixed,
                        tuple(sorted(needs.items())))

    # -- one tensor's choices --------------------------------------------------------------

    def recompute_column(self, i: int, k: int, before: frozenset[int] | None,
                         start: frozenset[int], need: Need) -> Column:
        """:meth:`~.exhaustive.Search.column` with the drops and restores of ``need``, less the
        choices that leave an input of a rerun outside the fastest pool at the boundary."""
        key = (i, k, before, start, need)
        if key in self._recompute_columns:
            return self._recompute_columns[key]
        track = self.tracks[i]
        touched = track.name in self.graph.kernels[k].tensors
        steps = list(self.options(i, k, None if before is None else Step(before)))
        if before is not None:
            if not touched and k != track.last:
                steps.append(Step(frozenset()))
            if need.restorable and (self.restore_held or not before):
                steps += restores(track, k, before, formulation=self.formulation)
        found = []
        for step in steps:
            if need.fast and FAST not in step.boundary:
                continue
            begun = step.born if before is None else start
            if k == track.last and not ends_current(track, begun, step):
                continue
            restored = FAST in step.restored
            held = tuple(track.nbytes * (q in step.hold) for q in self.bounded)
            cross = tuple(track.nbytes * ((q in step.boundary) + (q == FAST) * (
                1 if restored else need.writes)) for q in self.bounded)
            sync = sum(self.system.copy_seconds(track.nbytes, s, t, asynchronous=False)
                       for s, t in step.sync)
            asyn = sum(self.system.copy_seconds(track.nbytes, s, t, asynchronous=True)
                       for s, t in step.asyn)
            allowed = step.config_pools if touched else frozenset()
            state = (step.current, begun if track.steady else frozenset())
            found.append(Choice(step, state, held, cross, sync, asyn, allowed))
        column = self._recompute_columns[key] = Column.of(undominated(found), len(self.bounded))
        return column

    # -- the search -------------------------------------------------------------------------

    def optimum(self) -> Optimum | None:
        """The cheapest plan with reruns that fits, or ``None`` when none does."""
        layers: list[dict] = []
        layer: dict = {(): (0.0, (), (), (), ())}
        for k in range(self.n):
            layer = self._advance_with_reruns(k, layer)
            layers.append(layer)
        if not layer:
            return None
        best = key = min(layer, key=lambda s: layer[s][0])
        steps, configs, reruns = [], [], []
        for k in range(self.n - 1, -1, -1):
            _, key, chosen, config, kernels = layers[k][key]
            steps.append(chosen)
            configs.append(config)
            reruns += [Rerun(p, k) for p in reversed(kernels)]
        plan = self.build(steps[::-1], configs[::-1])
        plan = attrs.evolve(plan, reruns=tuple(reversed(reruns)),
                            planner=f"trust/exhaustive-recompute/{self.formulation}")
        return Optimum(layer[best][0], plan, sum(len(x) for x in layers))

    def _advance_with_reruns(self, k: int, layer: dict) -> dict:
        out: dict = {}
        indices = self.alive[k]
        touched = [indices.index(self.index[t]) for t in self.graph.kernels[k].tensors]
        workspace = self.graph.kernels[k].workspace_nbytes
        room = [c - (workspace if q == FAST else 0) for q, c in zip(self.bounded, self.limits,
                                                                      strict=True)]
        before_alive = self.alive[k - 1] if k else []
        for key, (seconds, *_) in layer.items():
            state = dict(zip(before_alive, key, strict=True))
            for reruns in self.sets[k]:
                needs = dict(reruns.needs)
                columns = [self.recompute_column(i, k, None, frozenset(), needs.get(i, Need()))
                           if k == self.tracks[i].first
                           else self.recompute_column(i, k, *state[i], needs.get(i, Need()))
                           for i in indices]
                limits = [c - (reruns.fixed_nbytes if q == FAST else 0)
                          for q, c in zip(self.bounded, self.limits, strict=True)]
                found = cheapest(columns, touched, room=room, limits=limits,
                                 kernel_time=lambda allowed: self.kernel_time(k, allowed))
                for new, (spent, picked, config) in found.items():
                    total = seconds + spent + reruns.seconds
                    if new not in out or total < out[new][0]:
                        out[new] = (total, key, tuple(c.step for c in picked), config,
                                    reruns.kernels)
        return out


def restores(track: Track, k: int, before: frozenset[int], *, formulation: str) -> Iterator[Step]:
    """Every step restoring ``track`` into the fastest pool at ``k`` after it was current in
    ``before`` (empty: dropped) and not in the fastest pool (see the module doc)."""
    if FAST not in track.pools or FAST in before:
        return
    writes = k in track.writers
    moves = formulation != "static"
    overlap = formulation == "asynchronous" and not writes
    restored = frozenset({FAST})
    for kept in _subsets(before):
        fresh = track.pools - kept - before - restored
        for targets in _subsets(fresh if moves else ()):
            for sync in _sourced(targets, before):
                usable = kept | targets | restored
                late = fresh - targets if overlap else frozenset()
                for arriving in _subsets(late):
                    for asyn in _sourced(arriving, usable):
                        for written in sorted(usable) if writes else [None]:
                            yield Step(usable | arriving, kept, frozenset(), sync, asyn,
                                       written, restored)


def optimum_with_reruns(graph: Graph, system: MemorySystem, costs: KernelCosts, *,
                        formulation: str, restore_held: bool = True) -> Optimum | None:
    """The best plan of ``formulation`` with reruns under the rules, on ``system``
    (``restore_held``: see :class:`RecomputeSearch`)."""
    return RecomputeSearch(graph, system, costs, formulation=formulation,
                           restore_held=restore_held).optimum()
