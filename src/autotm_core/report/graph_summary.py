"""The summary of a graph printed by ``info``."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from autotm_core.ir import Graph, Severity, TensorKind
from autotm_core.report.charts import memory_chart
from autotm_core.units import format_bytes


def graph_facts(graph: Graph) -> dict[str, Any]:
    """The numbers ``info`` shows, as plain data (also its ``--json`` output)."""
    live = graph.liveness
    by_kind: dict[str, dict[str, int]] = {}
    for tensor in graph.tensors:
        entry = by_kind.setdefault(tensor.kind.value, {"count": 0, "nbytes": 0})
        entry["count"] += 1
        entry["nbytes"] += tensor.nbytes
    peak_kernel = live.peak_kernel
    return {
        "name": graph.name,
        "kernels": len(graph.kernels),
        "tensors": len(graph.tensors),
        "total_nbytes": graph.total_nbytes,
        "by_kind": {k.value: by_kind[k.value] for k in TensorKind if k.value in by_kind},
        "peak_live_nbytes": live.peak_nbytes,
        "peak_kernel": graph.kernels[peak_kernel].name if peak_kernel >= 0 else None,
        "peak_kernel_index": peak_kernel,
        "flops": sum(k.flops or 0 for k in graph.kernels),
        "warnings": [str(p) for p in graph.problems if p.severity is Severity.WARNING],
    }


def render_graph_summary(graph: Graph, facts: dict[str, Any], *, width: int = 72) -> RenderableType:
    """Tables and the memory-over-time chart of ``graph``."""
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("graph", facts["name"])
    head.add_row("kernels", f"{facts['kernels']:,}")
    head.add_row("tensors", f"{facts['tensors']:,}")
    head.add_row("all tensors", format_bytes(facts["total_nbytes"]))
    head.add_row(
        "peak live",
        f"{format_bytes(facts['peak_live_nbytes'])} at kernel #{facts['peak_kernel_index']} "
        f"({facts['peak_kernel']})",
    )
    head.add_row("FLOPs", f"{facts['flops']:.3g}")

    kinds = Table(title="tensors by kind", title_justify="left")
    kinds.add_column("kind")
    kinds.add_column("count", justify="right")
    kinds.add_column("bytes", justify="right")
    kinds.add_column("share", justify="right")
    total = max(1, facts["total_nbytes"])
    for kind, entry in facts["by_kind"].items():
        kinds.add_row(kind, f"{entry['count']:,}", format_bytes(entry["nbytes"]),
                      f"{100 * entry['nbytes'] / total:.1f}%")

    chart = memory_chart(
        graph.liveness.live_nbytes, width=width, title="live bytes over the program"
    )
    parts: list[RenderableType] = [head, kinds, chart]
    for warning in facts["warnings"][:5]:
        parts.append(f"[yellow]warning:[/] {warning}")
    if len(facts["warnings"]) > 5:
        parts.append(f"[yellow]... and {len(facts['warnings']) - 5} more warnings[/]")
    return Group(*parts)
