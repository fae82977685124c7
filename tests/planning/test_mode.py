"""Choosing exact or approximate planning by the graph's size."""

import pytest

from autotm_core.examples.networks import training_chain


def test_auto_mode_follows_the_size_and_bad_modes_are_usage_errors():
    from autotm_core.errors import UsageError
    from autotm_core.planning import PlanMode, resolve_mode

    graph = training_chain(6)  # 19 kernels
    assert resolve_mode(graph, "auto") is PlanMode.EXACT
    assert resolve_mode(graph, "AUTO", threshold_kernels=10) is PlanMode.APPROXIMATE
    assert resolve_mode(graph, "approximate") is PlanMode.APPROXIMATE
    with pytest.raises(UsageError, match="unknown planning mode 'fast'"):
        resolve_mode(graph, "fast")
