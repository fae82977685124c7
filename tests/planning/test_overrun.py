"""A solver that does not stop at its time limit cannot keep ``plan()`` past the limit and
its grace: its solve is abandoned and the best plan held is returned, labelled so (issue
26: the Llama-7B-shaped step's whole-model MIP ran 11.8 s past a 300 s budget, HiGHS
checking neither its limit nor a cancellation for 13.7 s)."""

from __future__ import annotations

import time

import attrs
import pytest

from autotm_core import plugins
from autotm_core.ilp.search import DEFAULT_STRATEGY
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.plans import verify_plan
from autotm_core.solvers import MatrixProblem
from solvers.stall import Stall, StallsSome, stall  # noqa: F401 (the fixture)

LIMIT_SECONDS = 6.0
GRACE_SECONDS = DEFAULT_STRATEGY.grace_seconds(LIMIT_SECONDS)


def _plan(monkeypatch: pytest.MonkeyPatch, stall: Stall, settings: PlanSettings, *,  # noqa: F811
          nth: int = 0):  # type: ignore[no-untyped-def]
    """The synchronous plan of a chain, the ``nth`` solve of a whole model (a MIP named
    after the graph: the approximate planner's, each exact stage's full MIP) hanging."""
    problem = load_problem("example:chain-8", "optane-2019", limit="4:1")
    whole: list[str] = []

    def picks(model: MatrixProblem) -> bool:
        if model.name != problem.graph.name or not model.is_integer.any():
            return False
        whole.append(model.name)
        return len(whole) == nth + 1

    backend = StallsSome(stall, picks=picks)
    monkeypatch.setattr(plugins, "get_solver", lambda _name: backend)
    started = time.perf_counter()
    outcome = plan(problem, "synchronous", settings)
    return outcome, time.perf_counter() - started, backend, problem


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("after_a_solution", [False, True])
def test_the_whole_model_that_does_not_stop_is_abandoned_and_the_held_plan_returned(
        monkeypatch: pytest.MonkeyPatch, stall: Stall,  # noqa: F811
        after_a_solution: bool) -> None:
    stall.after_a_solution = after_a_solution
    # the whole model solved after the stretches, however long they took
    strategy = attrs.evolve(DEFAULT_STRATEGY, stretch_kernels=6, full_solve_stretch_factor=0.0)
    outcome, took, backend, problem = _plan(monkeypatch, stall, PlanSettings(
        mode="approximate", time_limit_seconds=LIMIT_SECONDS, relative_gap=0.0,
        strategy=strategy))
    assert backend.hung == [problem.graph.name] and stall.stalled == 1
    assert took <= LIMIT_SECONDS + GRACE_SECONDS
    assert outcome.solve is not None and outcome.solve.termination == "abandoned"
    assert not outcome.solve.proven_optimal
    assert "abandoned" in outcome.note
    assert verify_plan(outcome.plan, problem.graph, problem.limited_system) == []
    assert outcome.step_seconds <= plan(problem, "greedy").step_seconds


@pytest.mark.slow
@pytest.mark.highs
def test_an_exact_full_solve_that_does_not_stop_is_abandoned_in_time(
        monkeypatch: pytest.MonkeyPatch, stall: Stall) -> None:  # noqa: F811
    # the static stage's full MIP solves; the synchronous one's hangs
    outcome, took, backend, problem = _plan(monkeypatch, stall, PlanSettings(
        mode="exact", addresses=False, time_limit_seconds=LIMIT_SECONDS, relative_gap=0.0),
        nth=1)
    assert backend.hung == [problem.graph.name] and stall.stalled == 1
    assert took <= LIMIT_SECONDS + GRACE_SECONDS
    assert outcome.solve is not None and outcome.solve.termination == "abandoned"
    assert "abandoned" in outcome.note
    assert verify_plan(outcome.plan, problem.graph, problem.limited_system) == []


@pytest.mark.slow
@pytest.mark.highs
def test_a_search_whose_solves_cannot_start_returns_the_best_plan_held(
        monkeypatch: pytest.MonkeyPatch, stall: Stall) -> None:  # noqa: F811
    # a solve abandoned in this process holds HiGHS: the next point's first stage cannot
    # solve at all (a quick-grid sweep lost a point so), and its held plan is returned
    settings = PlanSettings(mode="exact", addresses=False, time_limit_seconds=LIMIT_SECONDS,
                            relative_gap=0.0, recompute=False)
    _, _, _, problem = _plan(monkeypatch, stall, settings)
    assert stall.stalled == 1
    started = time.perf_counter()
    outcome = plan(problem, "static", attrs.evolve(settings, time_limit_seconds=2.0))
    assert time.perf_counter() - started <= 2.0 + DEFAULT_STRATEGY.grace_seconds(2.0)
    assert verify_plan(outcome.plan, problem.graph, problem.limited_system) == []
    assert outcome.solve is not None and outcome.solve.termination == "no_solution"
    assert not outcome.solve.proven_optimal and "no plan" in outcome.note
    assert outcome.step_seconds <= plan(problem, "first-touch").step_seconds * (1 + 1e-9)


@pytest.mark.highs
def test_address_fitting_out_of_time_returns_the_best_plan_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Inception v4 at 120 s under load: each stage's tightened round found no plan in time,
    # the fitting loop said CapacityError (no plan could be given addresses), and the call
    # raised it though greedy's plan was held; out of time is not out of room
    from autotm_core.errors import CapacityError, NoPlanFoundError
    from autotm_core.planning import ilp as planning_ilp

    def out_of_time(*_args: object, **_kwargs: object) -> None:
        try:
            raise NoPlanFoundError("solver 'highs' found no plan (abandoned)")
        except NoPlanFoundError as exc:
            raise CapacityError("no plan could be given addresses that fit: tightening "
                                "left no plan") from exc

    monkeypatch.setattr(planning_ilp, "_exact", out_of_time)
    problem = load_problem("example:cnn", "optane-2019", limit="4:1")
    outcome = plan(problem, "synchronous", PlanSettings(mode="exact", time_limit_seconds=30.0))
    assert verify_plan(outcome.plan, problem.graph, problem.limited_system) == []
    assert "no plan that fits" in outcome.note
