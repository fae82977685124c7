"""All in the fastest pool: the ideal every result is compared with, when it fits."""

from __future__ import annotations

import numpy as np

from autotm_core.baselines.common import Setting, setting
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, Residency, make_plan
from autotm_core.units import format_bytes

PLANNER = "baseline/all-fast"


def all_fast(
    graph: Graph, system: MemorySystem, *, fast_capacity_nbytes: int | None = None
) -> Plan:
    """Every tensor in the fastest pool it may live in, for its whole life; no moves.

    Raises :class:`CapacityError` saying by how much, and at which kernel, the
    fast pool overflows when the program's peak does not fit.
    """
    s = setting(graph, system, fast_capacity_nbytes)
    _check_fits(s)
    live = graph.liveness
    residencies = [
        Residency(t.name, s.fastest_pool(i), int(live.first[i]), int(live.last[i]))
        for i, t in enumerate(graph.tensors)
        if s.exists[i]
    ]
    return make_plan(
        graph, s.system, residencies=residencies, planner=PLANNER,
        attributes={"fast_peak_nbytes": int(_fast_live_nbytes(s).max(initial=0))},
        capacities=s.capacities(),
    )


def _fast_live_nbytes(s: Setting) -> np.ndarray:
    """Bytes in the fast pool at each kernel when every tensor that may be there is."""
    live = s.graph.liveness
    n = live.n_kernels
    keep = s.exists & s.may_be_fast
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, live.first[keep], live.nbytes[keep])
    np.add.at(delta, live.last[keep] + 1, -live.nbytes[keep])
    return np.cumsum(delta[:n]) + live.workspace_nbytes


def _check_fits(s: Setting) -> None:
    if s.capacity_nbytes is None or not s.graph.kernels:
        return
    used = _fast_live_nbytes(s)
    k = int(used.argmax())
    peak = int(used[k])
    if peak > s.capacity_nbytes:
        raise CapacityError(
            f"all-fast does not fit: pool {s.fast!r} needs {format_bytes(peak)} at kernel "
            f"{s.graph.kernels[k].name!r} (#{k}) but holds {format_bytes(s.capacity_nbytes)}: "
            f"{format_bytes(peak - s.capacity_nbytes)} ({peak - s.capacity_nbytes} bytes) too much",
            hint=f"give the fast pool at least {peak} bytes, or use a planner that moves tensors",
        )
