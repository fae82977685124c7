"""The best plan the documented rules allow on a tiny graph, found by exhaustive search,
with asynchronous copies overlapping one kernel each (copies spanning kernels:
:mod:`.spanning`).

:func:`optimum` searches every combination of :func:`.space.options` kernel by
kernel (dynamic programming: two partial plans that leave every tensor current
in the same pools, with the same start pools, have the same futures, so only the
cheaper is kept). Capacity (at every kernel and every boundary, a tensor being
copied synchronously counting in both pools) is checked as it goes; a kernel's
configuration is the fastest over the pools its read-only tensors are usable in,
which is exact because those choices change nothing else. The optimum is built
into a :class:`~autotm_core.plans.Plan`; its time by this module's own accounting
is returned with it so that tests compare it with the simulator's.

:func:`enumerate_plans` lists every plan of the same space without merging
(lenient spaces include rule breakers), and :func:`random_plan` walks it at
random: inputs for the checker-against-verifier tests.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence

import attrs

from autotm_core.costs import KernelCosts
from autotm_core.errors import PlanError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, Residency

from .combine import Choice, Column, cheapest, undominated
from .space import Step, Track, ends_current, options, tracks

Layer = dict[tuple, tuple[float, tuple, tuple[Step, ...], tuple[int, ...]]]
"""Partial plans after one kernel: state -> (seconds, previous state, steps, configuration)."""


@attrs.frozen
class Optimum:
    """The best plan of one formulation."""

    seconds: float
    """Its step time by this module's accounting (kernels, copies, overlap)."""
    plan: Plan
    """The plan itself."""
    states: int
    """Partial plans the search kept, over all kernels (its size)."""


class Search:
    """The search space of one graph, memory system, costs and formulation."""

    def __init__(self, graph: Graph, system: MemorySystem, costs: KernelCosts, *,
                 formulation: str, lenient: bool = False) -> None:
        self.graph, self.system, self.costs = graph, system, costs
        self.formulation, self.lenient = formulation, lenient
        self.tracks = tracks(graph, system)
        self.n = len(graph.kernels)
        self.alive = [[i for i, t in enumerate(self.tracks) if t.first <= k <= t.last]
                      for k in range(self.n)]
        self.index = {t.name: i for i, t in enumerate(self.tracks)}
        self.bounded = [q for q, p in enumerate(system.pools) if p.capacity_nbytes is not None]
        self.limits = tuple(system.pools[q].capacity_nbytes or 0 for q in self.bounded)
        self._times: dict[tuple, tuple[float, tuple[int, ...]] | None] = {}
        self._options: dict[tuple, list[Step]] = {}
        self._columns: dict[tuple, Column] = {}

    # -- pieces ---------------------------------------------------------------------------

    def options(self, i: int, k: int, before: Step | None) -> list[Step]:
        key = (i, k, before if self.lenient else None if before is None else before.current)
        if key not in self._options:
            self._options[key] = options(self.tracks[i], k, before,
                                         formulation=self.formulation, lenient=self.lenient)
        return self._options[key]

    def kernel_time(self, k: int, allowed: tuple[frozenset[int], ...]) -> \
            tuple[float, tuple[int, ...]] | None:
        """The fastest configuration of kernel ``k`` with each tensor in one of its ``allowed``
        pools (``None`` if its cost table has none of them)."""
        key = (k, allowed)
        if key not in self._times:
            best = None
            for pools in itertools.product(*(sorted(a) for a in allowed)):
                try:
                    seconds = self.costs.seconds(k, pools)
                except PlanError:  # a cost table that leaves this configuration out
                    continue
                if best is None or seconds < best[0]:
                    best = (seconds, pools)
            self._times[key] = best
        return self._times[key]

    def column(self, i: int, k: int, before: frozenset[int] | None,
               start: frozenset[int]) -> Column:
        """The undominated options of tensor ``i`` at ``k`` after ``before`` (its current pools;
        ``None`` at birth), ``start`` its start pools, each with what it costs."""
        key = (i, k, before, start)
        if key in self._columns:
            return self._columns[key]
        track = self.tracks[i]
        touched = track.name in self.graph.kernels[k].tensors
        found = []
        for step in self.options(i, k, None if before is None else Step(before)):
            begun = step.born if before is None else start
            if k == track.last and not ends_current(track, begun, step):
                continue
            held = tuple(track.nbytes * (q in step.hold) for q in self.bounded)
            cross = tuple(track.nbytes * (q in step.boundary) for q in self.bounded)
            sync = sum(self.system.copy_seconds(track.nbytes, s, t, asynchronous=False)
                       for s, t in step.sync)
            asyn = sum(self.system.copy_seconds(track.nbytes, s, t, asynchronous=True)
                       for s, t in step.asyn)
            allowed = step.config_pools if touched else frozenset()
            state = (step.current, begun if track.steady else frozenset())
            found.append(Choice(step, state, held, cross, sync, asyn, allowed))
        column = self._columns[key] = Column.of(undominated(found), len(self.bounded))
        return column

    # -- the search -----------------------------------------------------------------------

    def optimum(self) -> Optimum | None:
        """The cheapest plan of the space that fits, or ``None`` when none does."""
        layers: list[Layer] = []
        layer: Layer = {(): (0.0, (), (), ())}
        for k in range(self.n):
            layer = self._advance(k, layer)
            layers.append(layer)
        if not layer:
            return None
        best = key = min(layer, key=lambda s: layer[s][0])
        steps: list[tuple[Step, ...]] = []
        configs: list[tuple[int, ...]] = []
        for k in range(self.n - 1, -1, -1):
            _, key, chosen, config = layers[k][key]
            steps.append(chosen)
            configs.append(config)
        plan = self.build(steps[::-1], configs[::-1])
        return Optimum(layer[best][0], plan, sum(len(x) for x in layers))

    def _advance(self, k: int, layer: Layer) -> Layer:
        out: Layer = {}
        indices = self.alive[k]
        touched = [indices.index(self.index[t]) for t in self.graph.kernels[k].tensors]
        workspace = self.graph.kernels[k].workspace_nbytes
        room = [c - (workspace if q == 0 else 0) for q, c in zip(self.bounded, self.limits,
                                                                   strict=True)]
        before_alive = self.alive[k - 1] if k else []
        for key, (seconds, _, _, _) in layer.items():
            state = dict(zip(before_alive, key, strict=True))
            columns = [self.column(i, k, None, frozenset()) if k == self.tracks[i].first
                       else self.column(i, k, *state[i]) for i in indices]
            found = cheapest(columns, touched, room=room, limits=self.limits,
                             kernel_time=lambda allowed: self.kernel_time(k, allowed))
            for new, (spent, picked, config) in found.items():
                total = seconds + spent
                if new not in out or total < out[new][0]:
                    out[new] = (total, key, tuple(c.step for c in picked), config)
        return out

    # -- plans ----------------------------------------------------------------------------

    def build(self, steps: Sequence[Sequence[Step]], configs: Sequence[Sequence[int]]) -> Plan:
        """The plan whose kernel ``k`` takes ``steps[k]`` (aligned with :attr:`alive`)."""
        names = [p.name for p in self.system.pools]
        residencies: list[Residency] = []
        moves: list[Move] = []
        for i, track in enumerate(self.tracks):
            opened: dict[int, int] = {}
            for k in range(track.first, track.last + 1):
                step = steps[k][self.alive[k].index(i)]
                for pool in [p for p in opened if p not in step.kept]:
                    residencies.append(Residency(track.name, names[pool], opened.pop(pool), k - 1))
                for pool in step.hold - step.kept:
                    opened[pool] = k
                moves += [Move(track.name, names[s], names[t], k, MoveKind.SYNC)
                          for s, t in step.sync]
                moves += [Move(track.name, names[s], names[t], k, MoveKind.ASYNC)
                          for s, t in step.asyn]
            residencies += [Residency(track.name, names[p], f, track.last)
                            for p, f in opened.items()]
        return Plan(graph=self.graph.name, system=self.system.name,
                    capacities={p.name: p.capacity_nbytes for p in self.system.pools},
                    residencies=residencies, moves=moves,
                    configs=[[names[p] for p in row] for row in configs],
                    planner=f"trust/exhaustive/{self.formulation}")

    def sequences(self, i: int, *, strict_end: bool) -> Iterator[tuple[Step, ...]]:
        """Every sequence of steps of tensor ``i`` over its life."""
        track = self.tracks[i]

        def walk(k: int, before: Step | None, start: frozenset[int]) -> Iterator[tuple[Step, ...]]:
            for step in self.options(i, k, before):
                begun = step.born if before is None else start
                if k == track.last:
                    if not strict_end or ends_current(track, begun, step):
                        yield (step,)
                    continue
                for rest in walk(k + 1, step, begun):
                    yield (step, *rest)

        yield from walk(track.first, None, frozenset())

    def assemble(self, per_track: Sequence[Sequence[Step]]) -> Plan | None:
        """The plan of one sequence per tensor, each kernel in its fastest configuration."""
        steps, configs = [], []
        for k in range(self.n):
            chosen = [per_track[i][k - self.tracks[i].first] for i in self.alive[k]]
            by_name = {self.tracks[i].name: s for i, s in zip(self.alive[k], chosen, strict=True)}
            timed = self.kernel_time(k, tuple(by_name[t].config_pools
                                              for t in self.graph.kernels[k].tensors))
            if timed is None:
                return None
            steps.append(chosen)
            configs.append(timed[1])
        return self.build(steps, configs)


def optimum(graph: Graph, system: MemorySystem, costs: KernelCosts, *,
            formulation: str) -> Optimum | None:
    """The best plan of ``formulation`` under the rules on ``system`` (its capacities)."""
    return Search(graph, system, costs, formulation=formulation).optimum()


def count_plans(graph: Graph, system: MemorySystem, costs: KernelCosts, *, formulation: str,
                lenient: bool = False) -> int:
    """How many plans :func:`enumerate_plans` would list."""
    search = Search(graph, system, costs, formulation=formulation, lenient=lenient)
    total = 1
    for i in range(len(search.tracks)):
        total *= sum(1 for _ in search.sequences(i, strict_end=not lenient))
    return total


def enumerate_plans(graph: Graph, system: MemorySystem, costs: KernelCosts, *,
                    formulation: str, lenient: bool = False) -> Iterator[Plan]:
    """Every plan of the space, capacity aside (the checkers decide what fits)."""
    search = Search(graph, system, costs, formulation=formulation, lenient=lenient)
    per_track = [list(search.sequences(i, strict_end=not lenient))
                 for i in range(len(search.tracks))]
    for combination in itertools.product(*per_track):
        plan = search.assemble(combination)
        if plan is not None:
            yield plan


def random_plan(graph: Graph, system: MemorySystem, costs: KernelCosts, *, formulation: str,
                rng: random.Random, lenient: bool = False) -> Plan | None:
    """One plan of the space drawn by a random walk per tensor (capacity aside)."""
    search = Search(graph, system, costs, formulation=formulation, lenient=lenient)
    per_track = []
    for i, track in enumerate(search.tracks):
        for _ in range(20):
            walk = _walk(search, i, track, rng)
            if walk is not None:
                break
        else:
            return None
        per_track.append(walk)
    return search.assemble(per_track)


def _walk(search: Search, i: int, track: Track, rng: random.Random) -> tuple[Step, ...] | None:
    steps: list[Step] = []
    for k in range(track.first, track.last + 1):
        steps.append(rng.choice(search.options(i, k, steps[-1] if steps else None)))
    if not search.lenient and not ends_current(track, steps[0].born, steps[-1]):
        return None
    return tuple(steps)
