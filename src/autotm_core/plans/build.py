"""Helpers every planner uses to turn its decisions into a :class:`Plan`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Move, MoveKind, Plan, Rerun, Residency


def kernel_configs(
    graph: Graph, system: MemorySystem, residencies: Iterable[Residency], moves: Iterable[Move]
) -> tuple[tuple[str, ...], ...]:
    """For each kernel, the fastest pool each of its tensors is usable in at that kernel.

    A copy that an asynchronous move is still writing during kernel ``k`` (issued at or
    before ``k``, complete only after it) is not usable at ``k``. A tensor resident nowhere
    at a kernel that touches it gets the pool ``"?"``, which the verifier reports.
    """
    by_tensor: dict[str, list[tuple[int, int, int]]] = {}
    for r in residencies:
        by_tensor.setdefault(r.tensor, []).append((system.pool_index(r.pool), r.first, r.last))
    flights: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for m in moves:
        if m.kind is MoveKind.ASYNC:
            flights.setdefault((m.tensor, m.target), []).append((m.kernel, m.until))
    names = [pool.name for pool in system.pools]
    configs = []
    for k, kernel in enumerate(graph.kernels):
        row = []
        for name in kernel.tensors:
            best = None
            for pool, first, last in by_tensor.get(name, ()):
                arriving = any(issued <= k < until
                               for issued, until in flights.get((name, names[pool]), ()))
                if first <= k <= last and not arriving:
                    best = pool if best is None else min(best, pool)
            row.append("?" if best is None else names[best])
        configs.append(tuple(row))
    return tuple(configs)


def make_plan(
    graph: Graph,
    system: MemorySystem,
    *,
    residencies: Iterable[Residency],
    moves: Iterable[Move] = (),
    planner: str,
    attributes: Mapping[str, Any] | None = None,
    capacities: Mapping[str, int | None] | None = None,
    reruns: Iterable[Rerun] = (),
) -> Plan:
    """A plan whose kernel configurations are derived by :func:`kernel_configs`.

    ``capacities`` defaults to the system's pool capacities.
    """
    residencies = tuple(residencies)
    moves = tuple(moves)
    return Plan(
        graph=graph.name,
        system=system.name,
        capacities=dict(capacities) if capacities is not None
        else {p.name: p.capacity_nbytes for p in system.pools},
        residencies=residencies,
        moves=moves,
        configs=kernel_configs(graph, system, residencies, moves),
        planner=planner,
        attributes=dict(attributes or {}),
        reruns=tuple(reruns),
    )
