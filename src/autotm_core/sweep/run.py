"""Running a sweep: every point once, finished points checkpointed, resumable.

Points run one after another in this process, or on any ``concurrent.futures``
executor (:mod:`autotm_core.sweep.parallel` makes local-process and Dask ones);
either way the results come back in the sweep's order. Every solver named is
checked before any point is planned. The planners of one point (graph, system and
limit) run one after another — in this process, or together on one worker —
baselines first, then the ILP's formulations from the simplest (static,
synchronous, asynchronous), each ILP point offered every plan already made at the
same point, with where it came from: a richer formulation never reports a slower
step than they did (every static plan is a synchronous plan, and every
synchronous plan an asynchronous one). In this process an ILP point is also
offered the plan of the previous point of the same graph and planner (its
neighbour in the sweep; used when it fits the new limit).
With a results file, every finished point is written to it at once; a rerun with
the same file skips the points already in it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from autotm_core.errors import UsageError
from autotm_core.ilp.search.pool import WarmStart
from autotm_core.planning import get_planner
from autotm_core.plans.model import Plan
from autotm_core.sweep.point import (
    PointResult,
    SweepPoint,
    held_source,
    plan_point,
    run_same_point,
    simplest_first,
)
from autotm_core.sweep.results import SweepResults, load_results, save_results

logger = logging.getLogger(__name__)


def sweep_points(
    *,
    graphs: Sequence[str],
    system: str,
    planners: Sequence[str],
    limits: Sequence[str],
    solver: str = "highs",
    time_limit_seconds: float | None = None,
    relative_gap: float = 0.01,
    mode: str = "auto",
    addresses: bool = True,
    recompute: bool = True,
) -> list[SweepPoint]:
    """Every (graph, planner, limit) point, graph-major, limits in the order given."""
    if not graphs or not planners or not limits:
        raise UsageError("a sweep needs at least one graph, one planner and one limit",
                         hint="e.g. --ratios 1:1,4:1,8:1 --planners synchronous,first-touch")
    for planner in planners:
        get_planner(planner)
    return [SweepPoint(graph=g, system=system, planner=p, limit=lim, solver=solver,
                       time_limit_seconds=time_limit_seconds, relative_gap=relative_gap,
                       mode=mode, addresses=addresses, recompute=recompute)
            for g, p, lim in itertools.product(graphs, planners, limits)]


def run_sweep(
    points: Sequence[SweepPoint],
    *,
    results_path: str | os.PathLike[str] | None = None,
    executor: concurrent.futures.Executor | None = None,
    on_result: Callable[[PointResult, bool], None] | None = None,
) -> SweepResults:
    """Plan every point; ``on_result(result, resumed)`` is called as each one is known.

    On KeyboardInterrupt the points finished so far are kept (and written) and
    the returned results say ``interrupted``.
    """
    _check_solvers(points)  # an unknown solver is refused before any work, nothing written
    known: dict[str, PointResult] = {}
    if results_path is not None and Path(results_path).exists():
        known = {r.point.key: r for r in load_results(results_path)}
    done: dict[str, PointResult] = {}
    for p in points:
        if p.key in known:
            done[p.key] = known[p.key]
            if on_result:
                on_result(known[p.key], True)
    todo = [p for p in points if p.key not in done]
    if todo:
        logger.info("sweep: %d points to plan, %d resumed", len(todo), len(done))

    def finished(result: PointResult) -> None:
        done[result.point.key] = result
        if results_path is not None:
            save_results(results_path, _merged(known, done))
        if on_result:
            on_result(result, False)

    interrupted = False
    try:
        if executor is None:
            neighbour: dict[tuple[str, ...], Plan] = {}
            at_point: dict[tuple[str, ...], list[WarmStart]] = {}
            for p in simplest_first(todo):
                line = (p.graph, p.system, p.planner, p.solver, p.mode)
                same = at_point.setdefault((p.graph, p.system, p.limit), [])
                start = ((neighbour[line],) if line in neighbour else ()) + tuple(same)
                result, plan = plan_point(p, start_plans=start)
                if plan is not None:
                    neighbour[line] = plan
                    same.append(WarmStart(plan, held_source(p)))
                finished(result)
        else:
            _run_on(executor, todo, finished)
    except KeyboardInterrupt:
        interrupted = True
        logger.warning("sweep interrupted: %d of %d points finished", len(done), len(points))
    ordered = [done[p.key] for p in points if p.key in done]
    return SweepResults(points=ordered, interrupted=interrupted, n_planned=len(points))


def _check_solvers(points: Sequence[SweepPoint]) -> None:
    """One error naming the first solver of an ILP point that cannot run here."""
    from autotm_core.plugins import get_solver

    for solver in dict.fromkeys(p.solver for p in points if get_planner(p.planner).is_ilp):
        get_solver(solver)


def _run_on(executor: concurrent.futures.Executor, todo: Iterable[SweepPoint],
            finished: Callable[[PointResult], None]) -> None:
    """Each point's planners on one worker, one after another (see
    :func:`~autotm_core.sweep.point.run_same_point`)."""
    same: dict[tuple[str, str, str], list[SweepPoint]] = {}
    for p in todo:
        same.setdefault((p.graph, p.system, p.limit), []).append(p)
    futures = [executor.submit(run_same_point, group) for group in same.values()]
    try:
        for future in concurrent.futures.as_completed(futures):
            for result in future.result():
                finished(result)
    finally:
        for future in futures:
            future.cancel()


def _merged(known: dict[str, PointResult], done: dict[str, PointResult]) -> list[PointResult]:
    """Points of the file not in this sweep, then this sweep's: nothing finished is dropped."""
    return [r for k, r in known.items() if k not in done] + list(done.values())
