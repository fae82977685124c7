"""Pictures of plans and sweeps, drawn with matplotlib (the optional ``plots`` extra).

- :func:`memory_figure`: bytes in each pool over kernels, the capacity line, moves marked;
- :func:`kernel_time_figure`: per-kernel time, split into run time, the part of async moves
  not hidden by the kernel, and sync moves before it;
- :func:`tradeoff_figure`: slowdown against fast-memory size, one line per planner, knee marked.

Each returns a matplotlib ``Figure``; :func:`save_figure` writes PNG or SVG (by suffix) and
:func:`figure_svg` gives the SVG text to inline in HTML. matplotlib is imported when a
function is called, never with this module, and its absence is one clear error.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from autotm_core.errors import ResourceError, UsageError
from autotm_core.plans.model import Plan
from autotm_core.simulation import Simulation
from autotm_core.units import format_bytes

FORMATS = ("png", "svg")
"""File types :func:`save_figure` writes."""

_INSTALL_HINT = "install the plotting extra: pip install autotm-core[plots]"


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend; a clear error when missing."""
    try:
        import matplotlib
    except ImportError:
        raise ResourceError("pictures need matplotlib, which is not installed",
                         hint=_INSTALL_HINT) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def memory_figure(sim: Simulation, plan: Plan | None = None, *, title: str = "") -> Any:
    """Bytes in each pool over kernels with its capacity line; moves of ``plan`` marked in a
    strip under each pool's curve (moves in, then moves out, each on its own row); legends
    beside the axes, never over the data."""
    plt = pyplot()
    n_pools = len(sim.pool_names)
    fig, axes = plt.subplots(n_pools, 1, figsize=(10, 2.6 * n_pools + 0.6), sharex=True,
                             squeeze=False)
    x = np.arange(sim.n_kernels)
    for p, ax in enumerate(axes[:, 0]):
        capacity = sim.capacities[p]
        if capacity is not None and capacity > 4 * max(int(sim.peak_nbytes[p]), 1):
            capacity = None  # far above the curve: drawing it would flatten the curve
        unit, scale = _byte_unit(max(int(sim.peak_nbytes[p]), capacity or 0, 1))
        ax.fill_between(x, sim.pool_nbytes[p] / scale, step="mid", alpha=0.5, color=f"C{p}")
        ax.step(x, sim.pool_nbytes[p] / scale, where="mid", color=f"C{p}", linewidth=1)
        if capacity is not None:
            ax.axhline(capacity / scale, color="red", linestyle="--", linewidth=1,
                       label=f"capacity {format_bytes(capacity)}")
        top = max(int(sim.peak_nbytes[p]), capacity or 0, 1) / scale * 1.05
        marked = plan is not None and _mark_moves(ax, plan, sim.pool_names[p], top)
        ax.set_ylim(-0.25 * top if marked else 0, top)
        ax.set_yticks([t for t in ax.get_yticks() if 0 <= t <= top])
        if marked:
            ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylabel(f"{sim.pool_names[p]} ({unit})")
        ax.grid(alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                      borderaxespad=0)
    axes[-1, 0].set_xlabel("kernel")
    fig.suptitle(title or f"memory over time: {sim.planner or 'plan'} for {sim.graph} "
                 f"on {sim.system}")
    fig.tight_layout()
    return fig


def _mark_moves(ax: Any, plan: Plan, pool: str, top: float) -> bool:
    """Marks under the pool's curve, below zero: ▲ moves into the pool on the upper row, ▼
    moves out of it on the lower one, each at the kernel issuing it; a copy in flight over
    several kernels drawn as a line from there to the last kernel of its flight, so a
    reader sees how far ahead a prefetch starts. Whether there were any."""
    into = sorted({m.kernel for m in plan.moves if m.target == pool})
    out = sorted({m.kernel for m in plan.moves if m.source == pool})
    for y, color, moves in ((-0.08 * top, "green", [m for m in plan.moves if m.target == pool]),
                            (-0.18 * top, "purple", [m for m in plan.moves if m.source == pool])):
        flights = [m for m in moves if m.spans_kernels]
        if flights:
            ax.hlines([y] * len(flights), [m.kernel for m in flights],
                      [m.until - 1 for m in flights], color=color, linewidth=1.2, alpha=0.5)
    if into:
        ax.plot(into, [-0.08 * top] * len(into), "^", color="green", markersize=4,
                label=f"moves in ({sum(m.target == pool for m in plan.moves)})")
    if out:
        ax.plot(out, [-0.18 * top] * len(out), "v", color="purple", markersize=4,
                label=f"moves out ({sum(m.source == pool for m in plan.moves)})")
    return bool(into or out)


def kernel_time_figure(sim: Simulation, *, title: str = "") -> Any:
    """Stacked bars per kernel: run time, unhidden async move time, sync moves before it."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.6))
    x = np.arange(sim.n_kernels)
    unit, scale = _seconds_unit(float((sim.effective_seconds + sim.sync_seconds).max(initial=0)))
    run = sim.kernel_seconds / scale
    unhidden = (sim.effective_seconds - sim.kernel_seconds) / scale
    sync = sim.sync_seconds / scale
    ax.bar(x, run, width=1.0, label="kernel", color="C0")
    ax.bar(x, unhidden, bottom=run, width=1.0, label="async moves not hidden", color="C1")
    ax.bar(x, sync, bottom=run + unhidden, width=1.0, label="sync moves before", color="C3")
    ax.set_xlabel("kernel")
    ax.set_ylabel(f"time ({unit})")
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(alpha=0.3, axis="y")
    ax.set_title(title or f"time per kernel: {sim.planner or 'plan'}, step "
                 f"{sim.step_seconds / scale:.4g} {unit}")
    fig.tight_layout()
    return fig


def tradeoff_figure(
    curves: Mapping[str, Sequence[tuple[int, float]]],
    *,
    knees: Mapping[str, tuple[int, float]] | None = None,
    budget: float | None = None,
    title: str = "",
) -> Any:
    """Slowdown against fast-memory bytes, one line per planner; each planner's knee (a star
    in its line's colour, named in the legend) and the budget marked.

    ``curves`` maps a planner name to (fast capacity in bytes, slowdown) points; ``knees`` a
    planner name to its knee point.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    top = max([c for pts in curves.values() for c, _ in pts] + [1])
    unit, scale = _byte_unit(top)
    for i, (name, points) in enumerate(curves.items()):
        pts = sorted(points)
        if pts:
            ax.plot([c / scale for c, _ in pts], [s for _, s in pts], "o-", color=f"C{i}",
                    label=name, markersize=4)
        knee = (knees or {}).get(name)
        if knee is not None:
            ax.plot([knee[0] / scale], [knee[1]], "*", color=f"C{i}", markeredgecolor="black",
                    markersize=15, zorder=5,
                    label=f"{name}'s knee: {format_bytes(knee[0])}, {knee[1]:.3g}x")
    if budget is not None:
        ax.axhline(budget, color="grey", linestyle=":", label=f"budget {budget:.3g}x")
    ax.set_xlabel(f"fast memory ({unit})")
    ax.set_ylabel("slowdown vs all in fast memory")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    ax.set_title(title or "trade-off: slowdown against fast-memory size")
    fig.tight_layout()
    return fig


def save_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``fig`` as PNG or SVG (by ``path``'s suffix) and close it."""
    out = Path(path)
    kind = out.suffix.lower().lstrip(".")
    if kind not in FORMATS:
        raise UsageError(f"cannot write a picture to {str(out)!r}: unknown type {kind!r}",
                         hint=f"name the file with one of {', '.join('.' + f for f in FORMATS)}")
    from autotm_core.formats.document import atomic_output

    try:
        with atomic_output(out, binary=True) as handle:
            fig.savefig(handle, format=kind, dpi=110)
    finally:
        pyplot().close(fig)
    return out


def figure_svg(fig: Any) -> str:
    """The SVG text of ``fig`` (without the XML prolog, ready to inline in HTML); closes it."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    pyplot().close(fig)
    text = buffer.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)
    return text[text.index("<svg"):]


def _byte_unit(top: int) -> tuple[str, float]:
    for unit, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if top >= scale:
            return unit, scale
    return "B", 1.0


def _seconds_unit(top: float) -> tuple[str, float]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if top >= scale:
            return unit, scale
    return "ns", 1e-9
