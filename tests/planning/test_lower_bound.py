"""The physical lower bound: checked by hand on a tiny graph, and never beaten by a plan."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.planning import load_problem, plan
from autotm_core.planning.lower_bound import crossing_rates, physical_lower_bound
from autotm_core.presets import preset
from plans.random_plans import tiny_graph, tiny_system


def test_rates_add_kernel_accesses_unless_they_share_the_link() -> None:
    # tiny_system: into fast sync 8, async 4, slow read 10; out sync 6, async 3, write 5 (GB/s)
    assert crossing_rates(tiny_system()) == (14e9, 8e9)
    shared = attrs.evolve(tiny_system(), links=tuple(
        attrs.evolve(link, kernel_traffic=True) for link in tiny_system().links))
    assert crossing_rates(shared) == (8e9, 6e9)
    assert crossing_rates(preset("gpu-h200")) == (50e9, 50e9)


def test_tiny_graph_by_hand() -> None:
    # live bytes per kernel: 350, 566 (16 of workspace), 650, 358; at 500 bytes of fast
    # memory k1 is 66 over and k2 150. w (50, a parameter: it only crosses in) covers
    # both; the other 100 at k2 must be produced tensors (a, b, c), which cross both
    # ways: 100 bytes out at 8 GB/s is the slower direction (in: 150 at 14 GB/s).
    bound = physical_lower_bound(load_problem(tiny_graph(), tiny_system(), limit="500"))
    assert bound.bytes_out == pytest.approx(100)
    assert bound.traffic_seconds == pytest.approx(100 / 8e9)
    assert bound.seconds == max(bound.compute_seconds, bound.traffic_seconds)


def test_no_excess_is_compute_alone() -> None:
    problem = load_problem(tiny_graph(), tiny_system(), limit="1000")
    bound = physical_lower_bound(problem)
    assert bound.bytes_in == bound.bytes_out == bound.traffic_seconds == 0.0
    assert bound.seconds == problem.all_fast_seconds


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("system", ["gpu-h200", "optane-2019"])
def test_no_plan_beats_the_bound(system: str) -> None:
    problem = load_problem("example:chain-3", system, limit="4:1")
    bound = physical_lower_bound(problem)
    assert bound.traffic_seconds > 0  # the limit leaves an excess to cover
    for planner in ("first-touch", "greedy", "synchronous", "asynchronous"):
        step = plan(problem, planner, time_limit_seconds=5).step_seconds
        assert step >= bound.seconds * (1 - 1e-9), planner
