"""Sweeps: every point planned, checkpointed, resumed after an interruption, same in parallel."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import attrs
import pytest

from autotm_core.errors import FormatError, ResourceError, UsageError
from autotm_core.sweep import (
    PointResult,
    load_results,
    run_point,
    run_sweep,
    sweep_points,
    write_csv,
)
from autotm_core.sweep.results import CSV_COLUMNS

LIMITS = ["0:1", "1:1", "2:1", "4:1", "8:1"]


def _points(planners=("first-touch", "greedy", "2lm"), graphs=("example:cnn",)):
    return sweep_points(graphs=list(graphs), system="optane-2019", planners=list(planners),
                        limits=LIMITS)


def _same(a: list[PointResult], b: list[PointResult]) -> None:
    """Equal but for wall time, which differs between any two runs."""
    assert [attrs.evolve(r, plan_seconds=0.0) for r in a] == \
        [attrs.evolve(r, plan_seconds=0.0) for r in b]


def test_sweep_plans_every_point_in_order() -> None:
    points = _points()
    results = run_sweep(points)
    assert not results.interrupted
    assert [r.point for r in results.points] == points
    for r in results.points:
        assert r.status == "ok", r.message
        assert r.slowdown is not None and r.slowdown >= 1.0 - 1e-9
    # less fast memory never makes first-touch faster
    ft = [r.slowdown for r in results.points if r.point.planner == "first-touch"]
    assert ft == sorted(ft)
    # the ratio is peak / (r + 1)
    peak = results.points[0].peak_nbytes
    assert results.points[0].fast_capacity_nbytes == peak
    assert results.points[3].fast_capacity_nbytes == peak // 5 or \
        abs(results.points[3].fast_capacity_nbytes - peak / 5) < 1
    curves = results.curves()
    assert [c.planner for c in curves] == ["first-touch", "greedy", "2lm"]
    assert all(c.knee is None or c.knee in c.points for c in curves)


def test_ilp_point_is_no_worse_than_its_warm_start() -> None:
    static = run_point(sweep_points(graphs=["example:cnn"], system="optane-2019",
                                    planners=["static"], limits=["4:1"],
                                    time_limit_seconds=30)[0])
    assert static.status == "ok" and static.termination
    assert static.gap is not None and static.gap <= 0.01 + 1e-9
    first_touch = run_point(_points(planners=("first-touch",))[3])
    assert static.step_seconds <= first_touch.step_seconds * (1 + 1e-9)


def test_richer_formulation_never_reports_a_slower_step_whatever_the_order() -> None:
    points = sweep_points(graphs=["example:mlp"], system="optane-2019",
                          planners=["synchronous", "greedy", "static"], limits=["1:1", "4:1"],
                          time_limit_seconds=20)
    results = run_sweep(points)
    assert [r.point for r in results.points] == points  # reported in the sweep's order
    step = {(r.point.planner, r.point.limit): r.step_seconds for r in results.points}
    for limit in ("1:1", "4:1"):
        assert step["synchronous", limit] <= step["static", limit] * (1 + 1e-12)
        assert step["synchronous", limit] <= step["greedy", limit] * (1 + 1e-12)


@pytest.mark.slow
def test_on_workers_too_a_richer_formulation_never_reports_a_slower_step() -> None:
    from autotm_core.sweep.parallel import local_executor

    points = sweep_points(graphs=["example:mlp"], system="optane-2019",
                          planners=["synchronous", "greedy", "static"], limits=["1:1", "4:1"],
                          time_limit_seconds=20)
    with local_executor(2) as pool:
        results = run_sweep(points, executor=pool)
    assert [r.point for r in results.points] == points
    step = {(r.point.planner, r.point.limit): r.step_seconds for r in results.points}
    for limit in ("1:1", "4:1"):
        assert step["synchronous", limit] <= step["static", limit] * (1 + 1e-12)
        assert step["synchronous", limit] <= step["greedy", limit] * (1 + 1e-12)


def test_an_unknown_solver_is_refused_before_any_point_is_planned(tmp_path: Path) -> None:
    from autotm_core.errors import PluginError

    points = sweep_points(graphs=["example:mlp"], system="optane-2019",
                          planners=["greedy", "synchronous"], limits=["4:1"], solver="gurobi")
    written = tmp_path / "results.json"
    planned: list[object] = []
    with pytest.raises(PluginError, match="gurobi"):
        run_sweep(points, results_path=written, on_result=lambda r, _: planned.append(r))
    assert not planned and not written.exists()


def test_points_of_a_graph_are_planned_baselines_first_then_simplest_formulation() -> None:
    from autotm_core.sweep.point import simplest_first

    points = sweep_points(graphs=["example:mlp", "example:cnn"], system="optane-2019",
                          planners=["asynchronous", "greedy", "synchronous", "static"],
                          limits=["1:1", "4:1"])
    order = [(p.graph, p.planner, p.limit) for p in simplest_first(points)]
    assert order == [(g, planner, limit) for g in ("example:mlp", "example:cnn")
                     for planner in ("greedy", "static", "synchronous", "asynchronous")
                     for limit in ("1:1", "4:1")]


def test_too_little_memory_is_a_point_without_plan() -> None:
    point = sweep_points(graphs=["example:cnn"], system="optane-2019", planners=["first-touch"],
                         limits=["1KiB"])[0]
    result = run_point(point)
    assert result.status == "no-plan" and result.slowdown is None and result.message


def test_bad_planner_and_empty_sweep_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="no planner called 'fastest'"):
        sweep_points(graphs=["example:cnn"], system="optane-2019", planners=["fastest"],
                     limits=["4:1"])
    with pytest.raises(UsageError, match="at least one"):
        sweep_points(graphs=["example:cnn"], system="optane-2019", planners=["greedy"],
                     limits=[])


def test_interrupted_sweep_keeps_its_points_and_resumes(tmp_path: Path) -> None:
    points = _points()
    path = tmp_path / "results.json"
    seen: list[bool] = []

    def interrupt_after_four(result: PointResult, resumed: bool) -> None:
        seen.append(resumed)
        if len(seen) == 4:
            raise KeyboardInterrupt

    first = run_sweep(points, results_path=path, on_result=interrupt_after_four)
    assert first.interrupted and len(first.points) == 4
    assert [r.point for r in load_results(path)] == points[:4]

    resumed: list[bool] = []
    second = run_sweep(points, results_path=path, on_result=lambda r, res: resumed.append(res))
    assert not second.interrupted
    assert resumed == [True] * 4 + [False] * (len(points) - 4)
    assert second.points[:4] == first.points  # read back, not planned again
    _same(list(second.points), list(run_sweep(points).points))
    assert len(load_results(path)) == len(points)


def test_results_file_and_csv(tmp_path: Path) -> None:
    results = run_sweep(_points(planners=("greedy",)), results_path=tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["format"] == "autotm-core/sweep" and doc["version"] == 1
    assert len(doc["points"]) == len(LIMITS)
    write_csv(tmp_path / "r.csv", results.points)
    with (tmp_path / "r.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [row["limit"] for row in rows] == LIMITS
    assert float(rows[2]["slowdown"]) == pytest.approx(results.points[2].slowdown)
    (tmp_path / "bad.json").write_text('{"format": "autotm-core/sweep", "version": 1, '
                                       '"points": [{"point": {}}]}')
    with pytest.raises(FormatError, match=r"bad.json: points\[0\]"):
        load_results(tmp_path / "bad.json")


@pytest.mark.slow
def test_local_processes_give_the_serial_results() -> None:
    from autotm_core.sweep.parallel import local_executor

    points = _points(planners=("first-touch", "2lm"))
    serial = run_sweep(points)
    with local_executor(2) as pool:
        parallel = run_sweep(points, executor=pool)
    _same(list(parallel.points), list(serial.points))


def test_dask_cluster_gives_the_serial_results() -> None:
    distributed = pytest.importorskip("distributed", reason="the cluster extra is not installed")
    from autotm_core.sweep.parallel import dask_executor

    points = _points(planners=("greedy",), graphs=("example:cnn", "example:mlp"))
    serial = run_sweep(points)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            dask_executor(cluster.scheduler_address) as executor:
        on_cluster = run_sweep(points, executor=executor)
    _same(list(on_cluster.points), list(serial.points))


@pytest.mark.slow
def test_unreachable_scheduler_is_one_clear_error() -> None:
    pytest.importorskip("distributed", reason="the cluster extra is not installed")
    from autotm_core.sweep.parallel import dask_executor

    with pytest.raises(ResourceError, match="cannot reach the Dask scheduler"), \
            dask_executor("tcp://127.0.0.1:1", timeout_seconds=2):
        pass
