"""Addresses of plans whose copies span kernels: both ends of a copy hold their bytes over
the whole flight, so the packing of every random spanning plan verifies."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.addresses import assign_offsets
from autotm_core.plans import verify_plan
from plans.random_spans import random_spanning_plan
from plans.test_verify_properties import chain, system


@settings(max_examples=20, deadline=None)
@given(layers=st.integers(1, 4), three=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_packed_spanning_plans_verify(layers: int, three: bool, seed: int) -> None:
    graph, sys_ = chain(layers), system(three)
    plan = random_spanning_plan(graph, sys_, seed, move_rate=0.5)
    result = assign_offsets(plan, graph, sys_)
    assert result.plan.has_offsets
    assert verify_plan(result.plan, graph, sys_) == []
