"""Relax-and-fix: a feasible start with a proven bound from the LP relaxation."""

from __future__ import annotations

from fractions import Fraction

import pytest

from autotm_core import preset
from autotm_core.costs import roofline_costs
from autotm_core.examples import build_example
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.incumbent import RelaxAndFix, relax_and_fix
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.plugins import get_solver
from autotm_core.units import fast_capacity_for_ratio


def test_relax_and_fix_is_feasible_and_bounded_by_the_lp() -> None:
    graph = build_example("chain-30")
    capacity = fast_capacity_for_ratio(graph.liveness.peak_nbytes, Fraction(4))
    system = preset("optane-2019").with_capacity("dram", capacity)
    index = build_program(graph, roofline_costs(graph, system), system, None, FormulationOptions())
    found = relax_and_fix(index, solver=get_solver("highs"), time_limit_seconds=30,
                          relative_gap=0.01)
    assert isinstance(found, RelaxAndFix)
    assert index.lp.violations(found.values, tolerance=1e-6) == []
    result = found.result
    assert result.best_bound is not None and result.objective is not None
    assert result.best_bound <= result.objective * (1 + 1e-9)


@pytest.mark.slow
def test_plan_graph_is_as_good_with_and_without_relax_and_fix() -> None:
    graph = build_example("chain-15")  # chain-30's proof of the optimum took 44 s
    capacity = fast_capacity_for_ratio(graph.liveness.peak_nbytes, Fraction(4))
    system = preset("optane-2019")
    fast = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=0.01)
    exact = plan_graph(graph, system, fast_capacity_nbytes=capacity, relative_gap=1e-6,
                       warm_start=False)
    assert fast.solve.gap is not None and fast.solve.gap <= 0.01 + 1e-9
    assert fast.step_seconds <= exact.step_seconds * 1.01 + 1e-12
