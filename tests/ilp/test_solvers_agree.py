"""CBC and GLPK (every solve of plan_graph on them, relax-and-fix included for CBC) reach
HiGHS's optimum on the tiny instances."""

from __future__ import annotations

import pytest

from autotm_core.ilp.planner import plan_graph
from autotm_core.plugins import get_solver

from .test_optimum import MiB, system_with, tiny_graph


@pytest.mark.highs
@pytest.mark.parametrize("solver", [pytest.param("cbc", marks=pytest.mark.cbc),
                                    pytest.param("glpk", marks=pytest.mark.glpk)])
@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
def test_solver_agrees_with_highs(solver, formulation):
    graph, system = tiny_graph(), system_with(12 * MiB)
    expected = plan_graph(graph, system, formulation=formulation, relative_gap=0.0)
    result = plan_graph(graph, system, formulation=formulation, relative_gap=0.0,
                        solver=get_solver(solver))
    assert result.solve.solver_name == solver
    assert result.step_seconds == pytest.approx(expected.step_seconds, rel=1e-6)
