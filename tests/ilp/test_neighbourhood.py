"""Window-by-window improvement of a feasible solution (large-neighbourhood search): what
it returns is a solution of the whole model, never worse than its start, and on chain-3
(gpu-h200, 4:1) better than retiming alone, which cannot change a state."""

from __future__ import annotations

import time

import attrs
import numpy as np
import pytest

from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.incumbent import retime
from autotm_core.ilp.neighbourhood import improve_by_windows
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.search import DEFAULT_STRATEGY
from autotm_core.ilp.warm import warm_start_from_plan
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.solvers import TerminationCondition
from autotm_core.solvers.highs import HighsSolver

from .test_solve import Spy

WINDOWS_OF_4 = attrs.evolve(DEFAULT_STRATEGY, window_kernels=4)


@pytest.fixture(scope="module")
def retimed():  # type: ignore[no-untyped-def]
    """chain-3's asynchronous model on gpu-h200 at 4:1 and its synchronous plan retimed."""
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")
    synchronous = plan(problem, "synchronous", PlanSettings(addresses=False))
    index = build_program(problem.graph, problem.costs, problem.limited_system,
                          options=FormulationOptions(formulation=Formulation.ASYNCHRONOUS))
    start = warm_start_from_plan(index, synchronous.plan, problem.graph, problem.limited_system)
    assert start is not None
    found = retime(index, start, solver=HighsSolver(), time_limit_seconds=None,
                   relative_gap=1e-4)
    assert found is not None
    return index, found


@pytest.mark.highs
def test_windows_improve_on_retiming_and_keep_every_row(retimed) -> None:  # type: ignore[no-untyped-def]
    index, start = retimed
    backend = Spy()
    better = improve_by_windows(index, start.values, solver=backend, deadline=None,
                                relative_gap=1e-4, strategy=WINDOWS_OF_4)
    assert {p.name.split(" ")[0] for p in backend.problems} == {"window"}
    assert len(backend.problems) > 1  # more than one window (10 kernels, 2 per window)
    # a solution of the whole model, binaries integral, at the objective it reports
    assert index.lp.violations(better.values, tolerance=1e-6) == []
    objective = index.lp.objective_value(better.values)
    assert better.result.objective == pytest.approx(objective, rel=1e-12)
    assert better.result.best_bound is None  # each window is narrower than the model
    # retiming alone keeps every state; a window may change them: strictly faster here
    assert objective < index.lp.objective_value(start.values) * (1 - 1e-3)
    slots = np.asarray(index.columns.kind) == 0
    assert not np.array_equal(np.round(better.values[slots]), np.round(start.values[slots]))


@pytest.mark.highs
def test_a_passed_deadline_returns_the_start(retimed) -> None:  # type: ignore[no-untyped-def]
    index, start = retimed
    backend = Spy()
    same = improve_by_windows(index, start.values, solver=backend,
                              deadline=time.perf_counter(), relative_gap=1e-4,
                              strategy=WINDOWS_OF_4)
    assert backend.problems == []
    assert np.array_equal(same.values, start.values)
    assert same.result.termination is TerminationCondition.TIME_LIMIT


@pytest.mark.highs
def test_the_trail_keeps_the_newest_incumbents() -> None:
    # mlp's synchronous plan (gpu-h200, 4:1): windows of 2 kernels improve it twice
    problem = load_problem("example:mlp", "gpu-h200", limit="4:1")
    synchronous = plan(problem, "synchronous", PlanSettings(addresses=False, recompute=False))
    index = build_program(problem.graph, problem.costs, problem.limited_system,
                          options=FormulationOptions(formulation=Formulation.ASYNCHRONOUS))
    start = warm_start_from_plan(index, synchronous.plan, problem.graph, problem.limited_system)
    windows_of_2 = attrs.evolve(DEFAULT_STRATEGY, window_kernels=2)
    full = improve_by_windows(index, start, solver=HighsSolver(), deadline=None,
                              relative_gap=1e-4, strategy=windows_of_2)
    assert len(full.trail) == 2
    assert np.array_equal(full.trail[0], start)  # oldest first: the start
    short = improve_by_windows(index, start, solver=HighsSolver(), deadline=None,
                               relative_gap=1e-4,
                               strategy=attrs.evolve(windows_of_2, trail_length=1))
    assert len(short.trail) == 1  # the newest incumbent replaced: slower than the result
    kept = index.lp.objective_value(short.trail[0])
    assert short.result.objective < kept < index.lp.objective_value(start)


@pytest.mark.highs
def test_gains_the_callers_test_refuses_are_not_taken(retimed) -> None:  # type: ignore[no-untyped-def]
    index, start = retimed
    offered = []

    def refuse(values: np.ndarray) -> bool:
        offered.append(values)
        return False

    same = improve_by_windows(index, start.values, solver=HighsSolver(), deadline=None,
                              relative_gap=1e-4, strategy=WINDOWS_OF_4, accept=refuse)
    assert offered  # a faster solution was found and held to the test
    assert np.array_equal(same.values, start.values) and same.trail == ()
