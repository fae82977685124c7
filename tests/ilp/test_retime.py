"""An asynchronous model whose LP relaxation does not fit the time limit improves the held
plan a window of kernels at a time (under a time limit that leaves the windows their
time), or retimes it (keeps its states and solves only when its copies happen); under a
time limit the full MIP, whose root needs that LP, is skipped, and the plan is labelled
stopped by the time limit."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from autotm_core.ilp.planner import plan_graph
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.plans import MoveKind
from autotm_core.solvers import SolutionStatus, SolveResult, TerminationCondition
from autotm_core.solvers.highs import HighsSolver

from .test_solve import Spy


@attrs.define
class LpOutOfTime(Spy):
    """HiGHS, except that every LP relaxation stops at its limit without a solution."""

    def solve(self, problem, config=None, start=None):  # type: ignore[no-untyped-def]
        self.problems.append(problem)
        if not np.asarray(problem.is_integer).any():
            return SolveResult(solver_name=self.name, solver_version="",
                               termination=TerminationCondition.TIME_LIMIT,
                               status=SolutionStatus.NO_SOLUTION), None
        return HighsSolver().solve(problem, config, start)


@pytest.fixture(scope="module")
def point():  # type: ignore[no-untyped-def]
    """chain-3 on gpu-h200 at 4:1, with its synchronous plan."""
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")
    return problem, plan(problem, "synchronous", PlanSettings(addresses=False))


@pytest.mark.highs
def test_a_relaxation_out_of_time_improves_the_held_plan(point) -> None:  # type: ignore[no-untyped-def]
    problem, synchronous = point
    backend = LpOutOfTime()
    result = plan_graph(problem.graph, problem.limited_system, costs=problem.costs,
                        formulation="asynchronous", solver=backend, time_limit_seconds=60,
                        start_plans=[synchronous.plan])
    names = [p.name for p in backend.problems]
    # improved a window of kernels at a time (which retimes copies and changes states):
    # no full MIP after it
    assert names[0] == "relax-and-fix"
    assert len(names) > 2 and all(name.startswith("window ") for name in names[1:])
    assert result.solve.termination is TerminationCondition.TIME_LIMIT  # not "optimal"
    assert result.bound_seconds is None
    # its copies overlapping kernels now: faster than the held plan
    assert result.step_seconds < synchronous.step_seconds * (1 - 1e-6)
    assert any(m.kind is MoveKind.ASYNC for m in result.plan.moves)


@pytest.mark.highs
def test_without_a_time_limit_the_full_model_is_solved_from_the_retimed_plan(
        point) -> None:  # type: ignore[no-untyped-def]
    problem, synchronous = point
    backend = LpOutOfTime()
    exact = plan_graph(problem.graph, problem.limited_system, costs=problem.costs,
                       formulation="asynchronous", solver=backend, start_plans=[synchronous.plan])
    # no time limit: the held plan is retimed (no windows), and that is only the full MIP's
    # start
    assert [p.name for p in backend.problems] == ["relax-and-fix", "retime",
                                                  problem.graph.name]
    assert exact.step_seconds < synchronous.step_seconds * (1 - 1e-6)


@pytest.mark.highs
def test_a_plan_the_caller_refuses_falls_back_to_an_earlier_incumbent_of_the_windows(
        point) -> None:  # type: ignore[no-untyped-def]
    problem, synchronous = point
    common = dict(costs=problem.costs, formulation="asynchronous", time_limit_seconds=60,
                  start_plans=[synchronous.plan])
    best = plan_graph(problem.graph, problem.limited_system, solver=LpOutOfTime(), **common)
    refused = []

    def fits(plan):  # type: ignore[no-untyped-def]
        # e.g. packing: here, every plan as fast as the windows' best is refused
        ok = plan.attributes["objective_seconds"] > best.objective_seconds * (1 + 1e-9)
        if not ok:
            refused.append(plan)
        return ok

    fallback = plan_graph(problem.graph, problem.limited_system, solver=LpOutOfTime(),
                          fits=fits, **common)
    assert refused  # the best plan was offered and refused
    assert fits(fallback.plan)  # an earlier incumbent, verified and simulated
    assert fallback.objective_seconds > best.objective_seconds
    assert fallback.step_seconds <= synchronous.step_seconds * (1 + 1e-9)
