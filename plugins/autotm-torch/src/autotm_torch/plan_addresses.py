"""Addresses for a plan made without them, growing a pool when fragmentation needs it.

Planners decide capacity in aggregate; executing a plan needs an offset for every
residency of every bounded pool (:func:`autotm_core.addresses.assign_offsets`).
When the packing overflows, AutoTM shrank the limit and planned again; here the
pool grows instead, to the packing's height, and the plan says by how much.
"""

from __future__ import annotations

import attrs

from autotm_core.errors import ExecutionError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan


def fit_addresses(
    plan: Plan, graph: Graph, system: MemorySystem, *, alignment_nbytes: int = 64
) -> tuple[Plan, MemorySystem]:
    """``plan`` with an offset for every residency of its bounded pools, and its system.

    When the packing overflows a pool (fragmentation: the plan was made for the
    pool's capacity in aggregate), that pool's capacity grows, in the plan and
    in the returned system, to the packing's height; the growth is kept in the
    plan's ``attributes["fit_addresses"]``.
    """
    from autotm_core.addresses import assign_offsets

    result = assign_offsets(plan, graph, system, alignment_nbytes=alignment_nbytes)
    if result.fits:
        return result.plan, system
    grown = {p.pool: p.height_nbytes for p in result.pools
             if p.pool in {o.pool for o in result.overflows}}
    for pool, nbytes in grown.items():
        system = system.with_capacity(pool, nbytes)
    wider = attrs.evolve(plan, capacities={**plan.capacities, **grown},
                         attributes={**plan.attributes, "fit_addresses": {
                             pool: {"planned_nbytes": plan.capacities[pool], "packed_nbytes": n}
                             for pool, n in grown.items()}})
    result = assign_offsets(wider, graph, system, alignment_nbytes=alignment_nbytes)
    if not result.fits:
        raise ExecutionError(
            f"plan {plan.planner!r}: its residencies do not pack into pools "
            f"{', '.join(o.pool for o in result.overflows)} even at the packing's height",
            hint="give the plan addresses with autotm_core.addresses.assign_offsets",
        )
    return result.plan, system
