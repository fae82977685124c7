"""Rows of fixed results for the paper's report, as a grid and its sweep would give them."""

from __future__ import annotations

from benchmarks.paper.rows import Cell, Row

from autotm_core.sweep.point import PointResult, SweepPoint


def row(label: str, limit: str, planner: str, step: float | None, *, ideal: float = 1.0,
        experiment: str = "conventional") -> Row:
    """A row of ``experiment``: ``label`` at ``limit`` under ``planner``, ``step`` seconds."""
    point = SweepPoint(graph=label, system="optane-2019", planner=planner, limit=limit,
                       time_limit_seconds=1.0)
    result = PointResult(point=point, status="ok" if step is not None else "no-plan",
                         n_kernels=1, peak_nbytes=100, fast_capacity_nbytes=50,
                         all_fast_seconds=ideal, step_seconds=step,
                         message="" if step is not None else "too small")
    cell = Cell(experiment=experiment, label=label, note="p", source=label, limit=limit,
                planner=planner)
    return Row(cell=cell, result=result)
