"""The exact reductions change the model's size, never its optimum, on mid-size graphs."""

from __future__ import annotations

import pytest

from autotm_core.examples.networks import cnn, mlp, training_chain
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.memory import preset

pytestmark = pytest.mark.slow  # exact solves (gap 0) of the full and reduced models


@pytest.mark.highs
@pytest.mark.parametrize("make", [lambda: training_chain(12), lambda: mlp(batch=8),
                                  lambda: cnn(batch=2)], ids=["chain-12", "mlp", "cnn"])
@pytest.mark.parametrize("fraction", [0.3, 0.6])
def test_reduced_model_has_the_full_models_optimum(make, fraction):
    graph = make()
    system = preset("optane-2019")
    capacity = int(graph.liveness.peak_nbytes * fraction)
    full = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0,
                      options=FormulationOptions(reduce=False), warm_start=False)
    reduced = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.0)
    assert reduced.n_variables < full.n_variables
    assert reduced.step_seconds == pytest.approx(full.step_seconds, rel=1e-7)
