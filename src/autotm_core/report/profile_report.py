"""The reports of ``profile`` (what was measured, cache hits) and ``calibrate`` (per node)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from autotm_core.calibration.records import Calibration
from autotm_core.memory import MemorySystem
from autotm_core.profiler.records import ProfileResult
from autotm_core.units import format_bandwidth, format_bytes, format_seconds


def profile_facts(result: ProfileResult, *, graph: str, system: MemorySystem, output: str,
                  repeat: int) -> dict[str, Any]:
    """The numbers the profile report shows, as plain data (also the ``--json`` output)."""
    return {
        "graph": graph,
        "system": system.name,
        "output": output,
        "repeat": repeat,
        "kernels": result.kernels,
        "distinct_kernels": result.distinct_kernels,
        "configurations": result.configurations,
        "restricted_kernels": list(result.restricted_kernels),
        "placements": result.placements,
        "cache_hits": result.cache_hits,
        "measured": result.measured,
        "measured_seconds": result.measured_seconds,
        "total_seconds": result.total_seconds,
        "pool_nodes": {pool.name: node for pool, node in zip(system.pools, result.nodes,
                                                             strict=True)},
        "notes": list(result.notes),
        "slowest": [{"kernel": name, "median_seconds": median, "iqr_seconds": iqr}
                    for name, median, iqr in result.slowest],
    }


def render_profile(facts: dict[str, Any]) -> RenderableType:
    """The profile report: counts, time, pools and nodes, the slowest kernels."""
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    rows = [
        ("graph", f"{facts['graph']} on {facts['system']}"),
        ("kernels", f"{facts['kernels']} ({facts['distinct_kernels']} distinct signatures)"),
        ("configurations", f"{facts['configurations']} in the cost table"),
        ("measurements", f"{facts['placements']} distinct (signature, NUMA placement): "
                         f"{facts['cache_hits']} from the cache, {facts['measured']} measured "
                         f"({facts['repeat']} timed runs each, median kept)"),
        ("time", f"{format_seconds(facts['total_seconds'])} in all, "
                 f"{format_seconds(facts['measured_seconds'])} measuring"),
        ("pools", ", ".join(f"{p} on node {n}" for p, n in facts["pool_nodes"].items())),
        ("written", facts["output"]),
    ]
    for key, value in rows:
        summary.add_row(key, escape(str(value)))
    parts: list[RenderableType] = [Text("kernel profile", style="bold underline"), summary]
    if facts["slowest"]:
        table = Table(title="slowest kernels (all tensors in the fastest pool)",
                      title_justify="left")
        table.add_column("kernel")
        table.add_column("median", justify="right")
        table.add_column("IQR", justify="right")
        for row in facts["slowest"]:
            table.add_row(escape(row["kernel"]), format_seconds(row["median_seconds"]),
                          format_seconds(row["iqr_seconds"]))
        parts.append(table)
    parts.extend(Text(f"note: {note}", style="yellow") for note in facts["notes"])
    return Group(*parts)


def calibration_facts(calibration: Calibration, system: MemorySystem, *, output: str
                      ) -> dict[str, Any]:
    """The numbers the calibration report shows (also the ``--json`` output)."""
    return {
        "output": output,
        "system": system.name,
        "description": system.description,
        "cpu": calibration.cpu,
        "buffer_nbytes": calibration.buffer_nbytes,
        "last_level_cache_nbytes": calibration.last_level_cache_nbytes,
        "repeat": calibration.repeat,
        "flops_per_second": calibration.flops_per_second,
        "kernels": calibration.kernels,
        "method": calibration.method,
        "kernel_overhead_seconds": calibration.kernel_overhead_seconds,
        "overhead_kernels": calibration.overhead_kernels,
        "seconds": calibration.seconds,
        "nodes": [
            {"node": f.node, "memory_nbytes": f.memory_nbytes,
             "read_bytes_per_second": f.read_bytes_per_second,
             "write_bytes_per_second": f.write_bytes_per_second,
             "latency_seconds": f.latency_seconds}
            for f in calibration.nodes
        ],
        "copies": [
            {"from": lk.source, "to": lk.target, "sync_bytes_per_second": lk.sync_bytes_per_second,
             "async_bytes_per_second": lk.async_bytes_per_second}
            for lk in calibration.links
        ],
        "pools": [{"pool": p.name, "node": p.numa_node, "capacity_nbytes": p.capacity_nbytes}
                  for p in system.pools],
    }


def render_calibration(facts: dict[str, Any]) -> RenderableType:
    """The calibration report: one table row per node, one per copy direction, the pools."""
    parts: list[RenderableType] = [Text("calibration", style="bold underline")]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    cache = facts["last_level_cache_nbytes"]
    head.add_row("machine", escape(facts["cpu"]))
    head.add_row("buffers", f"{format_bytes(facts['buffer_nbytes'])} each"
                 + (f" (last-level cache {format_bytes(cache)})" if cache else "")
                 + f", median of {facts['repeat']} runs")
    head.add_row("kernels", escape(facts["kernels"]) + (
        " (the replay kernels: one thread)" if facts["kernels"] == "replay"
        else f" (their own compute, reads and writes: {escape(facts['method'])})"))
    head.add_row("compute", f"{facts['flops_per_second'] / 1e9:.2f} GFLOP/s")
    if facts["overhead_kernels"]:
        head.add_row("per kernel", f"{format_seconds(facts['kernel_overhead_seconds'])} fixed "
                     f"(a step of {facts['overhead_kernels']} small kernels run as 'run' runs "
                     "a plan, beyond the roofline)")
    head.add_row("took", format_seconds(facts["seconds"]))
    parts.append(head)
    who = "one thread" if facts["kernels"] == "replay" else f"{facts['kernels']} kernels"
    nodes = Table(title=f"memory per NUMA node ({escape(who)})", title_justify="left")
    for column in ("node", "memory", "read", "write", "latency"):
        nodes.add_column(column, justify="left" if column == "node" else "right")
    for f in facts["nodes"]:
        nodes.add_row(str(f["node"]),
                      "?" if f["memory_nbytes"] is None else format_bytes(f["memory_nbytes"]),
                      format_bandwidth(f["read_bytes_per_second"]),
                      format_bandwidth(f["write_bytes_per_second"]),
                      format_seconds(f["latency_seconds"]))
    parts.append(nodes)
    copies = Table(title="copies", title_justify="left")
    for column in ("from", "to", "synchronous", "asynchronous"):
        copies.add_column(column, justify="right")
    for c in facts["copies"]:
        copies.add_row(f"node {c['from']}", f"node {c['to']}",
                       format_bandwidth(c["sync_bytes_per_second"]),
                       format_bandwidth(c["async_bytes_per_second"]))
    parts.append(copies)
    pools = ", ".join(
        f"{p['pool']} (node {p['node']}, "
        f"{'unbounded' if p['capacity_nbytes'] is None else format_bytes(p['capacity_nbytes'])})"
        for p in facts["pools"])
    parts.append(Text(f"wrote {facts['output']}: memory system {facts['system']!r} with pools "
                      f"{pools}"))
    if len(facts["nodes"]) == 1:
        parts.append(Text(f"note: {facts['description']}", style="yellow"))
    return Group(*parts)
