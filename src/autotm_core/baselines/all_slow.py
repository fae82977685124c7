"""All in the slowest pool: the floor every result is compared with."""

from __future__ import annotations

from autotm_core.baselines.common import check_fast_fits, setting
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, Residency, make_plan

PLANNER = "baseline/all-slow"


def all_slow(
    graph: Graph, system: MemorySystem, *, fast_capacity_nbytes: int | None = None
) -> Plan:
    """Every tensor in the slowest pool it may live in, for its whole life; no moves.

    Kernel workspace still lives in the fastest pool (it is not a tensor the
    plan places), and so do tensors that may live nowhere else: the fast pool
    must hold them, :class:`CapacityError` otherwise.
    """
    s = setting(graph, system, fast_capacity_nbytes)
    check_fast_fits(s, s.exists & s.fast_only, what="all-slow",
                    hint="allow those tensors in a slower pool")
    live = graph.liveness
    residencies = [
        Residency(t.name, s.slowest_pool(i), int(live.first[i]), int(live.last[i]))
        for i, t in enumerate(graph.tensors)
        if s.exists[i]
    ]
    return make_plan(graph, s.system, residencies=residencies, planner=PLANNER,
                     capacities=s.capacities())
