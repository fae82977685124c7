"""Sweep and compare tables fit 80 and 120 columns with every name and unit whole."""

from __future__ import annotations

import io
import re

import attrs
import pytest
from rich.console import Console

from autotm_core.report.sweep_report import render_compare, render_sweep
from autotm_core.sweep import run_sweep, sweep_points
from autotm_core.sweep.price import PriceModel


@pytest.fixture(scope="module")
def results():  # type: ignore[no-untyped-def]
    points = sweep_points(graphs=["example:mlp", "example:cnn"], system="hbm-dram-cxl",
                          planners=["first-touch", "greedy"],
                          limits=["hbm=4:1,dram=4:1", "hbm=1:1"])
    done = run_sweep(points)
    # the longest planner name, as an ILP row would show it (planning it here is slow)
    first = attrs.evolve(done.points[0], point=attrs.evolve(done.points[0].point,
                                                            planner="asynchronous"))
    return attrs.evolve(done, points=[first, *done.points[1:]])


def _text(renderable, width: int) -> str:  # type: ignore[no-untyped-def]
    console = Console(width=width, color_system=None, file=io.StringIO(), legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120])
def test_sweep_and_compare_fit_and_cut_nothing(results, width: int) -> None:  # type: ignore[no-untyped-def]
    for page in (_text(render_sweep(results, price=PriceModel(), budget=3.0, width=width),
                       width),
                 _text(render_compare(results.points[:4], width=width), width)):
        assert "…" not in page, page
        assert max(len(line.rstrip()) for line in page.splitlines()) <= width, page
        words = set(page.split())
        for name in ("asynchronous", "first-touch", "greedy", "status", "slowdown"):
            assert name in words, (name, page)
        # every size keeps its unit: a number of bytes is followed by its unit, maybe on
        # the next line of the same column, never cut into pieces
        assert not re.search(r"\b(Mi|Ki|Gi)\b", page), page
        assert "dram=4:1" in page and "hbm=4:1," in page
