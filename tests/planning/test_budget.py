"""One deadline for the whole planning call, and where its time went."""

from __future__ import annotations

import logging
import time

import attrs
import numpy as np
import pytest

from autotm_core.ilp.search import DEFAULT_STRATEGY, Budget, ModelBuilt, PhaseStarted
from autotm_core.planning import PLANNERS, PlanSettings, load_problem, plan
from autotm_core.planning.ilp import IlpSettings, plan_ilp
from autotm_core.plans import MoveKind, verify_plan
from autotm_core.solvers import (
    SolutionStatus,
    SolveResult,
    TerminationCondition,
)
from autotm_core.solvers.highs import HighsSolver
from ilp.test_solve import Spy

MIN_SOLVE_SECONDS = DEFAULT_STRATEGY.min_solve_seconds


def test_an_unlimited_budget_gives_no_limits() -> None:
    budget = Budget.of(None)
    assert budget.remaining() is None and budget.limit(0.5) is None
    assert budget.until(0.5) is None and not budget.expired


def test_limits_are_shares_of_what_remains_less_the_reserve() -> None:
    budget = Budget.of(100.0)
    limit = budget.limit(1 / 4, reserve=20.0)
    assert limit is not None and 19.0 < limit <= 20.0
    until = budget.until(0.5)
    assert until is not None and until - time.perf_counter() <= 50.0


def test_past_the_deadline_a_solve_still_gets_a_moment() -> None:
    budget = Budget(time.perf_counter() - 1.0, min_solve_seconds=MIN_SOLVE_SECONDS)
    assert budget.expired and budget.remaining() == 0.0
    assert budget.limit() == MIN_SOLVE_SECONDS


def test_the_grace_past_a_time_limit_is_a_second_or_two_percent() -> None:
    assert DEFAULT_STRATEGY.grace_seconds(None) == 0.0
    assert DEFAULT_STRATEGY.grace_seconds(10.0) == 1.0
    assert DEFAULT_STRATEGY.grace_seconds(300.0) == pytest.approx(6.0)


def test_a_solve_is_abandoned_within_the_grace_less_what_follows_it() -> None:
    budget = Budget.of(100.0, grace_seconds=2.0, answer_seconds=0.1)
    assert budget.deadline is not None
    assert budget.abandon_at(reserve=0.4) == pytest.approx(budget.deadline + 1.5)
    assert budget.part(0.5).grace_seconds == 2.0 and budget.part(0.5).answer_seconds == 0.1
    assert Budget.of(None, grace_seconds=2.0).abandon_at() is None
    late = Budget(time.perf_counter() - 10.0, min_solve_seconds=MIN_SOLVE_SECONDS,
                  grace_seconds=1.0)
    at = late.abandon_at()  # a solve started late gets its moment, as its limit does
    assert at is not None and at >= time.perf_counter() + MIN_SOLVE_SECONDS - 0.05


def test_build_estimates_scale_to_the_machine_not_to_recomputing_models() -> None:
    from autotm_core.ilp.options import Formulation

    budget = Budget.of(60.0)
    base = budget.build_estimate(1_000, Formulation.ASYNCHRONOUS)
    budget.built(1_000, Formulation.SYNCHRONOUS, 2.0, recompute=True)  # larger, not slower
    assert budget.build_estimate(1_000, Formulation.ASYNCHRONOUS) == base
    budget.built(1_000, Formulation.SYNCHRONOUS, 1.4)  # twice the nominal 0.7 ms a kernel
    assert budget.build_estimate(1_000, Formulation.ASYNCHRONOUS) == pytest.approx(2 * base)


def test_the_whole_model_is_retimed_only_with_its_build_time_left() -> None:
    # HiGHS cannot stop in the presolve of the whole model, which takes about its build
    from types import SimpleNamespace

    from autotm_core.ilp.search.model import _time_for_retime

    def state(limit: float | None) -> SimpleNamespace:
        return SimpleNamespace(budget=Budget.of(limit), reserve=8.0, build_seconds=8.0,
                               strategy=DEFAULT_STRATEGY)

    assert _time_for_retime(state(None)) and _time_for_retime(state(17.0))
    assert not _time_for_retime(state(15.0))


def test_phases_are_summed_per_stage_in_order() -> None:
    budget = Budget(None)
    budget.add("held plans", 1.0)
    stage = budget.part(1.0, stage="static")
    stage.add("solve", 2.0)
    stage.add("packing", 0.5)
    stage.add("solve", 1.0)
    assert [(p.name, p.seconds) for p in budget.phases()] == [
        ("held plans", 1.0), ("static: solve", 3.0), ("static: packing", 0.5)]


@pytest.mark.highs
def test_an_ilp_outcome_says_where_its_time_went() -> None:
    problem = load_problem("example:mlp", "optane-2019", limit="4:1")
    heard: list[object] = []
    outcome = plan(problem, "synchronous",
                   PlanSettings(time_limit_seconds=30, recompute=False), listener=heard.append)
    names = [p.name for p in outcome.phases]
    assert names[0] == "held plans"
    assert {"static: build", "synchronous: build", "synchronous: packing"} <= set(names)
    assert sum(p.seconds for p in outcome.phases) <= outcome.plan_seconds
    said = [e.says for e in heard if isinstance(e, PhaseStarted)]
    assert any("first-touch" in line for line in said)
    assert any(line.startswith("building the synchronous model") for line in said)
    assert [e.stage for e in heard if isinstance(e, ModelBuilt)] == ["static", "synchronous"]


@attrs.define
class OutOfTimeWhenArmed(Spy):
    """HiGHS, until armed: then every integer solve stops at its limit without a plan."""

    armed: bool = False

    def solve(self, problem, config=None, start=None):  # type: ignore[no-untyped-def]
        if self.armed and np.asarray(problem.is_integer).any():
            return SolveResult(solver_name=self.name, solver_version="",
                               termination=TerminationCondition.TIME_LIMIT,
                               status=SolutionStatus.NO_SOLUTION), None
        return HighsSolver().solve(problem, config, start)


@pytest.mark.highs
def test_a_richer_stage_out_of_time_keeps_the_simpler_plan() -> None:
    problem = load_problem("example:chain-4", "gpu-h200", limit="1:1")
    backend = OutOfTimeWhenArmed()

    def arm(event: object) -> None:
        if isinstance(event, ModelBuilt) and event.stage == "asynchronous":
            backend.armed = True

    settings = IlpSettings.of(PlanSettings(mode="exact"), problem.graph, backend)
    outcome = plan_ilp(problem, PLANNERS["asynchronous"], settings, warm_starts=(),
                       listener=arm)
    synchronous = plan(problem, "synchronous")
    assert backend.armed
    assert outcome.step_seconds <= synchronous.step_seconds * (1 + 1e-9)
    assert outcome.planner.name == "asynchronous" and outcome.plan.has_offsets
    assert "the asynchronous formulation gave no plan" in outcome.note
    assert not verify_plan(outcome.plan, problem.graph, problem.limited_system)


@pytest.mark.highs
def test_approximate_asynchronous_planning_hands_over_a_synchronous_plan() -> None:
    problem = load_problem("example:chain-4", "gpu-h200", limit="1:1")
    outcome = plan(problem, "asynchronous",
                   PlanSettings(mode="approximate", time_limit_seconds=20))
    names = [p.name for p in outcome.phases]
    assert "synchronous: approximate" in names and "asynchronous: approximate" in names
    assert "static: approximate" not in names
    assert not verify_plan(outcome.plan, problem.graph, problem.limited_system)
    # the synchronous plan handed over, improved a window of kernels at a time: copies
    # overlap kernels now, and the plan is faster than the synchronous one
    synchronous = plan(problem, "synchronous",
                       PlanSettings(mode="approximate", time_limit_seconds=10))
    assert outcome.source == "ilp by windows"
    assert any(m.kind is MoveKind.ASYNC for m in outcome.plan.moves)
    assert outcome.step_seconds < synchronous.step_seconds * (1 - 1e-3)


@pytest.mark.highs
def test_no_richer_stage_starts_without_the_time_to_build_its_model() -> None:
    # never enough time after the first stage
    strategy = attrs.evolve(DEFAULT_STRATEGY, setup_factor=1e9)
    problem = load_problem("example:mlp", "optane-2019", limit="4:1")
    outcome = plan(problem, "asynchronous",
                   PlanSettings(time_limit_seconds=30, strategy=strategy, recompute=False))
    assert "too little of the time limit was left to plan the synchronous" in outcome.note
    assert not outcome.plan.moves  # the static plan
    assert not [p for p in outcome.phases if p.name.startswith("synchronous")]
    unlimited = plan(problem, "synchronous")  # no limit: every stage runs
    assert not unlimited.note or "too little" not in unlimited.note


@pytest.mark.highs
def test_a_stage_takes_the_time_that_no_later_stage_could_use(caplog, monkeypatch) -> None:
    # an asynchronous model that would take forever to build: no time after the
    # synchronous stage's share could start it, so the synchronous stage takes all of it
    estimate = Budget.build_estimate

    def slow_asynchronous(self, kernels, formulation):  # type: ignore[no-untyped-def]
        return 1e6 if formulation.value == "asynchronous" else estimate(self, kernels,
                                                                         formulation)

    problem = load_problem("example:mlp", "optane-2019", limit="4:1")
    settings = PlanSettings(time_limit_seconds=30, recompute=False)
    with caplog.at_level(logging.INFO, logger="autotm_core.planning.ilp"):
        plan(problem, "asynchronous", settings)
    assert "takes all the time left" not in caplog.text
    monkeypatch.setattr(Budget, "build_estimate", slow_asynchronous)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="autotm_core.planning.ilp"):
        outcome = plan(problem, "asynchronous", settings)
    assert ("the synchronous stage takes all the time left: after its share, too little "
            "would be left to plan the asynchronous formulation") in caplog.text
    assert "too little of the time limit was left to plan the asynchronous" in outcome.note


def test_a_solver_optimal_is_not_taken_on_its_word() -> None:
    # HiGHS 1.16 once returned a warm start's values while reporting a 2.5% better objective
    from autotm_core.planning.ilp import _stats
    from autotm_core.solvers.base import SolutionStatus, SolveResult, TerminationCondition

    said = SolveResult(solver_name="highs", solver_version="1.16.0",
                       termination=TerminationCondition.GAP_REACHED,
                       status=SolutionStatus.OPTIMAL, objective=942.96, best_bound=940.0)

    def stats(step: float):  # type: ignore[no-untyped-def]
        return _stats(said, objective=942.96, build_seconds=0.0, warm_started=True,
                      bound=940.0, step_seconds=step, restrictions=(), interrupted=False,
                      relative_gap=0.01)

    assert stats(942.96).proven_optimal
    wrong = stats(966.75)  # the plan the values decode to
    assert not wrong.optimal_in_model and not wrong.proven_optimal
    assert wrong.gap is not None and wrong.gap > 0.02


@pytest.mark.highs
def test_without_a_time_limit_a_recomputing_stage_still_stops() -> None:
    # example:cnn 1:1: its synchronous recomputing model took 5-12 s here
    strategy = attrs.evolve(DEFAULT_STRATEGY, untimed_recompute_seconds=1.0)
    problem = load_problem("example:cnn", "gpu-h200", limit="1:1")
    outcome = plan(problem, "synchronous", PlanSettings(addresses=False, strategy=strategy))
    spent = sum(p.seconds for p in outcome.phases
                if p.name.startswith("synchronous, recomputing"))
    assert 0 < spent <= 1.0 + strategy.grace_seconds(1.0) + 0.5
