"""Spec rule 3's offset clause, checked locally while the plan verifier is being taught it.

A tensor that exists before the step and survives it, held in a pool from kernel 0
and at the last kernel, must be at the same offset in both residencies: the next
step finds it where this one leaves it.
"""

from __future__ import annotations

from autotm_core.ir import Graph
from autotm_core.plans import Plan


def _persistent(graph: Graph) -> set[str]:
    return {t.name for t in graph.tensors if t.kind.exists_before_step and t.kind.survives_step}


def wrap_offset_problems(plan: Plan, graph: Graph) -> list[str]:
    """One message per persistent tensor and pool whose start and end offsets differ."""
    n = len(graph.kernels)
    persistent = _persistent(graph)
    begins = {(r.tensor, r.pool): r for r in plan.residencies
              if r.tensor in persistent and r.first == 0}
    out = []
    for r in plan.residencies:
        start = begins.get((r.tensor, r.pool))
        if start is None or r.last != n - 1 or None in (start.offset, r.offset):
            continue
        if start.offset != r.offset:
            out.append(f"{r.tensor!r} in {r.pool!r}: offset {start.offset} at kernel 0, "
                       f"{r.offset} at kernel {n - 1}")
    return out


def wrap_pairs(plan: Plan, graph: Graph) -> int:
    """How many (persistent tensor, pool) begin and end the step in two distinct residencies."""
    n = len(graph.kernels)
    persistent = _persistent(graph)
    begins = {(r.tensor, r.pool) for r in plan.residencies
              if r.tensor in persistent and r.first == 0 and r.last < n - 1}
    return sum(1 for r in plan.residencies
               if (r.tensor, r.pool) in begins and r.first > 0 and r.last == n - 1)
