"""All in the slowest pool: the floor every result is compared with."""

from __future__ import annotations

from autotm_core.baselines.common import check_static_fits, setting, static_plan
from autotm_core.costs.model import KernelCosts
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan

PLANNER = "baseline/all-slow"


def all_slow(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """Every tensor in the slowest pool it may live in, for its whole life; no moves.

    Kernel workspace still lives in the fastest pool (it is not a tensor the
    plan places), and so do tensors that may live nowhere else. Raises
    :class:`CapacityError` naming the first bounded pool that overflows, the kernel
    and the shortfall, and :class:`PlanError` naming the first kernel whose cost
    table (``costs``, when it is a partial table) lacks that configuration.
    """
    s = setting(graph, system, fast_capacity_nbytes, costs)
    pools = s.slowest()
    check_static_fits(s, pools, what="all-slow",
                      hint="allow those tensors in another pool, or use a planner that "
                      "places tensors in several pools")
    return static_plan(s, pools, planner=PLANNER)
