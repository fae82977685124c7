"""Infeasibility is explained before solving: kernel, bytes, smallest capacity."""

from __future__ import annotations

import pytest

from autotm_core.errors import CapacityError
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph

from .test_optimum import MiB, system_with, tiny_graph


@pytest.mark.highs
def test_pinned_tensors_too_big_name_the_kernel_and_smallest_capacity():
    options = FormulationOptions(pin_to_fast=True)
    # x (4 MiB, input) is pinned and live at kernel k0 only.
    with pytest.raises(CapacityError) as info:
        plan_graph(tiny_graph(), system_with(4 * MiB - 1), options=options)
    assert "'k0'" in info.value.message
    assert str(4 * MiB) in info.value.hint


@pytest.mark.highs
def test_exactly_fitting_pinned_tensors_plan():
    options = FormulationOptions(pin_to_fast=True)
    result = plan_graph(tiny_graph(), system_with(4 * MiB), options=options, relative_gap=0.0)
    assert result.plan.planner == "ilp/synchronous"


def test_a_graph_larger_than_every_pool_together_is_refused_with_the_numbers():
    from autotm_core.ilp.infeasible import check_lower_bounds

    graph = tiny_graph()
    peak = int(graph.liveness.peak_nbytes)
    system = system_with(MiB)
    system = system.with_capacity(system.pools[1].name, peak - 2 * MiB)
    with pytest.raises(CapacityError) as info:
        check_lower_bounds(graph, system, [None, None], FormulationOptions())
    message = info.value.message
    assert "more than all the pools hold together" in message
    assert f"{peak:,} bytes" in message and f"{peak - MiB:,} bytes" in message
    assert f"({MiB:,} bytes) more" in (info.value.hint or "")


def test_a_proof_of_infeasibility_says_nothing_of_zero_bytes():
    import numpy as np

    from autotm_core.ilp.infeasible import explain_infeasible

    graph = tiny_graph()
    system = system_with(MiB)
    n = len(graph.kernels)
    error = explain_infeasible(graph, system, [np.full(n, MiB), None], FormulationOptions())
    assert "at least 0 B" not in error.message
    assert "raise the capacity of" in (error.hint or "")
