"""Random valid plans with reruns for the verifier's property tests (issue 27).

:func:`random_plan_with_reruns` gives each tensor a home pool and drops, at random, an
activation whose only writer may run again over a gap between two of its uses; a rerun of
that writer restores it into the fastest pool at a random boundary of the gap (just before
the next use, or earlier: it is then kept until the use). Each input of a rerun is found
where the rules of :mod:`autotm_core.plans.model` say it may be:

- resident in the fastest pool over the boundary (its home there, or restored earlier);
- copied into the fastest pool by a synchronous move at the boundary (its home elsewhere);
- recomputed first at the same boundary by a rerun of its own writer, when it is dropped
  there or no longer alive (a chain; that output is dropped again after the boundary).

Every choice respects the rules, so the verifier must accept the result; capacities are
the system's, assumed roomy. The plan's reruns at one boundary run in kernel order, so a
recomputed input always comes before the rerun reading it.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np

from autotm_core import Graph, MemorySystem
from autotm_core.plans import Move, Plan, Rerun, Residency, make_plan

FAST = 0
"""Position of the fastest pool."""


class _Builder:
    """The decisions of one random plan, checked as they are taken."""

    def __init__(self, graph: Graph, system: MemorySystem, rng: np.random.Generator,
                 slow_rate: float) -> None:
        self.graph, self.system, self.rng = graph, system, rng
        live = graph.liveness
        self.live = live
        names = [p.name for p in system.pools]
        self.writers: dict[str, list[int]] = collections.defaultdict(list)
        for k, kernel in enumerate(graph.kernels):
            for t in kernel.outputs:
                self.writers[t].append(k)
        self.may_rerun = [k.rerun and bool(k.outputs) and not set(k.inputs) & set(k.outputs)
                          for k in graph.kernels]
        self.home: dict[str, int] = {}
        for t, tensor in enumerate(graph.tensors):
            allowed = [p for p in range(len(names))
                       if tensor.pools is None or names[p] in tensor.pools]
            if live.last[t] < live.first[t] or not allowed:
                continue
            in_place = len(self.writers[tensor.name]) > (0 if tensor.kind.exists_before_step
                                                         else 1)
            slow = [p for p in allowed if p != FAST]
            pick = (int(rng.choice(slow)) if slow and not in_place and rng.random() < slow_rate
                    else allowed[0])
            self.home[tensor.name] = pick
        self.dropped: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        """Tensor -> (first kernel dropped, boundary restored) of each gap."""
        self.reruns: dict[int, set[int]] = collections.defaultdict(set)
        """Boundary -> kernels rerun there."""
        self.fetched: set[tuple[str, int]] = set()
        """(tensor, boundary) copied into the fastest pool for a rerun there."""
        self.needed: set[tuple[str, int]] = set()
        """(tensor, boundary) a rerun reads from a residency in the fastest pool."""

    def alive(self, name: str, k: int) -> bool:
        t = self.graph.tensor_index[name]
        return int(self.live.first[t]) <= k <= int(self.live.last[t])

    def resident(self, name: str, k: int) -> bool:
        return self.alive(name, k) and not any(lo <= k < b for lo, b in self.dropped[name])

    def restored_at(self, name: str, b: int) -> bool:
        return any(rb == b for _, rb in self.dropped[name])

    def in_fast(self, name: str, k: int) -> bool:
        """Whether the residency holding ``name`` at ``k`` is in the fastest pool."""
        start = max([rb for _, rb in self.dropped[name] if rb <= k], default=None)
        return start is not None or self.home[name] == FAST

    def unchanged(self, name: str, after: int, before: int) -> bool:
        return not any(after < w < before for w in self.writers[name])

    def provide(self, p: int, b: int, plan: dict, depth: int = 0) -> bool:
        """Whether rerun ``p`` at ``b`` can have all its inputs, recording in ``plan`` the
        reruns, fetches and needs it takes (nothing recorded when it cannot)."""
        kernel = self.graph.kernels[p]
        if depth > 3 or not self.may_rerun[p] or not all(
                self.unchanged(v, p, b) for v in kernel.inputs):
            return False
        here = {t for q in self.reruns[b] for t in self.graph.kernels[q].outputs}
        for v in kernel.inputs:
            if self.restored_at(v, b) or v in plan["outputs"] or v in here:
                continue  # restored or recomputed by a rerun of an earlier kernel here
            if self.resident(v, b - 1) and self.resident(v, b):
                if not self.in_fast(v, b):
                    if v in self.graph.kernels[b].outputs or FAST not in self._allowed(v):
                        return False
                    plan["fetched"].add((v, b))
                plan["needed"].add((v, b))
                continue
            q = self.writers[v]
            if len(q) != 1 or not self.provide(q[0], b, plan, depth + 1):
                return False
            plan["reruns"].add(q[0])
            plan["outputs"].update(self.graph.kernels[q[0]].outputs)
        return True

    def _allowed(self, name: str) -> list[int]:
        names = [p.name for p in self.system.pools]
        pools = self.graph.tensor(name).pools
        return [p for p in range(len(names)) if pools is None or names[p] in pools]

    def try_drop(self, name: str, lo: int, b: int) -> bool:
        """Drop ``name`` over kernels ``lo .. b - 1`` and restore it at ``b``, if the rules let."""
        if (any(lo <= nb < b for nt, nb in self.needed if nt == name)
                or any(nb >= lo for nt, nb in self.fetched if nt == name)
                or FAST not in self._allowed(name)):
            return False  # a rerun reads it there, or a move copies it (from then on: fast)
        (p,) = self.writers[name]
        plan: dict = {"reruns": set(), "fetched": set(), "needed": set(), "outputs": set()}
        self.dropped[name].append((lo, b))  # its own rerun must not read it
        if not self.provide(p, b, plan):
            self.dropped[name].pop()
            return False
        self.reruns[b] |= plan["reruns"] | {p}
        self.fetched |= plan["fetched"]
        self.needed |= plan["needed"]
        return True

    def residencies(self) -> tuple[list[Residency], list[Move]]:
        names = [p.name for p in self.system.pools]
        residencies, moves = [], []
        for name, home in self.home.items():
            t = self.graph.tensor_index[name]
            first, last = int(self.live.first[t]), int(self.live.last[t])
            starts = [(first, home)] + [(rb, FAST) for _, rb in sorted(self.dropped[name],
                                                                        key=lambda g: g[1])]
            ends = [lo - 1 for lo, _ in sorted(self.dropped[name], key=lambda g: g[1])] + [last]
            for (start, pool), end in zip(starts, ends, strict=True):
                residencies.append(Residency(name, names[pool], start, end))
        for name, b in sorted(self.fetched):
            residencies.append(Residency(name, names[FAST], b, b))
            moves.append(Move(name, names[self.home[name]], names[FAST], b))
        return residencies, moves


def random_plan_with_reruns(graph: Graph, system: MemorySystem, seed: int, *,
                            drop_rate: float = 0.7, slow_rate: float = 0.3) -> Plan:
    """A random plan with reruns that follows every rule (see the module doc)."""
    rng = np.random.default_rng(seed)
    builder = _Builder(graph, system, rng, slow_rate)
    live = graph.liveness
    gaps = []
    for name in builder.home:
        t = graph.tensor_index[name]
        if graph.tensors[t].kind.exists_before_step or len(builder.writers[name]) != 1:
            continue
        users = live.users(t).tolist()
        for u, v in itertools.pairwise(users):
            if v - u >= 2:
                gaps.append((name, u + 1, int(rng.integers(u + 2, v + 1))))
    rng.shuffle(gaps)  # type: ignore[arg-type]
    for name, lo, b in gaps:
        if rng.random() < drop_rate:
            builder.try_drop(name, lo, b)
    residencies, moves = builder.residencies()
    reruns = [Rerun(k, b) for b, kernels in sorted(builder.reruns.items())
              for k in sorted(kernels)]
    return make_plan(graph, system, residencies=residencies, moves=moves, reruns=reruns,
                     planner="random-reruns")
