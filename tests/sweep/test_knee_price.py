"""The knee of a trade-off curve and the price model, on hand-computed cases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autotm_core.sweep import PointResult, PriceModel, SweepPoint, find_knee


def test_knee_is_where_the_curve_bends() -> None:
    # slowdown falls steeply until 4 units of memory, then barely: the knee is at 4
    points = [(1, 5.0), (2, 3.0), (4, 1.3), (8, 1.1), (16, 1.0)]
    assert find_knee(points) == 2
    # order of the input does not matter; the index is into the input as given
    shuffled = [points[3], points[0], points[2], points[4], points[1]]
    assert find_knee(shuffled) == 2


def test_no_knee_on_short_or_flat_curves() -> None:
    assert find_knee([(1, 2.0), (2, 1.0)]) is None
    assert find_knee([(1, 1.0), (2, 1.0), (3, 1.0)]) is None
    assert find_knee([(1, 3.0), (2, 2.0), (3, 1.0)]) is None  # a straight line has no bend


@given(st.lists(st.tuples(st.integers(1, 10**9), st.floats(1.0, 10.0)), min_size=3,
                max_size=20, unique_by=lambda p: p[0]))
def test_knee_is_an_inner_point(points: list[tuple[int, float]]) -> None:
    knee = find_knee(points)
    if knee is not None:
        xs = sorted(x for x, _ in points)
        assert xs[0] < points[knee][0] < xs[-1]


def _result(limit: str, capacity: int, slowdown: float | None, peak: int = 100) -> PointResult:
    point = SweepPoint(graph="example:cnn", system="optane-2019", planner="first-touch",
                       limit=limit)
    return PointResult(point=point, status="ok" if slowdown else "no-plan",
                       fast_capacity_nbytes=capacity, peak_nbytes=peak, all_fast_seconds=1.0,
                       step_seconds=slowdown)


def test_relative_cost_follows_the_paper_split() -> None:
    price = PriceModel()  # DRAM 2.1x PMM per byte
    assert price.relative_cost(fast_nbytes=100, peak_nbytes=100) == 1.0
    # 4:1 -> 20 bytes DRAM, 80 PMM: (20 * 2.1 + 80) / 210
    assert price.relative_cost(fast_nbytes=20, peak_nbytes=100) == pytest.approx(122 / 210)
    assert PriceModel(fast_per_slow=1.0).relative_cost(fast_nbytes=20, peak_nbytes=100) == 1.0


def test_cheapest_within_budget() -> None:
    results = [_result("0:1", 100, 1.0), _result("1:1", 50, 1.2), _result("4:1", 20, 1.9),
               _result("8:1", 11, None)]
    price = PriceModel()
    assert price.cheapest_within(results, 1.5).point.limit == "1:1"
    assert price.cheapest_within(results, 2.0).point.limit == "4:1"
    assert price.cheapest_within(results, 0.9) is None
