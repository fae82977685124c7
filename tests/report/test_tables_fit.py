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
        for name in ("asynchronous", "first-touch", "greedy", "slowdown"):
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


def test_a_value_keeps_its_unit_on_its_line_while_the_table_can_fit() -> None:
    from autotm_core.report.tables import words_table

    # compare at 80 columns: "0.81 s" and "8.16 KiB" once took two lines each
    columns = ("planner", "solver", "step", "slowdown", "moved", "moves", "plan time", "gap",
               "status")
    rows = [["static", "highs", "2.883 ms", "2.948x", "8.16 KiB", "8", "13.14 s", "0.94%",
             "time limit"],
            ["greedy", "-", "3.444 ms", "3.523x", "12.74 MiB", "13", "0.81 s", "-", "ok"]]
    page = _text(words_table("compare", columns, rows, width=80, left=("planner", "status")),
                 80)
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page
    for value in ("2.883 ms", "8.16 KiB", "12.74 MiB", "13.14 s", "0.81 s"):
        assert value in page, (value, page)
    # sweep --capacities at 80 columns (every point planned: no status column): "1.80 GiB"
    # once split
    columns = ("planner", "limit", "fast mem", "slowdown", "moved", "cost", "plan time", "gap")
    rows = [["first-touch", "1.8GiB", "1.80 GiB", "1.000x", "0 B", "100.0%", "0.01 s", "-"],
            ["synchronous", "4MiB", "4.00 MiB", "3.188x", "2.04 MiB", "55.2%", "10.31 s",
             "0.97%"]]
    page = _text(words_table("sweep", columns, rows, width=80, left=("planner", "status")), 80)
    for value in ("1.80 GiB", "4.00 MiB", "2.04 MiB", "10.31 s", "synchronous"):
        assert value in page, (value, page)


def test_columns_close_up_before_a_value_leaves_its_unit() -> None:
    from autotm_core.report.tables import words_table

    # sweep --system hbm-dram-cxl --capacities 10KiB,... with a point that has no plan (a
    # status column) at 80 columns: "10.00 KiB" once took two lines
    columns = ("planner", "limit", "fast mem", "slowdown", "moved", "cost", "plan time", "gap",
               "status")
    rows = [["greedy", "10KiB", "10.00 KiB", "6.056x", "8.58 KiB", "47.6%", "0.00 s", "-", "ok"],
            ["all-fast", "1000MiB", "1000.00 MiB", "1.000x", "0 B", "100.0%", "0.00 s", "-",
             "no-plan"],
            ["greedy", "1.8MiB", "1.80 MiB", "5.566x ★", "52.54 KiB", "51.0%", "0.00 s", "-",
             "ok"]]
    page = _text(words_table("sweep", columns, rows, width=80, left=("planner", "status")), 80)
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page
    for value in ("10.00 KiB", "1000.00 MiB", "52.54 KiB", "5.566x ★", "no-plan"):
        assert value in page, (value, page)
    # where two spaces between columns fit, they stay
    wide = _text(words_table("sweep", columns, rows, width=120, left=("planner", "status")), 120)
    assert "1000MiB  1000.00 MiB" in wide, wide
