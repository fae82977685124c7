"""On random training graphs, three pools and any limit: every baseline's plan verifies."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.ir.graph_strategies import training_graphs

from autotm_core import Graph, MemorySystem, Pool
from autotm_core.baselines import BASELINES, run_baseline
from autotm_core.errors import CapacityError

from .conftest import assert_verifies

# Three pools, so that every pool restriction the generator draws exists; the middle one
# is bounded too, so first-touch must place addresses in two pools.
SYSTEM = MemorySystem(
    "three",
    pools=(
        Pool("hbm", None, 1e12, 1e12, 1e-7),
        Pool("dram", 1 << 26, 1e11, 1e11, 1e-7),
        Pool("pmm", None, 3e10, 1e10, 3e-7),
    ),
)


def _placeable(graph: Graph) -> Graph:
    """``graph`` with every tensor allowed in no pool at all allowed anywhere (else no plan)."""
    tensors = [attrs.evolve(t, pools=t.pools or None) for t in graph.tensors]
    return Graph(graph.name, tensors, graph.kernels)


def _plan_or_none(name: str, graph: Graph, system: MemorySystem, capacity: int) -> object:
    try:
        return run_baseline(name, graph, system, fast_capacity_nbytes=capacity)
    except CapacityError:
        return None


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs(max_layers=4).map(_placeable), st.sampled_from([0, 1, 4, 8, 50]))
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_every_plan_verifies_or_the_limit_is_impossible(
    name: str, graph: Graph, ratio: int
) -> None:
    capacity = graph.liveness.peak_nbytes // (ratio + 1)
    plan = _plan_or_none(name, graph, SYSTEM, capacity)
    if plan is not None:
        assert_verifies(plan, graph, SYSTEM, capacity)  # type: ignore[arg-type]
    if name == "greedy" and _plan_or_none("all-slow", graph, SYSTEM, capacity) is not None:
        assert plan is not None  # greedy can always fall back to slow memory
