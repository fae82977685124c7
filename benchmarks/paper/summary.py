"""Summaries of evaluation results: slowdowns, geometric means, speedups over 2LM."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs
from benchmarks.paper.rows import Row


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive ``values`` (``None`` when there are none)."""
    logs = [math.log(v) for v in values]
    if not logs:
        return None
    if any(math.isnan(x) for x in logs):
        raise ValueError("geometric mean of a NaN")
    return math.exp(sum(logs) / len(logs))


@attrs.frozen
class Mean:
    """A geometric mean of slowdowns and how many cells it covers."""

    value: float | None
    """Geometric mean of step time over all-fast time (``None``: no cell had a plan)."""
    n: int
    """Cells with a plan that went into it."""
    of: int
    """Cells asked for."""


def of_experiment(results: Iterable[Row], experiment: str) -> list[Row]:
    """The results of ``experiment``, in the order given."""
    return [r for r in results if r.cell.experiment == experiment]


def ordered(values: Iterable[str]) -> list[str]:
    """``values`` without repeats, in first-seen order."""
    return list(dict.fromkeys(values))


def lookup(results: Sequence[Row]) -> dict[tuple[str, str, str], Row]:
    """(label, limit, planner) -> result."""
    return {(r.cell.label, r.cell.limit, r.cell.planner): r for r in results}


def mean_slowdown(results: Iterable[Row], *, planner: str,
                  limits: Sequence[str] | None = None) -> Mean:
    """Geometric-mean slowdown of ``planner`` over the cells at ``limits`` (all when ``None``)."""
    chosen = [r for r in results if r.cell.planner == planner
              and (limits is None or r.cell.limit in limits)]
    values = [r.result.slowdown for r in chosen if r.result.slowdown is not None]
    return Mean(value=geomean(values), n=len(values), of=len(chosen))


def best_ilp(results: Sequence[Row], planners: Sequence[str]) -> list[Row]:
    """Per (workload, limit), the ILP result with the smallest step time among ``planners``.

    AutoTM's headline figure is the better of its formulations for each point.
    """
    best: dict[tuple[str, str], Row] = {}
    for r in results:
        if r.cell.planner not in planners or r.result.slowdown is None:
            continue
        key = (r.cell.label, r.cell.limit)
        if key not in best or r.result.slowdown < best[key].result.slowdown:  # type: ignore[operator]
            best[key] = r
    return list(best.values())


def speedups_over(results: Sequence[Row], *, baseline: str,
                  planner: str) -> dict[str, float | None]:
    """Per workload label: ``baseline``'s step time over ``planner``'s (at the same limit)."""
    table = lookup(results)
    out: dict[str, float | None] = {}
    for r in results:
        if r.cell.planner != planner:
            continue
        other = table.get((r.cell.label, r.cell.limit, baseline))
        if r.result.step_seconds and other is not None and other.result.step_seconds is not None:
            out[r.cell.label] = other.result.step_seconds / r.result.step_seconds
        else:
            out[r.cell.label] = None
    return out


def percent(slowdown: float | None) -> str:
    """``1.277`` -> ``"27.7%"`` (slowdown against all-fast); ``None`` -> ``"-"``."""
    if slowdown is None:
        return "-"
    return f"{(slowdown - 1.0) * 100:.1f}%"
