"""PNG figures of the evaluation (matplotlib, the optional extra ``plots``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.paper.rows import Row
from benchmarks.paper.summary import mean_slowdown, ordered

from autotm_core.errors import UsageError


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageError(
            "plotting the evaluation needs matplotlib, which is not installed",
            hint="pip install autotm-core[plots]  (or run without plots: --no-plots)",
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def slowdown_per_ratio(results: Sequence[Row], path: str | os.PathLike[str], *,
                       title: str) -> None:
    """Grouped bars: geometric-mean slowdown of each planner at each limit."""
    plt = _pyplot()
    planners = ordered(r.cell.planner for r in results)
    limits = ordered(r.cell.limit for r in results)
    width = 0.8 / max(len(planners), 1)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, planner in enumerate(planners):
        means = [mean_slowdown([r for r in results if r.cell.limit == limit],
                               planner=planner).value for limit in limits]
        xs = [j + (i - (len(planners) - 1) / 2) * width for j in range(len(limits))]
        ax.bar(xs, [0.0 if m is None else m for m in means], width, label=planner)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(limits)), [f"{limit} (slow:fast)" if ":" in limit else limit
                                       for limit in limits])
    ax.set_ylabel("geometric-mean slowdown vs all-DRAM (x)")
    ax.set_title(title)
    # at most four names a row under the axes, so that nine planners still fit the width
    ax.legend(fontsize="small", ncols=min(len(planners), 4), loc="upper center",
              bbox_to_anchor=(0.5, -0.1))
    _save(fig, plt, path)


def slowdown_vs_size(results: Sequence[Row], path: str | os.PathLike[str], *,
                     title: str) -> None:
    """Lines: slowdown of each planner against the fast limit as a share of peak live bytes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for planner in ordered(r.cell.planner for r in results):
        points = sorted((r.result.fast_capacity_nbytes / r.result.peak_nbytes, r.result.slowdown)
                        for r in results
                        if r.cell.planner == planner and r.result.slowdown is not None)
        if points:
            ax.plot([p[0] * 100 for p in points], [p[1] for p in points], marker="o",
                    label=planner)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("fast memory, % of peak live bytes")
    ax.set_ylabel("slowdown vs all-fast (x)")
    ax.set_title(title)
    ax.legend(fontsize="small")
    _save(fig, plt, path)


def _save(fig: Any, plt: Any, path: str | os.PathLike[str]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
