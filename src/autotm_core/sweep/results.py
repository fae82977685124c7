"""The results of a sweep: curves, knees, and the results file (JSON) and table (CSV).

The results file is an ``autotm-core/sweep`` document, version 1: ``points``, a
list of finished points (each its point, status, times, bytes moved), rewritten
atomically after every point so that an interrupted sweep keeps what it finished
and a rerun resumes from it.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from autotm_core.errors import FormatError
from autotm_core.formats.document import envelope, read_document, write_document
from autotm_core.sweep.knee import find_knee
from autotm_core.sweep.point import PointResult

KIND = "sweep"
VERSION = 1

CSV_COLUMNS = ("graph", "system", "planner", "limit", "fast_capacity_nbytes", "peak_nbytes",
               "status", "step_seconds", "all_fast_seconds", "slowdown", "moved_nbytes",
               "n_moves", "plan_seconds", "gap", "termination", "solver", "message")
"""Columns of the CSV table, in order."""


@attrs.frozen(kw_only=True)
class Curve:
    """The points of one planner on one graph and system, by growing fast capacity."""

    graph: str
    """Graph source."""
    system: str
    """Memory system."""
    planner: str
    """Planner."""
    points: tuple[PointResult, ...]
    """Planned points (status ``ok``), by fast capacity."""
    knee: PointResult | None
    """The knee of the curve, when it has one."""


def _to_points(value: Iterable[PointResult]) -> tuple[PointResult, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class SweepResults:
    """Every finished point of a sweep, in the sweep's order."""

    points: tuple[PointResult, ...] = attrs.field(converter=_to_points)
    """The results."""
    interrupted: bool = False
    """Whether the sweep stopped before all its points were finished."""
    n_planned: int = 0
    """Number of points the sweep asked for."""

    def curves(self) -> list[Curve]:
        """One curve per (graph, system, planner), in order of first appearance."""
        groups: dict[tuple[str, str, str], list[PointResult]] = {}
        for r in self.points:
            groups.setdefault((r.point.graph, r.point.system, r.point.planner), []).append(r)
        curves = []
        for (graph, system, planner), members in groups.items():
            ok = sorted((r for r in members if r.slowdown is not None),
                        key=lambda r: (r.fast_capacity_nbytes, r.point.limit))
            knee = find_knee([(r.fast_capacity_nbytes, r.slowdown or 0.0) for r in ok])
            curves.append(Curve(graph=graph, system=system, planner=planner, points=tuple(ok),
                                knee=None if knee is None else ok[knee]))
        return curves

    def knee_keys(self) -> set[str]:
        """Keys of the points that are the knee of their curve."""
        return {c.knee.point.key for c in self.curves() if c.knee is not None}

    def to_document(self) -> dict[str, Any]:
        """The results-file document."""
        return {**envelope(KIND, VERSION), "points": [r.to_json() for r in self.points]}


def versions() -> dict[str, str]:
    """Versions of what produced results: autotm-core, Python, HiGHS, NumPy."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy

    from autotm_core import __version__

    try:
        highs = version("highspy")
    except PackageNotFoundError:
        highs = "not installed"
    return {"autotm-core": __version__, "python": platform.python_version(),
            "highspy": highs, "numpy": numpy.__version__}


def save_results(path: str | os.PathLike[str], results: Iterable[PointResult]) -> None:
    """Write the results file atomically, with the versions that wrote it."""
    write_document(path, {**SweepResults(points=tuple(results)).to_document(),
                          "versions": versions()})


def load_results(path: str | os.PathLike[str]) -> list[PointResult]:
    """The points of a results file; :class:`FormatError` naming the file when malformed."""
    doc, fields = read_document(path, KIND, {VERSION})
    out = []
    for i, item in enumerate(fields.list(doc.get("points"), "points")):
        try:
            out.append(PointResult.from_json(dict(fields.object(item, f"points[{i}]"))))
        except (TypeError, KeyError, ValueError) as exc:
            raise FormatError(f"{path}: points[{i}] is not a sweep point ({exc})",
                              hint="delete the file to start the sweep afresh") from None
    return out


def write_csv(path: str | os.PathLike[str], results: Iterable[PointResult]) -> Path:
    """Write one row per point with :data:`CSV_COLUMNS`."""
    from autotm_core.formats.document import atomic_output

    out = Path(path)
    with atomic_output(out) as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in results:
            row = {**r.to_json(), **{k: getattr(r.point, k)
                                      for k in ("graph", "system", "planner", "limit", "solver")}}
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in CSV_COLUMNS})
    return out
