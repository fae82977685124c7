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


def test_a_long_name_folds_before_a_number_is_split() -> None:
    from autotm_core.report.tables import words_table

    name = "layer4.0.downsample.conv.weight.momentum.update.and.more.words.in.one.name"
    rows = [["541", name, "857.083 us", "0.000 us", "144.802 us", "1.198 ms"]]
    columns = ("#", "kernel", "run", "async moves", "sync moves before", "counted")
    page = _text(words_table("kernels", columns, rows, width=80, left=("kernel",)), 80)
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page
    for number in ("857.083", "144.802", "1.198", "541"):
        assert number in page.split(), (number, page)
    pieces = [token for token in page.split() if token in name]
    assert "".join(pieces) == name, page  # folded onto lines of its own, every character kept
    wide = _text(words_table("kernels", columns, rows, width=200, left=("kernel",)), 200)
    assert name in wide and "857.083 us" in wide  # room enough: one line each
