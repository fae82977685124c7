"""Terminal reports of a sweep and of a comparison: tables with the knee and the best marked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape

from autotm_core.planning.breakdown import KindBreakdown
from autotm_core.report.kinds_report import render_kinds_by_planner
from autotm_core.report.tables import words_table
from autotm_core.sweep.point import PointResult
from autotm_core.sweep.price import PriceModel
from autotm_core.sweep.results import SweepResults
from autotm_core.units import format_bytes, format_seconds

_SHORT = {"gap_reached": "gap", "time_limit": "time limit"}


def _slowdown(r: PointResult) -> str:
    return "-" if r.slowdown is None else f"{r.slowdown:.3f}x"


def _gap(r: PointResult) -> str:
    return "-" if r.gap is None else f"{r.gap:.2%}"


def _limit(text: str) -> str:
    """A limit as a table shows it: per-pool parts may wrap after their commas."""
    return escape(text.replace(",", ", "))


def render_sweep(results: SweepResults, *, price: PriceModel, budget: float | None = None,
                 width: int = 80) -> RenderableType:
    """A table of every point, one per graph (knee starred, best in budget in green), and the
    verdict; it fits 80 columns."""
    knees = results.knee_keys()
    best = None if budget is None else price.cheapest_within(results.points, budget)
    graphs = list(dict.fromkeys(r.point.graph for r in results.points))
    columns = ["planner", "limit", "fast mem", "slowdown", "moved", "cost", "plan time", "gap",
               "status"]
    tables: list[RenderableType] = []
    for graph in graphs:
        points = [r for r in results.points if r.point.graph == graph]
        rows = [[escape(r.point.planner), _limit(r.point.limit),
                 format_bytes(r.fast_capacity_nbytes),
                 _slowdown(r) + (" ★" if r.point.key in knees else ""),
                 format_bytes(r.moved_nbytes), f"{price.cost_of(r):.1%}",
                 f"{r.plan_seconds:.2f} s", _gap(r),
                 r.status if r.status == "ok" else f"[yellow]{escape(r.status)}[/]"]
                for r in points]
        if all(r.status == "ok" for r in points):  # a column of "ok" says nothing
            columns_here = columns[:-1]
            rows = [row[:-1] for row in rows]
        else:
            columns_here = columns
        styles = ["bold green" if best is not None and r is best else "" for r in points]
        title = f"sweep: slowdown against fast-memory size ({graph} on {points[0].point.system})"
        tables.append(words_table(title, columns_here, rows, width=width,
                                  left=("planner", "status"), styles=styles))
    table = Group(*tables)
    lines: list[RenderableType] = [table]
    if knees:
        lines.append("★ knee of the planner's curve: below it each byte of fast memory given up "
                     "costs much more speed than above it")
    lines.append(f"cost: of the memory, relative to all in fast memory (fast/slow price per "
                 f"byte {price.fast_per_slow:g})")
    if budget is not None:
        if best is None:
            lines.append(f"[yellow]no point is within a {budget:.3g}x slowdown budget[/]")
        else:
            lines.append(
                f"[bold green]cheapest within a {budget:.3g}x slowdown budget:[/] "
                f"{escape(best.point.planner)} at {escape(best.point.limit)} "
                f"({format_bytes(best.fast_capacity_nbytes)} fast memory, slowdown "
                f"{best.slowdown:.3f}x, memory cost {price.cost_of(best):.1%})")
    for r in results.points:
        if r.status != "ok":
            lines.append(f"[yellow]no plan[/] for {escape(r.point.planner)} at "
                         f"{escape(r.point.limit)}: {escape(r.message)}")
    if results.interrupted:
        lines.append(f"[bold red]interrupted:[/] {len(results.points)} of {results.n_planned} "
                     "points finished and kept")
    return Group(*lines)


def render_compare(results: Sequence[PointResult],
                   breakdowns: Sequence[KindBreakdown | None] = (), *,
                   width: int = 80) -> RenderableType:
    """Planners and solvers side by side on one graph and limit; the fastest plan in green;
    then each planner's breakdown by tensor kind (``breakdowns``, one per result)."""
    ok = [r for r in results if r.step_seconds is not None]
    fastest = min(ok, key=lambda r: r.step_seconds or 0.0) if ok else None
    first = results[0] if results else None
    title = "compare"
    if first is not None:
        title += (f": {first.point.graph} on {first.point.system}, fast memory "
                  f"{format_bytes(first.fast_capacity_nbytes)} ({first.point.limit})")
    solvers = sorted({r.point.solver for r in results if r.termination != ""})
    if len(solvers) == 1:  # one solver: named once in the title, not in a column
        title += f", ILP solver {solvers[0]}"
    columns = ["planner", "solver", "step", "slowdown", "moved", "moves", "plan time", "gap",
               "status"]
    rows = [[escape(r.point.planner), escape(r.point.solver) if r.termination != "" else "-",
             "-" if r.step_seconds is None else format_seconds(r.step_seconds),
             _slowdown(r), format_bytes(r.moved_nbytes), f"{r.n_moves:,}",
             f"{r.plan_seconds:.2f} s", _gap(r),
             _SHORT.get(r.termination, r.termination or r.status) if r.status == "ok"
             else f"[yellow]{escape(r.status)}[/]"] for r in results]
    recomputing = [r for r in results if r.n_reruns]
    if recomputing:  # how many kernels run again (their time: a line under the table)
        at = columns.index("plan time")
        columns.insert(at, "reruns")
        for row, r in zip(rows, results, strict=True):
            row.insert(at, f"{r.n_reruns:,}")
    if len(solvers) <= 1:
        del columns[1]
        for row in rows:
            del row[1]
    table = words_table(title, columns, rows, width=width, left=("planner", "solver", "status"),
                        styles=["bold green" if r is fastest else "" for r in results])
    lines: list[RenderableType] = [table]
    if recomputing:
        lines.append("reruns (kernels run again to recompute what the plan drops, in its step): "
                     + "; ".join(f"{escape(r.point.planner)} {r.n_reruns:,} taking "
                                 f"{format_seconds(r.rerun_seconds)}" for r in recomputing))
    for r in results:
        if r.status != "ok":
            lines.append(f"[yellow]no plan[/] for {escape(r.point.planner)}: {escape(r.message)}")
    if any(b is not None for b in breakdowns):
        names = [r.point.planner if r.termination == "" or len(solvers) <= 1
                 else f"{r.point.planner} ({r.point.solver})" for r in results]
        lines += ["", render_kinds_by_planner(names, breakdowns, width=width)]
    return Group(*lines)


def compare_facts(results: Sequence[PointResult],
                  breakdowns: Sequence[KindBreakdown | None] = ()) -> list[dict[str, Any]]:
    """The comparison as JSON values (each plan's breakdown by kind as ``by_kind``)."""
    facts = [r.to_json() for r in results]
    for fact, breakdown in zip(facts, breakdowns, strict=False):
        fact["by_kind"] = None if breakdown is None else breakdown.to_json()
    return facts
