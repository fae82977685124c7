"""An independent, slow, obviously right check of the value rules, for property tests.

It replays the step: every copy of a tensor carries the version of the value it
holds (a write makes a new version), moves copy versions (an asynchronous one when
it completes, after kernel ``until - 1``), and a copy present at a kernel must hold
the current version. It assumes the plan is otherwise valid
(residencies begin at a birth or a move, moves come from where the tensor is).
"""

from __future__ import annotations

from autotm_core import Graph
from autotm_core.plans import MoveKind, Plan, Residency


def value_problems(plan: Plan, graph: Graph) -> list[str]:
    """One line per way the plan reads, keeps or leaves to the next step an old value."""
    problems: list[str] = []
    for tensor in graph.tensors:
        problems += _replay(plan, graph, tensor.name)
    return problems


def _replay(plan: Plan, graph: Graph, name: str) -> list[str]:
    n = len(graph.kernels)
    kind = graph.tensor(name).kind
    rs = [r for r in plan.residencies if r.tensor == name]
    ms = [m for m in plan.moves if m.tensor == name]

    def holding(pool: str, k: int) -> Residency | None:
        return next((r for r in rs if r.pool == pool and r.first <= k <= r.last), None)

    landed = {(m.target, m.kernel) for m in ms}
    starts = [r for r in rs if r.first == 0 and (r.pool, 0) not in landed]
    out: list[str] = []
    version = 0
    held: dict[str, int | None] = {}  # pool -> version of the copy there (None: not yet written)
    if kind.exists_before_step:
        held = {r.pool: 0 for r in starts}
        if not kind.survives_step and len(held) > 1:
            out.append(f"{name}: an input begins in {sorted(held)}")
    for k in range(n):
        copied = {m.target: held.get(m.source) for m in ms
                  if m.kind is MoveKind.SYNC and m.kernel == k}
        in_flight = {m.target: m for m in ms
                     if m.kind is MoveKind.ASYNC and m.kernel <= k < m.until}
        now: dict[str, int | None] = {}
        for r in rs:
            if not r.first <= k <= r.last or r.pool in in_flight:
                continue
            if r.first < k:
                now[r.pool] = held.get(r.pool)
            elif r.pool in copied:
                now[r.pool] = copied[r.pool]
            elif k == 0 and r.pool in held:
                now[r.pool] = held[r.pool]
            else:
                now[r.pool] = None  # born here: the kernel writes it
        for pool, v in now.items():
            if v is not None and v != version:
                out.append(f"{name}: the copy in {pool} holds version {v} at kernel {k}, "
                           f"the current one is {version}")
        kernel = graph.kernels[k]
        if name in kernel.outputs:
            version += 1
            now[plan.configs[k][kernel.tensors.index(name)]] = version
            if in_flight:
                out.append(f"{name}: an async move in flight during kernel {k} races its write")
        for target, m in in_flight.items():
            if k == m.until - 1:  # complete: the target holds what the source held
                now[target] = now.get(m.source)
        held = now
    if n and kind.exists_before_step and kind.survives_step:
        for r in starts:
            end = holding(r.pool, n - 1)
            if end is None or held.get(r.pool) != version:
                out.append(f"{name}: begins in {r.pool} but does not end current there")
            elif None not in (r.offset, end.offset) and r.offset != end.offset:
                out.append(f"{name}: begins in {r.pool} at {r.offset}, ends at {end.offset}")
    return out
