"""Geometric means, slowdowns and speedups over the evaluation's rows."""

from __future__ import annotations

import math

import pytest
from benchmarks.paper.summary import best_ilp, geomean, mean_slowdown, percent, speedups_over
from hypothesis import given
from hypothesis import strategies as st

from paper.rows import row as result


def test_geomean_of_known_values() -> None:
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert geomean([]) is None


@given(st.lists(st.floats(min_value=1e-3, max_value=1e3), min_size=1, max_size=20))
def test_geomean_lies_between_min_and_max(values: list[float]) -> None:
    g = geomean(values)
    assert g is not None
    assert min(values) * (1 - 1e-9) <= g <= max(values) * (1 + 1e-9)
    assert math.log(g) == pytest.approx(sum(map(math.log, values)) / len(values), abs=1e-9)


def test_mean_slowdown_counts_cells_without_plan() -> None:
    results = [result("a", "1:1", "static", 2.0, ideal=1.0),
               result("b", "1:1", "static", 9.0, ideal=1.0),
               result("c", "1:1", "static", None),
               result("a", "4:1", "static", 5.0, ideal=1.0)]
    mean = mean_slowdown(results, planner="static", limits=["1:1"])
    assert mean.value == pytest.approx(math.sqrt(18.0))
    assert (mean.n, mean.of) == (2, 3)
    assert mean_slowdown(results, planner="greedy").value is None


def test_percent() -> None:
    assert percent(1.277) == "27.7%"
    assert percent(None) == "-"


def test_best_ilp_takes_the_faster_formulation_per_point() -> None:
    results = [result("a", "1:1", "static", 1.5), result("a", "1:1", "synchronous", 1.2),
               result("b", "1:1", "static", 1.1), result("b", "1:1", "synchronous", None)]
    best = {r.cell.label: r.cell.planner for r in best_ilp(results, ("static", "synchronous"))}
    assert best == {"a": "synchronous", "b": "static"}


def test_speedup_over_2lm() -> None:
    results = [result("a", "r", "synchronous", 2.0), result("a", "r", "2lm", 5.0),
               result("b", "r", "synchronous", 2.0)]
    assert speedups_over(results, baseline="2lm", planner="synchronous") == {
        "a": pytest.approx(2.5), "b": None}
