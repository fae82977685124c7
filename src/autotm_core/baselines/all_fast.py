"""All in the fastest pool: the ideal every result is compared with, when it fits."""

from __future__ import annotations

from autotm_core.baselines.common import check_fast_fits, fast_live_nbytes, setting
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, Residency, make_plan

PLANNER = "baseline/all-fast"


def all_fast(
    graph: Graph, system: MemorySystem, *, fast_capacity_nbytes: int | None = None
) -> Plan:
    """Every tensor in the fastest pool it may live in, for its whole life; no moves.

    Raises :class:`CapacityError` saying by how much, and at which kernel, the
    fast pool overflows when the program's peak does not fit.
    """
    s = setting(graph, system, fast_capacity_nbytes)
    keep = s.exists & s.may_be_fast
    check_fast_fits(s, keep, what="all-fast", hint="use a planner that moves tensors")
    live = graph.liveness
    residencies = [
        Residency(t.name, s.fastest_pool(i), int(live.first[i]), int(live.last[i]))
        for i, t in enumerate(graph.tensors)
        if s.exists[i]
    ]
    return make_plan(
        graph, s.system, residencies=residencies, planner=PLANNER,
        attributes={"fast_peak_nbytes": int(fast_live_nbytes(s, keep).max(initial=0))},
        capacities=s.capacities(),
    )
