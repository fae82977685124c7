"""The simulator: a hand-checked example, numba equal to the reference, refusal of bad plans."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.costs.model import SeparableCosts
from autotm_core.costs.roofline import roofline_costs
from autotm_core.errors import PlanError
from autotm_core.plans import MoveKind, Residency
from autotm_core.simulation import Engine, simulate
from plans.random_plans import random_plan, three_pools, tiny_graph, tiny_plan, tiny_system
from plans.test_verify_properties import chain


def per_entry_costs(fast_seconds: float, slow_seconds: float) -> SeparableCosts:
    """Each tensor a kernel touches costs ``fast_seconds`` in fast memory, else ``slow_seconds``."""
    live = tiny_graph().liveness
    n_entries = len(live.kernel_tensors)
    coefficients = np.zeros((n_entries, 1, 2))
    coefficients[:, 0, 0], coefficients[:, 0, 1] = fast_seconds, slow_seconds
    return SeparableCosts(
        n_pools=2,
        kernel_ptr=live.kernel_ptr,
        constants=np.zeros((live.n_kernels, 1)),
        coefficients=coefficients,
    )


@pytest.mark.parametrize("engine", list(Engine))
def test_hand_checked_example(engine: Engine) -> None:
    # configs: k0 x fast, w slow, a fast; k1 a, b fast; k2 w, b, c fast; k3 a slow, c, loss fast
    sim = simulate(
        tiny_plan(), tiny_graph(), tiny_system(), per_entry_costs(1e-9, 1e-8), engine=engine
    )
    assert sim.kernel_seconds == pytest.approx([12e-9, 2e-9, 3e-9, 12e-9])
    # w (50 B) slow -> fast before k2 at 8 GB/s; a (200 B) fast -> slow during k1 at 3 GB/s.
    assert sim.sync_seconds == pytest.approx([0, 0, 50 / 8e9, 0])
    assert sim.async_seconds == pytest.approx([0, 200 / 3e9, 0, 0])
    assert sim.effective_seconds == pytest.approx([12e-9, 200 / 3e9, 3e-9, 12e-9])
    assert sim.step_seconds == pytest.approx(27e-9 + 200 / 3e9 + 50 / 8e9)
    assert sim.pool_nbytes.tolist() == [[300, 516, 450, 108], [50, 250, 250, 250]]
    assert sim.peak_nbytes.tolist() == [516, 250]
    assert sim.peak_kernels.tolist() == [1, 1]
    assert sim.moved_nbytes == {("slow", "fast"): 50, ("fast", "slow"): 200}
    assert sim.move_counts == {("slow", "fast"): 1, ("fast", "slow"): 1}
    assert sim.kind_nbytes == {MoveKind.SYNC: 50, MoveKind.ASYNC: 200}
    assert sim.capacities == (1000, None)


def test_an_async_move_hides_behind_a_long_kernel() -> None:
    sim = simulate(tiny_plan(), tiny_graph(), tiny_system(), per_entry_costs(1e-6, 1e-5))
    assert sim.effective_seconds[1] == pytest.approx(2e-6)
    assert sim.step_seconds == pytest.approx(sim.kernel_seconds.sum() + 50 / 8e9)


@settings(max_examples=20, deadline=None)
@given(layers=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_numba_equals_reference(layers: int, seed: int) -> None:
    graph, system = chain(layers), three_pools()
    plan = random_plan(graph, system, seed, move_rate=0.4)
    costs = roofline_costs(graph, system)
    fast = simulate(plan, graph, system, costs)
    slow = simulate(plan, graph, system, costs, engine=Engine.REFERENCE)
    for field in ("kernel_seconds", "sync_seconds", "async_seconds", "effective_seconds"):
        np.testing.assert_allclose(getattr(fast, field), getattr(slow, field), rtol=1e-12)
    for field in ("pool_nbytes", "pair_nbytes", "pair_counts"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(slow, field))
    assert fast.step_seconds == pytest.approx(slow.step_seconds, rel=1e-12)
    # Every byte of every residency is counted once per kernel it covers.
    size = {t.name: t.nbytes for t in graph.tensors}
    covered = sum(size[r.tensor] * (r.last - r.first + 1) for r in plan.residencies)
    assert fast.pool_nbytes.sum() == covered + graph.liveness.workspace_nbytes.sum()


def test_refuses_what_it_cannot_place() -> None:
    plan = tiny_plan()
    costs = per_entry_costs(1e-9, 1e-8)
    graph, system = tiny_graph(), tiny_system()
    bad = attrs.evolve(plan, residencies=[*plan.residencies, Residency("a", "nvme", 0, 1)])
    with pytest.raises(PlanError, match="nvme"):
        simulate(bad, graph, system, costs)
    with pytest.raises(PlanError, match="do not span"):
        simulate(
            attrs.evolve(plan, residencies=[Residency("a", "fast", 0, 9)]), graph, system, costs
        )
    with pytest.raises(PlanError, match="kernel configurations"):
        simulate(attrs.evolve(plan, configs=plan.configs[:2]), graph, system, costs)
    with pytest.raises(PlanError, match="3 pools"):
        simulate(plan, graph, system, roofline_costs(graph, three_pools()))


def test_a_plan_with_a_number_too_large_is_refused_not_crashed() -> None:
    plan = tiny_plan()
    moves = [attrs.evolve(plan.moves[0], kernel=10**30), *plan.moves[1:]]
    graph, system = tiny_graph(), tiny_system()
    with pytest.raises(PlanError, match="moves\\[0\\]: kernel"):
        simulate(attrs.evolve(plan, moves=moves), graph, system, roofline_costs(graph, system))
