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
