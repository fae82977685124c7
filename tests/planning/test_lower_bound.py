"""The physical lower bound: checked by hand on a tiny graph, and never beaten by a plan,
whether a planner's or a random one."""

from __future__ import annotations

import functools

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core import Graph
from autotm_core.costs.model import TableCosts
from autotm_core.examples.networks import training_chain
from autotm_core.planning import PlanSettings, load_problem, lower_bound, plan
from autotm_core.planning.lower_bound import (
    crossing_rates,
    least_kernel_seconds,
    physical_lower_bound,
)
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from plans.random_plans import random_plan, three_pools, tiny_graph, tiny_system


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
    # both; the other 16 at k1 are a or b, produced there or before: out by k1's end.
    # At k2 all 150 outside are read at k2 or k3: in after k1 ends. Split after k1:
    # max(k0 + k1, 16 B out) + max(k2 + k3, 150 B in at 14 GB/s), the largest split.
    problem = load_problem(tiny_graph(), tiny_system(), limit="500")
    bound = physical_lower_bound(problem)
    least = least_kernel_seconds(problem.costs, 4)
    assert least.sum() == pytest.approx(problem.all_fast_seconds)
    assert least[2:].sum() < 150 / 14e9  # the fetches, not compute, bind after the split
    assert bound.split_after == 1
    assert bound.traffic_seconds == pytest.approx(max(least[:2].sum(), 16 / 8e9) + 150 / 14e9)
    assert bound.seconds == bound.traffic_seconds > max(bound.compute_seconds, 150 / 14e9)


def test_least_kernel_seconds_never_exceed_a_configuration() -> None:
    costs = load_problem(tiny_graph(), tiny_system()).costs
    separable = costs.separable()
    assert separable is not None
    tables = TableCosts(n_pools=costs.n_pools, kernel_ptr=separable.kernel_ptr,
                        tables=tuple(costs.table(k) for k in range(4)))
    fastest = np.array([costs.table(k).seconds.min() for k in range(4)])
    assert np.array_equal(least_kernel_seconds(tables, 4), fastest)
    assert (least_kernel_seconds(costs, 4) <= fastest * (1 + 1e-12)).all()


def test_no_excess_is_compute_alone() -> None:
    problem = load_problem(tiny_graph(), tiny_system(), limit="1000")
    bound = physical_lower_bound(problem)
    assert bound.traffic_seconds == 0.0 and bound.split_after == -1
    assert bound.seconds == problem.all_fast_seconds


def test_fewer_rows_or_free_small_tensors_only_weaken_it(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = load_problem("example:mlp", "gpu-h200", limit="4:1")
    monkeypatch.setattr(lower_bound, "SMALL_TENSOR_FRACTION", 0.0)
    exact = physical_lower_bound(problem).traffic_seconds
    monkeypatch.undo()
    default = physical_lower_bound(problem).traffic_seconds
    monkeypatch.setattr(lower_bound, "MAX_LP_PAIRS", 40)
    few_rows = physical_lower_bound(problem).traffic_seconds
    assert 0 < few_rows < default <= exact * (1 + 1e-7)


@functools.cache
def chain(layers: int) -> Graph:
    return training_chain(layers, base_nbytes=4096)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.booleans(), st.integers(0, 2**32 - 1))
def test_no_random_plan_beats_the_bound(layers: int, three: bool, seed: int) -> None:
    # a random valid plan, under a limit of its own fast-pool peak: it fits, so the
    # bound at that limit holds for it, whatever its moves
    graph, system = chain(layers), three_pools() if three else tiny_system(None)
    plan_ = random_plan(graph, system, seed, move_rate=0.5)
    problem = load_problem(graph, system)
    simulation = simulate(plan_, graph, system, problem.costs)
    peak = int(simulation.pool_nbytes[0].max())
    bound = physical_lower_bound(problem.with_limit(str(peak)))
    assert simulation.step_seconds >= bound.seconds * (1 - 1e-7)


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("system", ["gpu-h200", "optane-2019"])
def test_no_plan_beats_the_bound(system: str) -> None:
    problem = load_problem("example:chain-3", system, limit="4:1")
    bound = physical_lower_bound(problem)
    assert bound.traffic_seconds > 0  # the limit leaves an excess to cover
    assert 0 <= bound.split_after < len(problem.graph.kernels) - 1  # order binds
    for planner in ("first-touch", "greedy", "synchronous", "asynchronous"):
        step = plan(problem, planner, PlanSettings(time_limit_seconds=5)).step_seconds
        assert step >= bound.seconds * (1 - 1e-7), planner
