"""Grid files: read with one clear error per mistake, planned as one sweep, points shared."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from autotm_core.cli.main import main
from autotm_core.errors import FormatError, UsageError
from autotm_core.sweep.grid import Experiment, Grid, GridGraph, load_grid, save_grid

TINY = "zoo:gpt2:batch=1,seq=16,layers=1,width=32,heads=2,vocab=64,positions=16"


def _grid(planners: tuple[str, ...] = ("first-touch", "greedy")) -> Grid:
    gpt = GridGraph(source=TINY, label="tiny GPT", note="-")
    return Grid(name="tiny", description="tiny graphs", time_limit_seconds=20.0, experiments=(
        Experiment(name="conventional", title="Tiny on optane-2019", system="optane-2019",
                   graphs=(gpt,), limits=("1:1", "4:1"), planners=planners),
        Experiment(name="again", title="The same points again", system="optane-2019",
                   graphs=(gpt,), limits=("4:1",), planners=planners),
        Experiment(name="three-pool", title="Tiny on three pools", system="hbm-dram-cxl",
                   graphs=(gpt,), limits=("hbm=4:1,dram=4:1",), planners=("first-touch",)),
    ))


def test_round_trip_and_points_shared_between_experiments(tmp_path: Path) -> None:
    path = tmp_path / "grid.json"
    save_grid(_grid(), path)
    grid = load_grid(path)
    assert grid == _grid()
    keys = [p.key for p in grid.points()]
    assert len(keys) == len(set(keys)) == 2 * 2 + 1  # "again" repeats "conventional"'s 4:1
    assert [g.label for g, _ in grid.cells(grid.experiments[1])] == ["tiny GPT"] * 2


def test_select_and_settings() -> None:
    grid = _grid().select(experiments=["three-pool"]).with_settings(
        time_limit_seconds=5, mode="exact", addresses=False)
    assert [e.name for e in grid.experiments] == ["three-pool"]
    assert {(p.time_limit_seconds, p.mode, p.addresses) for p in grid.points()} == {
        (5, "exact", False)}
    assert all(p.recompute for p in grid.points())  # recomputing unless turned off
    off = grid.with_settings(recompute=False)
    assert not any(p.recompute for p in off.points())
    assert all(p.recompute for p in off.with_settings(recompute=None).points()) is False
    with pytest.raises(UsageError, match="no experiment"):
        _grid().select(experiments=["nope"])
    with pytest.raises(UsageError, match="time_limit_seconds 0 is out of range"):
        _grid().with_settings(time_limit_seconds=0)
    with pytest.raises(UsageError, match="planning mode"):
        _grid().with_settings(mode="fast")


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d.pop("experiments"), "experiments: is missing"),
    (lambda d: d["experiments"][0].update(planners=["fastest"]), "no planner called"),
    (lambda d: d["experiments"][0].update(limits=[]), r"experiments\[0\].limits: is empty"),
    (lambda d: d["experiments"][0]["graphs"].append(3), r"graphs\[1\]: expected an object"),
    (lambda d: d.update(relative_gap=-1), "gap -1 is out of range"),
    (lambda d: d["experiments"][1].update(name="conventional"), "same name"),
    (lambda d: d.update(colour="red"), "unknown field 'colour'"),
])
def test_a_mistake_is_one_error_naming_the_file_and_field(tmp_path: Path, change,  # type: ignore[no-untyped-def]
                                                           where: str) -> None:
    document = _grid().to_document()
    change(document)
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FormatError, match=where) as info:
        load_grid(path)
    assert str(path) in info.value.message


def test_sweep_grid_plans_every_point_once(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    grid, results = tmp_path / "grid.json", tmp_path / "results.json"
    save_grid(_grid(), grid)
    assert main(["sweep", "--grid", str(grid), "-o", str(results), "--json"]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert len(points) == 5 and all(p["status"] == "ok" for p in points)
    three = next(p for p in points if p["point"]["system"] == "hbm-dram-cxl")
    conventional = next(p for p in points if p["point"]["limit"] == "4:1")
    assert three["fast_capacity_nbytes"] == conventional["fast_capacity_nbytes"]
    assert main(["sweep", "--grid", str(grid), "-o", str(results), "--only", "again"]) == 0


def test_sweep_grid_refuses_what_the_grid_gives(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    grid = tmp_path / "grid.json"
    save_grid(_grid(), grid)
    assert main(["sweep", "--grid", str(grid), "--system", "optane-2019"]) == 2
    assert "drop --system" in capsys.readouterr().err
    assert main(["sweep", "example:mlp", "--system", "optane-2019", "--only", "x"]) == 2
    assert "--only picks experiments" in capsys.readouterr().err


def test_the_example_in_the_docs_reads(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    example = next(block for block in text.split("```json\n")[1:]
                   if '"autotm-core/grid"' in block).split("```")[0]
    path = tmp_path / "grid.json"
    path.write_text(example)
    grid = load_grid(path)
    assert [e.name for e in grid.experiments] == ["conventional", "three-pool"]
    assert len(grid.points()) == 2 * 2 * 5 + 2


def test_the_command_line_turns_recomputation_off_for_a_grid(tmp_path: Path) -> None:
    from autotm_core.cli.main import build_parser
    from autotm_core.cli.sweep_command import _grid_points

    path = tmp_path / "grid.json"
    save_grid(_grid(), path)
    for argv, want in (([], True), (["--recompute"], True), (["--no-recompute"], False)):
        args = build_parser().parse_args(["sweep", "--grid", str(path), *argv])
        assert {p.recompute for p in _grid_points(args)} == {want}


def test_keys_tell_recomputing_ilp_points_from_the_ones_that_keep_and_move() -> None:
    point = _grid(planners=("synchronous", "greedy")).points()[0]
    ilp, baseline = point, attrs.evolve(point, planner="greedy")
    off = {p: attrs.evolve(p, recompute=False) for p in (ilp, baseline)}
    assert off[ilp].key != ilp.key  # planned again when recomputation is turned on
    assert off[baseline].key == baseline.key  # a baseline does not recompute either way
