"""Self-contained HTML reports of a plan or a sweep: inline SVG figures and tables.

The page references nothing outside itself (no scripts, fonts, style sheets or
images to fetch), so it can be mailed, archived or opened offline.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autotm_core.planning.breakdown import KindBreakdown
from autotm_core.plans.model import Plan
from autotm_core.report.figures import (
    figure_svg,
    kernel_time_figure,
    memory_figure,
    tradeoff_figure,
)
from autotm_core.report.kinds_report import KINDS_NOTE, kinds_caption, kinds_rows
from autotm_core.simulation import Simulation
from autotm_core.sweep.price import PriceModel
from autotm_core.sweep.results import SweepResults
from autotm_core.units import format_bytes, format_seconds

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; white-space: nowrap; }
th { background: #f0f0f0; } td.l, th.l { text-align: left; }
td.l { white-space: normal; }
.wide { overflow-x: auto; max-width: 100%; }
tr.knee td { background: #fff3c4; font-weight: bold; }
tr.best td { background: #d9f2d9; }
.swatch { padding: 0 0.4em; }
.swatch.knee { background: #fff3c4; font-weight: bold; }
.swatch.best { background: #d9f2d9; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.note { color: #555; }
"""


def plan_html(plan: Plan, sim: Simulation, facts: dict[str, Any], *, title: str = "",
              comparisons: Sequence[Any] = (), breakdown: KindBreakdown | None = None) -> str:
    """The report of one simulated plan (``facts`` from ``simulation_facts``): what it is,
    how good it is (the solver's bound and gap where the plan records them, and every
    baseline of ``comparisons`` at the same limits), where each tensor kind went
    (``breakdown``) and where its time goes."""
    heading = title or f"{sim.planner or 'plan'} for {sim.graph} on {sim.system}"
    limits = ", ".join(f"{pool} {format_bytes(n)}" for pool, n in plan.capacities.items()
                       if n is not None)
    summary = [
        ("limits", limits or "none: every pool unbounded"),
        ("kernels", f"{sim.n_kernels:,}"),
        ("predicted step", format_seconds(facts["step_seconds"])),
        ("sync moves", format_seconds(facts["sync_seconds"])),
        ("async moves (overlapping)", format_seconds(facts["async_seconds"])),
    ]
    if facts.get("slowdown"):
        summary.append(("slowdown vs all in fastest pool", f"{facts['slowdown']:.3f}x"))
    summary += _solver_facts(plan)
    pools = [[p["name"], format_bytes(p["peak_nbytes"]),
              "unbounded" if p["capacity_nbytes"] is None else format_bytes(p["capacity_nbytes"])]
             for p in facts["pools"]]
    moves = [[m["source"], m["target"], m["kind"], f"{m['count']:,}", format_bytes(m["nbytes"])]
             for m in facts["moves"]]
    kernels = [[str(k["index"]), k["name"], format_seconds(k["kernel_seconds"]),
                format_seconds(k["sync_seconds"]), format_seconds(k["async_seconds"])]
               for k in facts["top_kernels"]]
    body = [
        f"<h1>{_e(heading)}</h1>",
        _pairs(summary),
        *_against_baselines(facts["step_seconds"], comparisons),
        *_by_kind(breakdown),
        "<h2>Memory over time</h2>",
        _figure(figure_svg(memory_figure(sim, plan)),
                "Bytes in each pool at each kernel; dashed: capacity. Under each curve, a row of "
                "▲ for the kernels where tensors move into the pool and a row of ▼ for those "
                "where they move out (an asynchronous copy at the kernel issuing it; one "
                "spanning kernels is a line over its flight, to the last kernel before the "
                "one that needs it, and holds both pools until it completes)."),
        _table(["pool", "peak", "capacity"], pools),
        "<h2>Moves</h2>",
        _table(["from", "to", "kind", "count", "bytes"], moves) if moves
        else "<p class='note'>The plan moves nothing.</p>",
        "<h2>Time per kernel</h2>",
        _figure(figure_svg(kernel_time_figure(sim)),
                "Each kernel's run time, async moves it does not hide, and sync moves before it."),
        _table(["#", "kernel", "run", "sync moves before", "async moves issued"], kernels),
    ]
    return _page(heading, body)


def _by_kind(breakdown: KindBreakdown | None) -> list[str]:
    """A section with the plan's breakdown by tensor kind."""
    if breakdown is None:
        return []
    header, rows = kinds_rows(breakdown)
    return ["<h2>By tensor kind</h2>",
            f"<p class='note'>{_e(kinds_caption(breakdown))}. {_e(KINDS_NOTE)}.</p>",
            _table(header, rows, left=1)]


def _solver_facts(plan: Plan) -> list[tuple[str, str]]:
    """What the planner recorded of its solve: solver, termination, objective, bound, gap."""
    a = plan.attributes
    rows = []
    if a.get("solver"):
        termination = str(a.get("termination", "")).replace("_", " ")
        rows.append(("solver", f"{a['solver']} ({termination})"))
    for key, label in (("objective_seconds", "objective"), ("bound_seconds", "lower bound")):
        if isinstance(a.get(key), int | float):
            rows.append((label, format_seconds(float(a[key]))))
    if isinstance(a.get("gap"), int | float):
        rows.append(("gap to the bound", f"{float(a['gap']):.2%}"))
    return rows


def _against_baselines(step_seconds: float, comparisons: Sequence[Any]) -> list[str]:
    """A section with every baseline's step time at the same limits, against this plan."""
    if not comparisons:
        return []
    rows = []
    for c in comparisons:
        if c.outcome is None:
            rows.append([c.planner, "-", "-", c.reason])
            continue
        ratio = c.outcome.step_seconds / step_seconds if step_seconds > 0 else float("nan")
        slowdown = c.outcome.slowdown
        rows.append([c.planner, format_seconds(c.outcome.step_seconds),
                     "-" if slowdown is None else f"{slowdown:.3f}x",
                     f"{ratio:.3f}x this plan's time"])
    return ["<h2>Against the baselines</h2>",
            "<p class='note'>Each baseline planned at the same limits and priced by the same "
            "costs; the last column is its step time over this plan's.</p>",
            _table(["baseline", "step", "slowdown", "against this plan"], rows)]


def sweep_html(results: SweepResults, *, price: PriceModel, budget: float | None = None,
               title: str = "") -> str:
    """The report of a sweep: a trade-off figure per graph, and every point in a table."""
    heading = title or "sweep: slowdown against fast-memory size"
    knees = results.knee_keys()
    best = None if budget is None else price.cheapest_within(results.points, budget)
    body = [f"<h1>{_e(heading)}</h1>"]
    if results.interrupted:
        body.append(f"<p class='note'>Interrupted: {len(results.points)} of "
                    f"{results.n_planned} points finished.</p>")
    if best is not None:
        body.append(f"<p>Cheapest within a {budget:.3g}x slowdown budget: "
                    f"<b>{_e(best.point.planner)} at {_e(best.point.limit)}</b> "
                    f"({format_bytes(best.fast_capacity_nbytes)} "
                    f"fast memory, slowdown {best.slowdown:.3f}x, memory cost "
                    f"{price.cost_of(best):.1%} of all-fast at a fast/slow price ratio of "
                    f"{price.fast_per_slow:g}).</p>")
    elif budget is not None:
        body.append(f"<p class='note'>No point is within a {budget:.3g}x slowdown budget.</p>")
    by_graph: dict[tuple[str, str], list[Any]] = {}
    for curve in results.curves():
        by_graph.setdefault((curve.graph, curve.system), []).append(curve)
    for (graph, system), curves in by_graph.items():
        body.append(f"<h2>{_e(graph)} on {_e(system)}</h2>")
        fig = tradeoff_figure(
            {c.planner: [(r.fast_capacity_nbytes, r.slowdown or 0.0) for r in c.points]
             for c in curves},
            knees={c.planner: (c.knee.fast_capacity_nbytes, c.knee.slowdown or 0.0)
                   for c in curves if c.knee is not None},
            budget=budget, title=f"{graph} on {system}")
        caption = "Slowdown against all in fast memory, per planner"
        if any(c.knee is not None for c in curves):
            caption += ("; a star in a planner's colour marks the knee of its curve: below it, "
                        "each byte of fast memory given up costs much more speed than above it")
        body.append(_figure(figure_svg(fig), caption + "."))
    rows, classes = [], []
    for r in results.points:
        rows.append([r.point.graph, r.point.planner, r.point.limit,
                     format_bytes(r.fast_capacity_nbytes),
                     "-" if r.slowdown is None else f"{r.slowdown:.3f}x",
                     "-" if r.step_seconds is None else format_seconds(r.step_seconds),
                     format_bytes(r.moved_nbytes), f"{price.cost_of(r):.1%}",
                     f"{r.plan_seconds:.2f} s", "-" if r.gap is None else f"{r.gap:.2%}",
                     r.status + (" (knee)" if r.point.key in knees else "")])
        classes.append("best" if best is not None and r is best
                       else "knee" if r.point.key in knees else "")
    body.append("<h2>Points</h2>")
    marks = ["<span class='swatch knee'>yellow, bold</span>: a knee of its planner's curve"]
    if best is not None:
        marks.append(f"<span class='swatch best'>green</span>: the cheapest point within the "
                     f"{budget:.3g}x slowdown budget")
    body.append("<p class='note'>Highlighted rows: " + "; ".join(marks) + ".</p>")
    body.append(_table(["graph", "planner", "limit", "fast memory", "slowdown", "step",
                        "moved", "memory cost", "plan time", "gap", "status"], rows,
                       row_classes=classes, left=3))
    return _page(heading, body)


def write_html(path: str | os.PathLike[str], text: str) -> Path:
    """Write a report page."""
    from autotm_core.formats.document import atomic_output

    out = Path(path)
    with atomic_output(out) as handle:
        handle.write(text)
    return out


def _page(title: str, body: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n<p class='note'>Made by autotm-core.</p>\n</body></html>\n")


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption class='note'>{_e(caption)}</figcaption></figure>"


def _pairs(rows: Sequence[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th class='l'>{_e(k)}</th><td class='l'>{_e(v)}</td></tr>"
                               for k, v in rows) + "</table>"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *,
           row_classes: Sequence[str] = (), left: int = 2) -> str:
    """A table in a box that scrolls sideways when the window is narrower than it (nothing is
    cut); its first ``left`` columns are names, which may wrap after a comma, colon or
    slash (``hbm=4:1,dram=4:1``, ``zoo:resnet50:batch=8``); numbers never wrap."""
    def cell(i: int, text: str, tag: str) -> str:
        if i >= left:
            return f"<{tag}>{_e(text)}</{tag}>"
        breakable = _e(text)
        for mark in (",", ":", "/"):
            breakable = breakable.replace(mark, mark + "<wbr>")
        return f"<{tag} class='l'>{breakable}</{tag}>"

    head = "<tr>" + "".join(cell(i, h, "th") for i, h in enumerate(header)) + "</tr>"
    lines = []
    for j, row in enumerate(rows):
        cls = row_classes[j] if j < len(row_classes) and row_classes[j] else ""
        attr = f" class='{cls}'" if cls else ""
        lines.append(f"<tr{attr}>" + "".join(cell(i, c, "td") for i, c in enumerate(row))
                     + "</tr>")
    return "<div class='wide'><table>" + head + "".join(lines) + "</table></div>"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
