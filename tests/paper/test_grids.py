"""The paper's grids name real zoo networks, presets, limits and planners, and paper_eval runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.paper_eval import GRIDS, main

from autotm_core.capacity import Limit
from autotm_core.presets import PRESETS, preset
from autotm_core.sweep.grid import load_grid
from autotm_core.zoo.catalog import NETWORKS, parse_spec

GRID_FILES = sorted(GRIDS.glob("*.json"))


def test_the_four_grids_are_there() -> None:
    assert [p.stem for p in GRID_FILES] == ["deep", "full-depth", "paper", "quick"]


@pytest.mark.parametrize("path", GRID_FILES, ids=lambda p: p.stem)
def test_every_graph_is_a_zoo_network_on_a_preset(path: Path) -> None:
    grid = load_grid(path)
    for experiment in grid.experiments:
        assert experiment.system in PRESETS
        system = preset(experiment.system)
        for limit in experiment.limits:
            for pool in Limit.parse(limit).parts:
                assert pool.pool is None or pool.pool in {p.name for p in system.pools}
        for graph in experiment.graphs:
            frontend, _, spec = graph.source.partition(":")
            name, options = parse_spec(spec)
            assert frontend == "zoo" and name in NETWORKS, graph.source
            assert set(options) <= set(NETWORKS[name].defaults), graph.source


def test_gpt2_outgrows_the_h200s_memory() -> None:
    from autotm_core.zoo import build_network

    grid = load_grid(GRIDS / "quick.json")
    transformer = next(e for e in grid.experiments if e.name == "transformer")
    graph = build_network(transformer.graphs[0].source.partition(":")[2])
    assert Limit.parse("141GB").parts[0].resolve(graph.liveness.peak_nbytes) \
        < graph.liveness.peak_nbytes


def test_three_pool_limits_every_pool_but_the_slowest() -> None:
    grid = load_grid(GRIDS / "quick.json")
    three = next(e for e in grid.experiments if e.system == "hbm-dram-cxl")
    assert {p.pool for lim in three.limits for p in Limit.parse(lim).parts} == {"hbm", "dram"}


def test_report_only_writes_the_results_page(tmp_path: Path) -> None:
    status = main(["--report-only", "--no-plots", "--only", "conventional", "--docs",
                   str(tmp_path)])
    assert status == 0
    text = (tmp_path / "results.md").read_text()
    assert "Conventional networks on optane-2019" in text and "_not run_" in text


def test_unknown_experiment_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status = main(["--report-only", "--only", "nope", "--docs", str(tmp_path)])
    assert status == 2
    err = capsys.readouterr().err
    assert "no experiment" in err and "Traceback" not in err
