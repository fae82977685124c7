"""Copies that span kernels in the asynchronous model: solved exactly on small chains, every
plan verifies, the simulator prices it at its objective (never above), and the model with
spanning copies is never worse than the one whose copies overlap one kernel each."""

from __future__ import annotations

import pytest

from autotm_core.costs import roofline_costs
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.decode import decode_plan, objective_of, settled_values
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.plans import MoveKind, verify_plan
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig
from autotm_core.solvers.highs import HighsSolver


def _solve(layers: int, system_name: str, share: int, *, spans: bool):  # type: ignore[no-untyped-def]
    graph = training_chain(layers)
    system = preset(system_name)
    system = system.with_capacity(system.pools[0].name, graph.liveness.peak_nbytes // share)
    costs = roofline_costs(graph, system)
    index = build_program(graph, costs, system, options=FormulationOptions(
        formulation=Formulation.ASYNCHRONOUS, async_spans=spans))
    result, values = HighsSolver().solve(to_matrix_problem(index.lp),
                                       SolverConfig(relative_gap=1e-7, time_limit_seconds=120))
    assert values is not None, result
    values = settled_values(index, values)
    plan = decode_plan(index, values, graph, system, planner="test")
    return graph, system, costs, objective_of(index, values), plan


@pytest.mark.highs
@pytest.mark.parametrize(("layers", "system_name", "share"),
                         [(3, "gpu-h200", 3), (4, "optane-2019", 3)])
def test_spanning_copies_price_at_the_simulator_and_never_lose(
        layers: int, system_name: str, share: int) -> None:
    graph, system, costs, objective, plan = _solve(layers, system_name, share, spans=True)
    assert verify_plan(plan, graph, system) == []
    simulated = simulate(plan, graph, system, costs).step_seconds
    assert simulated <= objective * (1 + 1e-9)
    assert simulated == pytest.approx(objective, rel=1e-6)
    spanning = [m for m in plan.moves if m.spans_kernels]
    assert spanning and all(m.kind is MoveKind.ASYNC for m in spanning)
    *_, one_kernel_objective, one_kernel = _solve(layers, system_name, share, spans=False)
    assert not any(m.spans_kernels for m in one_kernel.moves)
    assert objective <= one_kernel_objective * (1 + 1e-7)


@pytest.mark.highs
def test_an_edge_copying_into_two_pools_over_one_channel_is_one_coefficient() -> None:
    """On ``hbm-dram-cxl`` every link shares one engine, so an asynchronous edge that
    copies a tensor into DRAM and CXL at once loads it twice. The flight rows named the
    edge once per copy, and HiGHS refuses a row naming a column twice ("duplicate
    entries"): ``example:cnn`` at 3:1 raised SolverError asynchronously. Now one
    coefficient carries both copies' seconds, and the plan is priced as simulated."""
    import numpy as np

    from autotm_core.planning import PlanSettings, load_problem, plan

    problem = load_problem("example:cnn", "hbm-dram-cxl", limit="3:1")
    index = build_program(problem.graph, problem.costs, problem.limited_system,
                          options=FormulationOptions(formulation=Formulation.ASYNCHRONOUS))
    start, cols, _ = index.lp.csr()
    rows = np.repeat(np.arange(index.lp.n_rows, dtype=np.int64), np.diff(start))
    keys = rows * index.lp.n_vars + cols
    assert len(np.unique(keys)) == len(keys)
    settings = PlanSettings(time_limit_seconds=10, recompute=False, addresses=False)
    asynchronous = plan(problem, "asynchronous", settings)
    assert asynchronous.solve is not None and asynchronous.source == "ilp"
    assert asynchronous.step_seconds <= plan(problem, "synchronous", settings).step_seconds
