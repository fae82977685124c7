"""The report of an executed plan printed by ``run``: measured against predicted time."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from autotm_core.executor.records import ExecutionReport
from autotm_core.units import format_bandwidth, format_bytes, format_seconds


def run_facts(report: ExecutionReport, *, top: int = 10) -> dict[str, Any]:
    """The numbers the report shows, as plain data (also the ``--json`` output)."""
    order = np.argsort(-report.measured_seconds, kind="stable")[:top]
    check = report.check
    return {
        "graph": report.graph,
        "system": report.system,
        "predicted_for": report.predicted_for,
        "kernels_run": report.kernels,
        "planner": report.planner,
        "repeat": report.repeat,
        "kernels": len(report.kernel_names),
        "measured_step_seconds": report.measured_step_seconds,
        "step_seconds": report.step_seconds.tolist(),
        "predicted_step_seconds": report.predicted_step_seconds,
        "error": report.error,
        "on_cpu_step_seconds": report.on_cpu_step_seconds,
        "on_cpu_fraction": report.on_cpu_fraction,
        "on_cpu_error": report.on_cpu_error,
        "kernel_seconds": float(report.kernel_seconds.sum()),
        "sync_seconds": float(report.sync_seconds.sum()),
        "wait_seconds": float(report.wait_seconds.sum()),
        "overhead_seconds": report.overhead_seconds,
        "sync_nbytes": report.sync_nbytes,
        "sync_bytes_per_second": report.sync_bytes_per_second,
        "async_nbytes": report.async_nbytes,
        "async_copy_seconds": report.async_copy_seconds,
        "same_memory": report.same_memory,
        "notes": list(report.notes),
        "pools": [
            {"pool": p.pool, "node": p.node, "arena_nbytes": p.arena_nbytes,
             "policy_nodes": list(p.policy_nodes), "sampled_pages": p.sampled_pages,
             "pages_on_node": p.pages_on_node}
            for p in report.pools
        ],
        "checksum": f"{report.checksum:016x}",
        "check": None if check is None else {
            "reference": check.reference, "matches": check.matches,
            "first_kernel": check.first_kernel, "step": check.step,
            "tensors": list(check.tensors), "detail": check.detail,
        },
        "top_kernels": [
            {"index": int(k), "name": report.kernel_names[k],
             "measured_seconds": float(report.measured_seconds[k]),
             "kernel_seconds": float(report.kernel_seconds[k]),
             "sync_seconds": float(report.sync_seconds[k]),
             "wait_seconds": float(report.wait_seconds[k]),
             "predicted_seconds": float(report.predicted_seconds[k]),
             "error": float(report.kernel_errors[k])}
            for k in order
        ],
    }


def _percent(value: float) -> str:
    return f"{value:+.1%}"


def render_run(facts: dict[str, Any]) -> RenderableType:
    """Tables for ``facts`` (from :func:`run_facts`)."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("plan", escape(f"{facts['planner'] or '(unnamed)'} for {facts['graph']} "
                                f"({facts['kernels']:,} kernels) on {facts['system']}"))
    head.add_row("measured", f"{format_seconds(facts['measured_step_seconds'])} per step "
                 f"(median of {facts['repeat']}), {escape(facts['kernels_run'])} kernels on "
                 "this machine")
    head.add_row("predicted", escape(f"{format_seconds(facts['predicted_step_seconds'])} per "
                                     f"step on {facts['predicted_for']}, error "
                                     f"{_percent(facts['error'])}"))
    head.add_row("on CPU", f"{format_seconds(facts['on_cpu_step_seconds'])} per step "
                 f"({facts['on_cpu_fraction']:.0%} of the wall time; below 100% when other "
                 f"processes ran), error {_percent(facts['on_cpu_error'])}")
    head.add_row("time in", f"kernels {format_seconds(facts['kernel_seconds'])}, sync copies "
                 f"{format_seconds(facts['sync_seconds'])}, waiting for async copies "
                 f"{format_seconds(facts['wait_seconds'])}, executor "
                 f"{format_seconds(max(0.0, facts['overhead_seconds']))}")
    if facts["sync_nbytes"]:
        head.add_row("sync copies", f"{format_bytes(facts['sync_nbytes'])} at "
                     f"{format_bandwidth(facts['sync_bytes_per_second'])}")
    if facts["async_nbytes"]:
        head.add_row("async copies", f"{format_bytes(facts['async_nbytes'])} in "
                     f"{format_seconds(facts['async_copy_seconds'])} on the copy thread")
    check = facts["check"]
    detail = f"; {check['detail']}" if check and check["detail"] else ""
    if check is None:
        head.add_row("results", f"checksum {facts['checksum']} (not compared)")
    elif check["matches"]:
        head.add_row("results", Text(f"checksum {facts['checksum']}: equal to "
                                     f"{check['reference']}{detail}", style="green"))
    else:
        where = (f"first at kernel {check['first_kernel']} of step {check['step']}"
                 if check["first_kernel"] >= 0 else "in the step's results")
        head.add_row("results", Text(f"DIFFERENT from {check['reference']} ({where}; "
                                     f"{', '.join(check['tensors']) or 'no tensor'}){detail}",
                                     style="bold red"))

    pools = Table(title="arenas", title_justify="left")
    for column in ("pool", "node", "arena", "policy", "pages on node"):
        pools.add_column(column, justify="right" if column != "pool" else "left")
    for p in facts["pools"]:
        ok = p["pages_on_node"] == p["sampled_pages"] and p["policy_nodes"] == [p["node"]]
        pools.add_row(escape(p["pool"]), str(p["node"]), format_bytes(p["arena_nbytes"]),
                      f"bind {p['policy_nodes']}",
                      Text(f"{p['pages_on_node']}/{p['sampled_pages']}",
                           style="green" if ok else "bold red"))

    kernels = Table(title="slowest kernels (measured)", title_justify="left")
    for column in ("#", "kernel", "measured", "of which copies", "predicted", "error"):
        kernels.add_column(column, justify="left" if column == "kernel" else "right")
    for k in facts["top_kernels"]:
        copies = k["sync_seconds"] + k["wait_seconds"]
        kernels.add_row(str(k["index"]), escape(k["name"]), format_seconds(k["measured_seconds"]),
                        format_seconds(copies) if copies else "",
                        format_seconds(k["predicted_seconds"]), _percent(k["error"]))
    parts: list[RenderableType] = [head, pools]
    for note in facts["notes"]:
        style = "bold yellow" if "same memory" in note else "dim"
        parts.append(Text(f"note: {note}", style=style))
    parts.append(kernels)
    return Group(*parts)
