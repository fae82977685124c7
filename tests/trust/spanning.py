"""The best plan the rules allow when asynchronous copies may span kernels, on the tiniest
steps: every plan of the one-kernel space (:func:`.exhaustive.enumerate_plans`), each of its
asynchronous copies issued at any earlier kernel too, with its target reserved from there.

Every valid spanning plan is such a variant: issue each of its copies at the kernel before
its ``until`` instead, its target reserved from there, and the plan stays valid (a shorter
flight reserves less and races fewer writes) and is a one-kernel plan. So the least
simulated time over the variants the independent checker (:mod:`.rules`) accepts is the
spanning optimum, as the simulator prices it (copy streams earliest ``until`` first).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs

from autotm_core.costs import KernelCosts
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import MoveKind, Plan
from autotm_core.simulation import simulate

from .exhaustive import enumerate_plans
from .rules import check


def spanning_variants(plan: Plan) -> Iterator[Plan]:
    """``plan`` with each asynchronous copy issued at its own kernel or any earlier one (its
    target residency beginning there; plans the rules refuse included)."""
    asynchronous = [i for i, m in enumerate(plan.moves)
                    if m.kind is MoveKind.ASYNC and m.until == m.kernel + 1]
    for issues in itertools.product(*(range(plan.moves[i].kernel + 1) for i in asynchronous)):
        moves, residencies = list(plan.moves), list(plan.residencies)
        for i, issue in zip(asynchronous, issues, strict=True):
            m = moves[i]
            if issue == m.kernel:
                continue
            target = next((j for j, r in enumerate(residencies) if r.tensor == m.tensor
                           and r.pool == m.target and r.first == m.kernel), None)
            if target is None:
                break
            residencies[target] = attrs.evolve(residencies[target], first=issue)
            moves[i] = attrs.evolve(m, kernel=issue, until=m.until)
        else:
            yield attrs.evolve(plan, moves=tuple(moves), residencies=tuple(residencies))


def spanning_optimum(graph: Graph, system: MemorySystem, costs: KernelCosts
                     ) -> tuple[float, Plan | None]:
    """The least simulated step time over every valid spanning plan, and a plan taking it."""
    best, best_plan = float("inf"), None
    for one_kernel in enumerate_plans(graph, system, costs, formulation="asynchronous"):
        for plan in spanning_variants(one_kernel):
            if check(plan, graph, system):
                continue
            seconds = simulate(plan, graph, system, costs).step_seconds
            if seconds < best:
                best, best_plan = seconds, plan
    return best, best_plan
