"""All in the fastest pool: the ideal every result is compared with, when it fits."""

from __future__ import annotations

from autotm_core.baselines.common import check_static_fits, pool_live_nbytes, setting, static_plan
from autotm_core.costs.model import KernelCosts
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan

PLANNER = "baseline/all-fast"


def all_fast(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """Every tensor in the fastest pool it may live in, for its whole life; no moves.

    Raises :class:`CapacityError` saying which pool overflows, at which kernel and
    by how much, when the program does not fit, and :class:`PlanError` naming the
    first kernel whose cost table (``costs``, when it is a partial table) lacks
    that configuration: all-fast does not exist there.
    """
    s = setting(graph, system, fast_capacity_nbytes, costs)
    pools = s.fastest()
    check_static_fits(s, pools, what="all-fast", hint="use a planner that moves tensors")
    peak = int(pool_live_nbytes(s, pools, 0).max(initial=0))
    return static_plan(s, pools, planner=PLANNER, attributes={"fast_peak_nbytes": peak})
