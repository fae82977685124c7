"""Running an evaluation profile: every cell in order, each checkpointed, resumable."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence

import attrs

from autotm_core.errors import UsageError
from autotm_core.evaluation.cells import Cell, CellResult, Workbench, run_cell
from autotm_core.evaluation.experiments import Profile
from autotm_core.evaluation.store import load_results, save_results

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, Cell, "CellResult | None"], None]
"""Called before each cell (result ``None``) and after it: (index, total, cell, result)."""


def select(profile: Profile, *, experiments: Sequence[str] | None = None,
           time_limit_seconds: float | None = None) -> Profile:
    """``profile`` restricted to ``experiments`` and with another ILP time limit."""
    if experiments:
        known = {e.name for e in profile.experiments}
        unknown = sorted(set(experiments) - known)
        if unknown:
            raise UsageError(f"profile {profile.name!r} has no experiment {', '.join(unknown)}",
                             hint=f"its experiments: {', '.join(sorted(known))}")
        profile = attrs.evolve(profile, experiments=tuple(
            e for e in profile.experiments if e.name in experiments))
    if time_limit_seconds is not None:
        if time_limit_seconds <= 0:
            raise UsageError(f"time limit {time_limit_seconds} s must be positive",
                             hint="e.g. --time-limit 60")
        profile = attrs.evolve(profile, time_limit_seconds=float(time_limit_seconds))
    return profile


def profile_cells(profile: Profile) -> list[Cell]:
    """Every cell of ``profile``, in running order."""
    return [
        Cell(experiment=e.name, label=w.label, spec=w.spec, system=e.system, limit=limit,
             policy=policy, time_limit_seconds=profile.time_limit_seconds,
             relative_gap=profile.relative_gap)
        for e in profile.experiments for w in e.workloads for limit in e.limits
        for policy in e.policies
    ]


def run_evaluation(profile: Profile, *, results_path: str | os.PathLike[str],
                   progress: Progress | None = None,
                   bench: Workbench | None = None) -> list[CellResult]:
    """Run every cell of ``profile`` not yet in ``results_path``; return all its results.

    Each finished cell is written to ``results_path`` before the next starts, so an
    interrupted run (Ctrl-C, a killed process) resumes where it stopped. Results of
    cells that are no longer part of the profile stay in the file.
    """
    bench = bench or Workbench()
    done = load_results(results_path)
    cells = profile_cells(profile)
    for index, cell in enumerate(cells):
        result = done.get(cell.key)
        if result is None:
            if progress:
                progress(index, len(cells), cell, None)
            result = run_cell(cell, bench)
            done[cell.key] = result
            save_results(results_path, done.values(), profile=profile.name)
            logger.info("%s: %s", cell.key, result.status)
        if progress:
            progress(index, len(cells), cell, result)
    return [done[cell.key] for cell in cells]
