"""Recompute only: the cheapest reruns that make the step fit, no moves, else one error."""

from __future__ import annotations

import importlib
import itertools

import pytest

from autotm_core.baselines import all_fast, recompute_only
from autotm_core.baselines.common import setting
from autotm_core.baselines.rerun_plan import costs_of, pool_use
from autotm_core.errors import CapacityError
from autotm_core.presets import preset

from .blocks import MIB, blocks

GPU = preset("gpu-h200")
search_module = importlib.import_module("autotm_core.baselines.recompute_only")


def _reruns(plan, graph):  # type: ignore[no-untyped-def]
    return {(graph.kernels[r.kernel].name, graph.kernels[r.before].name) for r in plan.reruns}


def test_nothing_is_recomputed_when_the_step_fits(verifies) -> None:
    graph = blocks(3)
    peak = graph.liveness.peak_nbytes
    plan = recompute_only(graph, GPU, fast_capacity_nbytes=peak)
    verifies(plan, graph, GPU, peak)
    assert plan.reruns == () and plan.moves == ()
    assert plan.residencies == all_fast(graph, GPU, fast_capacity_nbytes=peak).residencies


def test_the_cheapest_rerun_per_byte_is_taken_first(verifies) -> None:
    graph = blocks(3)
    capacity = graph.liveness.peak_nbytes - 8 * MIB
    plan = recompute_only(graph, GPU, fast_capacity_nbytes=capacity)
    verifies(plan, graph, GPU, capacity)
    # every option frees 8 MiB at the peak; gelu's rerun is one memory-bound kernel, where
    # u needs shift and scale again (v died in the forward pass) and h a matrix product;
    # act0's gap is the longest, so it covers the peak
    assert _reruns(plan, graph) == {("act0", "fc0.backward")}
    assert plan.moves == () and plan.attributes["dropped_nbytes"] == 8 * MIB


def test_a_value_that_died_is_recomputed_by_a_chain(verifies) -> None:
    graph = blocks(3)
    capacity = graph.liveness.peak_nbytes - 24 * MIB
    plan = recompute_only(graph, GPU, fast_capacity_nbytes=capacity)
    verifies(plan, graph, GPU, capacity)
    reruns = _reruns(plan, graph)
    assert {("scale2", "act2.backward"), ("shift2", "act2.backward")} <= reruns
    # v2 is rerun for shift's sake only: written at the boundary, resident after it nowhere
    assert [(r.first, r.last) for r in plan.residencies if r.tensor == "v2"] == [
        (graph.kernel_index["scale2"], graph.kernel_index["shift2"])]


def test_random_ops_are_never_rerun_and_updated_inputs_never_read() -> None:
    graph = blocks(3, random=frozenset({0, 1, 2}))
    for d in (8, 16, 24):
        capacity = graph.liveness.peak_nbytes - d * MIB
        plan = recompute_only(graph, GPU, fast_capacity_nbytes=capacity)
        assert not any(k.startswith("act") for k, _ in _reruns(plan, graph))
    early = blocks(1, update_early=True)  # w0 is updated before fc0 could run again
    with pytest.raises(CapacityError):
        recompute_only(early, GPU, fast_capacity_nbytes=early.liveness.peak_nbytes - 16 * MIB)
    plan = recompute_only(early, GPU, fast_capacity_nbytes=early.liveness.peak_nbytes - 8 * MIB)
    assert "fc0" not in {k for k, _ in _reruns(plan, early)}


@pytest.mark.parametrize("random", [frozenset(), frozenset({1})])
@pytest.mark.parametrize("below", [8, 16, 24, 32])
def test_the_greedy_choice_is_the_cheapest_set_on_the_blocks(random, below: int) -> None:
    """Against every subset of the options (each taken with the chains it needs): the
    greedy's rerun seconds are the least of any set that fits, within 2%."""
    graph = blocks(3, random=random)
    capacity = graph.liveness.peak_nbytes - below * MIB
    plan = recompute_only(graph, GPU, fast_capacity_nbytes=capacity)
    s = setting(graph, GPU, capacity)
    search = search_module._Search(s, costs_of(s, None), s.fastest())
    options = search_module._options(s)
    best = min(
        sum(search.seconds(k) for k, _ in decided.reruns)
        for r in range(len(options) + 1) for chosen in itertools.combinations(options, r)
        if (decided := search.rebuild(list(chosen))) is not None
        and pool_use(s, s.fastest(), decided, 0).max() <= capacity)
    assert plan.attributes["rerun_seconds"] == pytest.approx(best, rel=0.02)


def test_no_recomputation_fits_is_one_capacity_error() -> None:
    graph = blocks(3)
    with pytest.raises(CapacityError) as caught:
        recompute_only(graph, GPU, fast_capacity_nbytes=graph.liveness.peak_nbytes // 3)
    message = caught.value.message
    assert message.startswith("recompute-only (") and "does not fit: pool 'hbm'" in message
    assert "moves tensors" in caught.value.hint
