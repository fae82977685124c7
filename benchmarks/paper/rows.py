"""The evaluation's results as rows: each cell of a grid's experiment with its sweep result."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from autotm_core.sweep.grid import Experiment, Grid
from autotm_core.sweep.point import PointResult


@attrs.frozen(kw_only=True)
class Cell:
    """Where a result stands in the grid."""

    experiment: str
    """The experiment's name."""
    label: str
    """The graph's label."""
    note: str
    """What the graph stands for (the paper's setting)."""
    source: str
    """The graph source."""
    limit: str
    """The limit as written."""
    planner: str
    """The planner."""


@attrs.frozen(kw_only=True)
class Row:
    """One cell of an experiment and what planning its point gave."""

    cell: Cell
    """The cell."""
    result: PointResult
    """The sweep result of its point (shared with other experiments' cells of the same point)."""


def experiment_rows(grid: Grid, experiment: Experiment,
                    results: dict[str, PointResult]) -> list[Row]:
    """The rows of ``experiment`` whose points are in ``results`` (by key), in grid order."""
    rows = []
    for graph, point in grid.cells(experiment):
        if point.key in results:
            cell = Cell(experiment=experiment.name, label=graph.label, note=graph.note,
                        source=graph.source, limit=point.limit, planner=point.planner)
            rows.append(Row(cell=cell, result=results[point.key]))
    return rows


def grid_rows(grid: Grid, results: Iterable[PointResult]) -> list[Row]:
    """Every row of every experiment of ``grid`` that has a result."""
    by_key = {r.point.key: r for r in results}
    return [row for e in grid.experiments for row in experiment_rows(grid, e, by_key)]
