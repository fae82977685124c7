"""The report of a simulated plan printed by ``simulate``: time, traffic, memory over time."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from autotm_core.report.charts import CHART_MARGIN, memory_chart
from autotm_core.report.tables import words_table
from autotm_core.simulation import Simulation
from autotm_core.units import format_bytes, format_seconds

_KINDS = ("sync", "async")


def simulation_facts(
    sim: Simulation, *, all_fast_seconds: float | None = None, top: int = 10, reruns: int = 0
) -> dict[str, Any]:
    """The numbers the report shows, as plain data (also the ``--json`` output); ``reruns``
    is the number of kernels the plan runs again (its ``Plan.reruns``)."""
    names = sim.pool_names
    moves = []
    for s, t, kind in zip(*np.nonzero(sim.pair_counts), strict=True):
        moves.append({
            "source": names[s], "target": names[t], "kind": _KINDS[kind],
            "count": int(sim.pair_counts[s, t, kind]), "nbytes": int(sim.pair_nbytes[s, t, kind]),
        })
    order = np.argsort(-(sim.effective_seconds + sim.sync_seconds), kind="stable")[:top]
    return {
        "graph": sim.graph,
        "system": sim.system,
        "planner": sim.planner,
        "kernels": sim.n_kernels,
        "step_seconds": sim.step_seconds,
        "kernel_seconds": float(sim.kernel_seconds.sum()),
        "effective_seconds": float(sim.effective_seconds.sum()),
        "sync_seconds": float(sim.sync_seconds.sum()),
        "async_seconds": float(sim.async_seconds.sum()),
        "reruns": reruns,
        "rerun_seconds": float(sim.rerun_seconds.sum()),
        "all_fast_seconds": all_fast_seconds,
        "slowdown": sim.step_seconds / all_fast_seconds if all_fast_seconds else None,
        "moves": moves,
        "pools": [
            {"name": name, "capacity_nbytes": sim.capacities[p],
             "peak_nbytes": int(sim.peak_nbytes[p]), "peak_kernel": int(sim.peak_kernels[p])}
            for p, name in enumerate(names)
        ],
        "top_kernels": [
            {"index": int(k), "name": sim.kernel_names[k],
             "kernel_seconds": float(sim.kernel_seconds[k]),
             "sync_seconds": float(sim.sync_seconds[k]),
             "async_seconds": float(sim.async_seconds[k]),
             "effective_seconds": float(sim.effective_seconds[k])}
            for k in order
        ],
    }


def render_simulation(sim: Simulation, facts: dict[str, Any], *, width: int = 72) -> RenderableType:
    """Tables and one memory-over-time chart per pool for ``facts`` of ``sim``."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    planner = facts["planner"] or "(unnamed)"
    head.add_row("plan", f"{planner} for {facts['graph']} on {facts['system']}")
    head.add_row("kernels", f"{facts['kernels']:,}")
    head.add_row("predicted step", format_seconds(facts["step_seconds"]))
    head.add_row("  kernels", f"{format_seconds(facts['effective_seconds'])} (compute and memory "
                 f"{format_seconds(facts['kernel_seconds'])}, async moves "
                 f"{format_seconds(facts['async_seconds'])} overlapping)")
    head.add_row("  sync moves", format_seconds(facts["sync_seconds"]))
    if facts["reruns"] or facts["rerun_seconds"]:
        head.add_row("  reruns", f"{format_seconds(facts['rerun_seconds'])} ({facts['reruns']:,} "
                     "kernels run again to recompute what the plan drops)")
    if facts["all_fast_seconds"]:
        head.add_row("all in fastest pool", format_seconds(facts["all_fast_seconds"]))
        head.add_row("slowdown", f"{facts['slowdown']:.3f}x")

    moves = Table(title="moves", title_justify="left")
    for column in ("from", "to", "kind", "count", "bytes"):
        moves.add_column(column, justify="right" if column in ("count", "bytes") else "left")
    for m in facts["moves"]:
        moves.add_row(m["source"], m["target"], m["kind"], f"{m['count']:,}",
                      format_bytes(m["nbytes"]))
    if not facts["moves"]:
        moves.add_row("none", "", "", "0", "0 B")

    pools = Table(title="memory per pool", title_justify="left")
    for column in ("pool", "peak", "at kernel", "capacity", "use"):
        pools.add_column(column, justify="left" if column == "pool" else "right")
    for p in facts["pools"]:
        capacity = p["capacity_nbytes"]
        use = f"{p['peak_nbytes'] / capacity:.1%}" if capacity else "-"
        at = sim.kernel_names[p["peak_kernel"]] if p["peak_kernel"] >= 0 else "-"
        pools.add_row(p["name"], format_bytes(p["peak_nbytes"]), f"#{p['peak_kernel']} {at}",
                      "unbounded" if capacity is None else format_bytes(capacity), use)

    charts = [_chart(sim, p, width) for p in range(len(sim.pool_names))]

    rows = [[str(k["index"]), escape(k["name"]), format_seconds(k["kernel_seconds"]),
             format_seconds(k["async_seconds"]), format_seconds(k["sync_seconds"]),
             format_seconds(k["effective_seconds"] + k["sync_seconds"])]
            for k in facts["top_kernels"]]
    # as wide as the console the charts were sized for (``width`` leaves room for labels)
    kernels = words_table("kernels taking the most time",
                          ("#", "kernel", "run", "async moves", "sync moves before", "counted"),
                          rows, width=width + CHART_MARGIN, left=("kernel",))
    return Group(head, "", moves, "", pools, "", *charts, kernels)


def _chart(sim: Simulation, p: int, width: int) -> RenderableType:
    """Bytes in pool ``p`` over kernels; the capacity line unless it would flatten the chart."""
    capacity, peak = sim.capacities[p], int(sim.peak_nbytes[p])
    title = f"bytes in {sim.pool_names[p]} over kernels"
    if capacity is not None and capacity > 4 * max(peak, 1):
        title += f" (capacity {format_bytes(capacity)}, far above)"
        capacity = None
    return memory_chart(sim.pool_nbytes[p], width=width, capacity=capacity, title=title)
