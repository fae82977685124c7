"""The value rules of a plan (one step of a training loop), read literally, for the tests.

An independent statement of the rules every copy of a tensor follows (see
``autotm_core.plans.model``), written tensor by tensor in plain Python so that the
baselines are checked by something that shares nothing with the verifier:

1. a kernel writing a tensor writes it into the pool its configuration names;
   every other residency covering that kernel ends there;
2. a sync move before ``k`` copies from the pool ``k - 1`` wrote the tensor into,
   when ``k - 1`` writes it; an async move never overlaps a kernel writing it;
3. a parameter, optimizer state or constant holds its current value, after the
   last kernel, in every pool it began the step in (at the same offset when both
   residencies have one); an input begins the step in exactly one pool.
"""

from __future__ import annotations

from autotm_core import Graph
from autotm_core.plans import MoveKind, Plan


def value_problems(plan: Plan, graph: Graph) -> list[str]:
    """Every break of the value rules; empty when the plan keeps every copy current."""
    n = len(graph.kernels)
    written: dict[tuple[str, int], str] = {}  # (tensor, kernel) -> pool written into
    for k, kernel in enumerate(graph.kernels):
        for name, pool in zip(kernel.tensors, plan.configs[k], strict=True):
            if name in kernel.outputs:
                written[name, k] = pool
    out: list[str] = []
    for r in plan.residencies:
        for k in range(r.first, r.last):  # r covers k and k + 1
            into = written.get((r.tensor, k))
            if into is not None and into != r.pool:
                out.append(f"{r} covers kernel {k + 1} after kernel {k} wrote it in {into}")
    for m in plan.moves:
        if m.kind is MoveKind.SYNC:
            into = written.get((m.tensor, m.kernel - 1))
            if into is not None and into != m.source:
                out.append(f"{m} copies the old value over the one written in {into}")
        elif (m.tensor, m.kernel) in written:
            out.append(f"{m} races the kernel writing it")
    landed = {(m.tensor, m.target) for m in plan.moves if m.kernel == 0}
    for tensor in graph.tensors:
        if not tensor.kind.exists_before_step or not n:
            continue
        starts = [r for r in plan.residencies if r.tensor == tensor.name and r.first == 0
                  and (r.tensor, r.pool) not in landed]
        if not tensor.kind.survives_step:
            if len({r.pool for r in starts}) > 1:
                out.append(f"input {tensor.name} begins in {[r.pool for r in starts]}")
            continue
        for start in starts:
            ends = [r for r in plan.residencies if r.tensor == tensor.name
                    and r.pool == start.pool and r.first <= n - 1 <= r.last]
            pool = written.get((tensor.name, n - 1), start.pool)
            if not ends or pool != start.pool:
                out.append(f"{tensor.name} begins in {start.pool} but does not end current there")
            elif None not in (start.offset, ends[0].offset) and start.offset != ends[0].offset:
                out.append(f"{tensor.name} ends at offset {ends[0].offset}, not {start.offset}")
    return out
