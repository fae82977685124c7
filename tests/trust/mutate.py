"""Small random changes to a plan: most break one rule, some break none.

The checker-against-verifier tests feed both the mutants of valid plans, so
every rule is exercised on plans that are almost right.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs

from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, Residency

Mutation = Callable[[Plan, Graph, MemorySystem, random.Random], Plan | None]
"""One kind of change; ``None`` when the plan offers nothing to change."""


def _pick(rng: random.Random, items: tuple) -> int | None:
    return rng.randrange(len(items)) if items else None


def _residency(plan: Plan, rng: random.Random) -> tuple[int, Residency] | None:
    at = _pick(rng, plan.residencies)
    return None if at is None else (at, plan.residencies[at])


def _replace(items: tuple, at: int, new: object | None) -> tuple:
    return items[:at] + (() if new is None else (new,)) + items[at + 1:]


def _other_pool(system: MemorySystem, pool: str, rng: random.Random) -> str:
    return rng.choice([p.name for p in system.pools if p.name != pool])


def config_pool(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    rows = [k for k, row in enumerate(plan.configs) if row]
    if not rows:
        return None
    k = rng.choice(rows)
    row = list(plan.configs[k])
    e = rng.randrange(len(row))
    row[e] = _other_pool(system, row[e], rng)
    return attrs.evolve(plan, configs=_replace(plan.configs, k, tuple(row)))


def residency_span(plan: Plan, graph: Graph, system: MemorySystem,
                   rng: random.Random) -> Plan | None:
    picked = _residency(plan, rng)
    if picked is None:
        return None
    at, r = picked
    if rng.random() < 0.5:
        r = attrs.evolve(r, first=r.first + rng.choice([-1, 1]))
    else:
        r = attrs.evolve(r, last=r.last + rng.choice([-1, 1]))
    return attrs.evolve(plan, residencies=_replace(plan.residencies, at, r))


def drop_residency(plan: Plan, graph: Graph, system: MemorySystem,
                   rng: random.Random) -> Plan | None:
    at = _pick(rng, plan.residencies)
    return None if at is None else attrs.evolve(
        plan, residencies=_replace(plan.residencies, at, None))


def copy_residency(plan: Plan, graph: Graph, system: MemorySystem,
                   rng: random.Random) -> Plan | None:
    """A second residency in another pool over part of a residency's span: a free copy."""
    picked = _residency(plan, rng)
    if picked is None:
        return None
    r = picked[1]
    first = rng.randint(r.first, r.last)
    extra = Residency(r.tensor, _other_pool(system, r.pool, rng), first, rng.randint(first, r.last))
    return attrs.evolve(plan, residencies=(*plan.residencies, extra))


def drop_move(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    at = _pick(rng, plan.moves)
    return None if at is None else attrs.evolve(plan, moves=_replace(plan.moves, at, None))


def change_move(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    at = _pick(rng, plan.moves)
    if at is None:
        return None
    m = plan.moves[at]
    change = rng.randrange(4)
    if change == 0:
        kind = MoveKind.ASYNC if m.kind is MoveKind.SYNC else MoveKind.SYNC
        m = attrs.evolve(m, kind=kind)
    elif change == 1:
        m = attrs.evolve(m, kernel=m.kernel + rng.choice([-1, 1]))
    elif change == 2:
        m = attrs.evolve(m, source=_other_pool(system, m.source, rng))
    else:
        return attrs.evolve(plan, moves=(*plan.moves, m))
    return attrs.evolve(plan, moves=_replace(plan.moves, at, m))


def add_move(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    """A move into the pool of a residency (from another pool, at its first kernel)."""
    picked = _residency(plan, rng)
    if picked is None:
        return None
    r = picked[1]
    kind = rng.choice([MoveKind.SYNC, MoveKind.ASYNC])
    move = Move(r.tensor, _other_pool(system, r.pool, rng), r.pool, r.first, kind)
    return attrs.evolve(plan, moves=(*plan.moves, move))


def tighter(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    fast = system.pools[0].name
    capacity = plan.capacities.get(fast)
    peak = int(graph.liveness.peak_nbytes)
    lower = rng.randint(0, capacity if isinstance(capacity, int) else peak)
    return attrs.evolve(plan, capacities={**plan.capacities, fast: lower})


def offsets(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random) -> Plan | None:
    """Addresses for every residency of the fastest pool, some of them clashing."""
    fast = system.pools[0].name
    capacity = plan.capacities.get(fast)
    top = capacity if isinstance(capacity, int) else int(graph.liveness.peak_nbytes)
    sizes = {t.name: t.nbytes for t in graph.tensors}
    placed, cursor = [], 0
    for r in plan.residencies:
        if r.pool == fast:
            offset = cursor if rng.random() < 0.8 else rng.randint(0, max(0, top))
            cursor = offset + sizes.get(r.tensor, 0)
            r = attrs.evolve(r, offset=offset)
        placed.append(r)
    return attrs.evolve(plan, residencies=tuple(placed))


def change_until(plan: Plan, graph: Graph, system: MemorySystem,
                 rng: random.Random) -> Plan | None:
    """An async move completing earlier or later (maybe outside its flight), or a sync move
    given an until."""
    at = _pick(rng, plan.moves)
    if at is None:
        return None
    m = plan.moves[at]
    until = m.until + rng.choice([-2, -1, 1, 2, 3])
    return attrs.evolve(plan, moves=_replace(plan.moves, at, attrs.evolve(m, until=until)))


MUTATIONS: tuple[Mutation, ...] = (config_pool, residency_span, drop_residency, copy_residency,
                                   drop_move, change_move, add_move, tighter, offsets)
"""Every kind of change of a plan whose copies overlap one kernel each."""

SPAN_MUTATIONS: tuple[Mutation, ...] = (*MUTATIONS, change_until)
"""Every kind of change, a copy's ``until`` too."""


def mutants(plan: Plan, graph: Graph, system: MemorySystem, rng: random.Random,
            count: int, kinds: tuple[Mutation, ...] = MUTATIONS) -> list[Plan]:
    """``count`` random single changes of ``plan`` of ``kinds`` (fewer when some kinds find
    nothing)."""
    out = []
    for _ in range(count):
        changed = rng.choice(kinds)(plan, graph, system, rng)
        if changed is not None:
            out.append(changed)
    return out
