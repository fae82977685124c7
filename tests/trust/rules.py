"""An independent checker of plans, written from docs/formats.md ("Plan") and issue 14's semantics.

It shares nothing with :mod:`autotm_core.plans.verify` but the records it reads:
liveness is recomputed from the graph's kernels, every rule is a plain loop, and
each refusal names the rule it breaks (:data:`RULES`), so a disagreement with the
project's verifier can be pinned to one sentence of the documentation.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from typing import TypeGuard

import attrs

from autotm_core.ir import Graph, TensorKind
from autotm_core.memory import MemorySystem
from autotm_core.plans import MoveKind, Plan, Residency

RULES = {
    "names": "the plan names the graph and memory system it is checked against",
    "capacities": "every pool of the system, none larger than the system's",
    "configs": "one configuration per kernel, one known pool per tensor of the kernel",
    "span": "a residency or move lies inside the program and names known records",
    "life": "a residency lies inside the tensor's life, in a pool the tensor may use",
    "overlap": "no two residencies of one tensor in one pool overlap",
    "coverage": "the tensor is resident somewhere at every kernel of its life",
    "beginning": "a residency begins at birth (in the birth pool) or at a move into its pool",
    "usable": "a kernel uses a copy resident there and not still arriving by an async move",
    "move": "a move copies from a residency there into one beginning at the move",
    "flight": "an async copy keeps both ends over its flight and its target is read by "
              "nothing before it completes",
    "stale": "a kernel writing a tensor ends every other residency of it at that kernel",
    "lost-update": "a sync move after a kernel that writes the tensor copies from that write",
    "async-write": "no kernel writes a tensor while an async copy of it is in flight",
    "steady-state": "a pre-existing surviving tensor ends the step current where it began",
    "input-start": "an input begins in exactly one pool",
    "capacity": "bytes in a bounded pool stay within its capacity at every half step",
    "offset": "addresses lie inside their pool and never share a byte at one time",
}
"""Every rule the checker knows, by the name its violations carry."""


@attrs.frozen
class Violation:
    """One rule a plan breaks."""

    rule: str
    """The rule's name, a key of :data:`RULES`."""
    message: str
    """What is wrong, naming the tensor, kernel and pool."""


@attrs.frozen
class Life:
    """When a tensor occupies memory, recomputed from the graph (not from its liveness)."""

    first: int
    """First kernel of its life (0 for a tensor that exists before the step)."""
    last: int
    """Last kernel of its life (-1 when it never exists)."""
    producer: int | None
    """Kernel that writes it as a new value, ``None`` for a pre-existing tensor."""
    kind: TensorKind
    """Its kind."""


def lives(graph: Graph) -> dict[str, Life]:
    """Each tensor's life: pre-existing from kernel 0, else from its producer, to its last use
    (to the last kernel when it survives the step)."""
    n = len(graph.kernels)
    producer: dict[str, int] = {}
    last_use: dict[str, int] = {}
    for k, kernel in enumerate(graph.kernels):
        for name in kernel.inputs + kernel.outputs:
            last_use[name] = k
        for name in kernel.outputs:
            if name not in kernel.inputs:
                producer.setdefault(name, k)
    out = {}
    for tensor in graph.tensors:
        kind = tensor.kind
        if kind.exists_before_step:
            first, made = 0, None
        elif tensor.name in producer:
            first, made = producer[tensor.name], producer[tensor.name]
        else:
            out[tensor.name] = Life(0, -1, None, kind)
            continue
        last = n - 1 if kind.survives_step else max(first, last_use.get(tensor.name, first))
        out[tensor.name] = Life(first, last, made, kind)
    return out


def writes(graph: Graph, tensor: str, k: int) -> bool:
    """Whether kernel ``k`` writes ``tensor`` (new value or in place)."""
    return 0 <= k < len(graph.kernels) and tensor in graph.kernels[k].outputs


class _Plan:
    """The plan's records indexed for lookups; records naming unknown things are dropped."""

    def __init__(self, plan: Plan, graph: Graph, system: MemorySystem,
                 found: list[Violation]) -> None:
        self.n = n = len(graph.kernels)
        self.pools = [p.name for p in system.pools]
        self.life = lives(graph)
        self.nbytes = {t.name: t.nbytes for t in graph.tensors}
        self.residencies: list[Residency] = []
        for i, r in enumerate(plan.residencies):
            ok = (r.tensor in self.life and r.pool in self.pools and _is_int(r.first)
                  and _is_int(r.last) and 0 <= r.first <= r.last < n
                  and (r.offset is None or _is_int(r.offset)))
            if ok:
                self.residencies.append(r)
            else:
                found.append(Violation("span", f"residencies[{i}] {r}: unknown tensor or pool, "
                                       f"or not a span of kernels 0..{n - 1}"))
        self.by_pool: dict[tuple[str, str], list[Residency]] = defaultdict(list)
        for r in self.residencies:
            self.by_pool[r.tensor, r.pool].append(r)
        self.moves = []
        for i, m in enumerate(plan.moves):
            if (m.tensor in self.life and m.source in self.pools and m.target in self.pools
                    and isinstance(m.kind, MoveKind) and _is_int(m.kernel) and 0 <= m.kernel < n
                    and _is_int(m.until)):
                self.moves.append(m)
            else:
                found.append(Violation("span", f"moves[{i}] {m}: unknown tensor, pool or kind, "
                                       f"or a kernel outside 0..{n - 1}"))
        self.sync_in = {(m.tensor, m.target, m.kernel) for m in self.moves
                        if m.kind is MoveKind.SYNC}
        self.sync_out = {(m.tensor, m.source, m.kernel) for m in self.moves
                         if m.kind is MoveKind.SYNC}
        self.async_in = {(m.tensor, m.target, m.kernel) for m in self.moves
                         if m.kind is MoveKind.ASYNC}
        self.flights: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        """(tensor, target pool) -> (issued at, until) of each async move into it."""
        for m in self.moves:
            if m.kind is MoveKind.ASYNC:
                self.flights[m.tensor, m.target].append((m.kernel, m.until))
        self.config: dict[tuple[int, str], str] = {}
        if len(plan.configs) != n:
            found.append(Violation("configs", f"{len(plan.configs)} configurations for {n} "
                                   "kernels"))
        for k, (kernel, row) in enumerate(zip(graph.kernels, plan.configs, strict=False)):
            if len(row) != len(kernel.tensors):
                found.append(Violation("configs", f"configs[{k}] has {len(row)} pools for "
                                       f"{len(kernel.tensors)} tensors"))
                continue
            for name, pool in zip(kernel.tensors, row, strict=True):
                if pool in self.pools:
                    self.config[k, name] = pool
                else:
                    found.append(Violation("configs", f"configs[{k}] puts {name!r} in unknown "
                                           f"pool {pool!r}"))

    def covering(self, tensor: str, pool: str, k: int) -> Residency | None:
        return next((r for r in self.by_pool.get((tensor, pool), ()) if r.first <= k <= r.last),
                    None)

    def arriving(self, tensor: str, pool: str, k: int, issued_by: int | None = None) -> bool:
        """Whether an async copy into ``pool`` issued by kernel ``issued_by`` (default ``k``)
        is still in flight during ``k`` (completes only before a later kernel)."""
        last_issue = k if issued_by is None else issued_by
        return any(issued <= last_issue and k < until
                   for issued, until in self.flights.get((tensor, pool), ()))

    def usable(self, tensor: str, pool: str, k: int) -> bool:
        """Resident at ``k`` and not still arriving by an async move during ``k``."""
        return (self.covering(tensor, pool, k) is not None
                and not self.arriving(tensor, pool, k))

    def start_pools(self, tensor: str) -> list[Residency]:
        """Residencies holding a pre-existing tensor's pre-step value at kernel 0."""
        return [r for r in self.residencies if r.tensor == tensor and r.first == 0
                and (tensor, r.pool, 0) not in self.async_in]


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check(plan: Plan, graph: Graph, system: MemorySystem) -> list[Violation]:
    """Every rule ``plan`` breaks; empty when it is valid."""
    found: list[Violation] = []
    if plan.graph != graph.name or plan.system != system.name:
        found.append(Violation("names", f"plan for {plan.graph!r} on {plan.system!r}, checked "
                               f"against {graph.name!r} on {system.name!r}"))
    found += _capacities(plan, system)
    p = _Plan(plan, graph, system, found)
    for rule in (_lives, _overlaps, _coverage, _beginnings, _usable, _moves, _values,
                 _steady_state, _capacity, _offsets):
        found += rule(p, graph, system, plan)
    return found


def _capacities(plan: Plan, system: MemorySystem) -> list[Violation]:
    out = [Violation("capacities", f"unknown pool {name!r}") for name in plan.capacities
           if name not in [p.name for p in system.pools]]
    for pool in system.pools:
        value = plan.capacities.get(pool.name, "missing")
        if value is None and not pool.bounded:
            continue
        if not _is_int(value) or value < 0:
            out.append(Violation("capacities", f"pool {pool.name!r}: capacity {value!r}"))
        elif pool.capacity_nbytes is not None and value > pool.capacity_nbytes:
            out.append(Violation("capacities", f"pool {pool.name!r}: {value} bytes, more than "
                                 f"the system's {pool.capacity_nbytes}"))
    return out


def _lives(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    allowed = {t.name: t.pools for t in graph.tensors}
    for r in p.residencies:
        life = p.life[r.tensor]
        if not life.first <= r.first <= r.last <= life.last:
            yield Violation("life", f"{r}: outside the life {life.first}..{life.last}")
        pools = allowed[r.tensor]
        if pools is not None and r.pool not in pools:
            yield Violation("life", f"{r}: the tensor may live only in {pools}")


def _overlaps(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    for group in p.by_pool.values():
        spans = sorted(group, key=lambda r: r.first)
        for a, b in itertools.pairwise(spans):
            if b.first <= a.last:
                yield Violation("overlap", f"{a} and {b} overlap")


def _coverage(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    for name, life in p.life.items():
        for k in range(life.first, life.last + 1):
            if not any(p.covering(name, pool, k) for pool in p.pools):
                yield Violation("coverage", f"{name!r} is resident nowhere at kernel {k}")
                break


def _beginnings(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    for r in p.residencies:
        life = p.life[r.tensor]
        moved = (r.tensor, r.pool, r.first) in p.sync_in | p.async_in
        if life.producer is None:
            born = r.first == 0
        else:
            born = r.first == life.producer and p.config.get((r.first, r.tensor)) == r.pool
        if not born and not moved:
            yield Violation("beginning", f"{r}: neither born there nor moved in at {r.first}")


def _usable(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    for (k, name), pool in p.config.items():
        if not p.usable(name, pool, k):
            yield Violation("usable", f"kernel {k} uses {name!r} in {pool!r}, where it is not "
                            "resident, or still arriving")


def _moves(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    seen: set[tuple[str, str, int]] = set()
    for m in p.moves:
        key = (m.tensor, m.target, m.kernel)
        if key in seen:
            yield Violation("move", f"{m}: a second move into the pool at that kernel")
        seen.add(key)
        if m.source == m.target:
            yield Violation("move", f"{m}: goes nowhere")
            continue
        if m.kind is MoveKind.SYNC:
            if m.until != m.kernel:
                yield Violation("move", f"{m}: a sync move's until is its kernel")
            if m.kernel == 0 or p.covering(m.tensor, m.source, m.kernel - 1) is None:
                yield Violation("move", f"{m}: no source residency covers kernel {m.kernel - 1}")
            elif p.arriving(m.tensor, m.source, m.kernel, issued_by=m.kernel - 1):
                yield Violation("flight", f"{m}: reads a copy still in flight at its boundary")
        elif not m.kernel < m.until <= p.n:
            yield Violation("move", f"{m}: until outside {m.kernel + 1}..{p.n}")
        elif not p.usable(m.tensor, m.source, m.kernel):
            yield Violation("move", f"{m}: the source is not there (or still arriving)")
        elif p.covering(m.tensor, m.source, m.kernel).last < m.until - 1:  # type: ignore[union-attr]
            yield Violation("flight", f"{m}: the source is freed before the copy completes")
        target = p.covering(m.tensor, m.target, m.kernel)
        if target is None or target.first != m.kernel:
            yield Violation("move", f"{m}: no residency of the target begins at {m.kernel}")
        elif m.kind is MoveKind.ASYNC and target.last < m.until - 1:
            yield Violation("flight", f"{m}: the target is freed while the copy is in flight")


def _values(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    for k, kernel in enumerate(graph.kernels):
        for name in kernel.outputs:
            written = p.config.get((k, name))
            for pool in p.pools:
                r = p.covering(name, pool, k)
                if pool != written and r is not None and r.last > k:
                    yield Violation("stale", f"kernel {k} writes {name!r} in {written!r}; its "
                                    f"copy in {pool!r} lives on with the old value ({r})")
    for m in p.moves:
        if m.kind is MoveKind.SYNC and writes(graph, m.tensor, m.kernel - 1):
            written = p.config.get((m.kernel - 1, m.tensor))
            if m.source != written:
                yield Violation("lost-update", f"{m}: kernel {m.kernel - 1} wrote the tensor in "
                                f"{written!r}; the move copies the old value")
        if m.kind is MoveKind.ASYNC and any(writes(graph, m.tensor, k)
                                            for k in range(m.kernel, m.until)):
            yield Violation("async-write", f"{m}: a kernel of its flight writes the tensor")


def _steady_state(p: _Plan, graph: Graph, system: MemorySystem,
                  plan: Plan) -> Iterator[Violation]:
    last = p.n - 1
    for name, life in p.life.items():
        if not life.kind.exists_before_step:
            continue
        starts = p.start_pools(name)
        if not life.kind.survives_step:
            if len({r.pool for r in starts}) != 1:
                yield Violation("input-start", f"input {name!r} begins in "
                                f"{sorted({r.pool for r in starts})}")
            continue
        for r in starts:
            end = p.covering(name, r.pool, last)
            written = p.config.get((last, name)) if writes(graph, name, last) else r.pool
            if end is None or written != r.pool:
                yield Violation("steady-state", f"{name!r} begins the step in {r.pool!r} but "
                                "does not end it there current")
            elif None not in (end.offset, r.offset) and end.offset != r.offset:
                yield Violation("steady-state", f"{name!r} begins at offset {r.offset} of "
                                f"{r.pool!r} and ends at {end.offset}")


def _spans(p: _Plan, r: Residency) -> tuple[int, int]:
    """Half steps a residency occupies its pool (``2k+1``: kernel ``k``; ``2k``: before it)."""
    start = 2 * r.first + 1 - ((r.tensor, r.pool, r.first) in p.sync_in)
    end = 2 * r.last + 1 + ((r.tensor, r.pool, r.last + 1) in p.sync_out)
    return start, end


def _capacity(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    fastest = p.pools[0]
    for pool in p.pools:
        capacity = plan.capacities.get(pool)
        if not _is_int(capacity):
            capacity = system.pool(pool).capacity_nbytes
        if capacity is None:
            continue
        used = [0] * (2 * p.n + 1)
        for r in p.residencies:
            if r.pool == pool:
                start, end = _spans(p, r)
                for h in range(start, end + 1):
                    used[h] += p.nbytes[r.tensor]
        if pool == fastest:
            for k, kernel in enumerate(graph.kernels):
                used[2 * k + 1] += kernel.workspace_nbytes
        for h, nbytes in enumerate(used):
            if nbytes > capacity:
                where = f"kernel {h // 2}" if h % 2 else f"the boundary before kernel {h // 2}"
                yield Violation("capacity", f"{pool!r} holds {nbytes} bytes at {where}, more "
                                f"than {capacity}")


def _offsets(p: _Plan, graph: Graph, system: MemorySystem, plan: Plan) -> Iterator[Violation]:
    placed: list[tuple[str, int, int, int, int, str]] = []  # pool, start, end, lo, hi, what
    for r in p.residencies:
        if r.offset is not None:
            start, end = _spans(p, r)
            placed.append((r.pool, start, end, r.offset, r.offset + p.nbytes[r.tensor], str(r)))
    for k, offset in plan.workspace_offsets.items():
        if not 0 <= k < p.n:
            yield Violation("offset", f"workspace offset for kernel {k}, outside the program")
            continue
        size = graph.kernels[k].workspace_nbytes
        placed.append((p.pools[0], 2 * k + 1, 2 * k + 1, offset, offset + size, f"workspace {k}"))
    for pool, _, _, lo, hi, what in placed:
        capacity = plan.capacities.get(pool, system.pool(pool).capacity_nbytes)
        if lo < 0 or (_is_int(capacity) and hi > capacity):
            yield Violation("offset", f"{what}: bytes {lo}..{hi} outside {pool!r}")
    for i, a in enumerate(placed):
        for b in placed[i + 1:]:
            same_time = a[0] == b[0] and a[1] <= b[2] and b[1] <= a[2]
            sized = a[3] < a[4] and b[3] < b[4]
            if same_time and sized and a[3] < b[4] and b[3] < a[4]:
                yield Violation("offset", f"{a[5]} and {b[5]} share bytes of {a[0]!r}")
