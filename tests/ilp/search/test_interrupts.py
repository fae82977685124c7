"""Ctrl-C in any step of the search: the runner stops, the pool's best verified (and, with
addresses, packed) plan is returned, marked interrupted; without one, one clear error.
Driven through the seams: a fake solver backend and the search's events."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.errors import SolveInterruptedError
from autotm_core.ilp.search import ModelBuilt, PhaseStarted
from autotm_core.planning import PLANNERS, PlanSettings, load_problem, plan
from autotm_core.planning.ilp import IlpSettings, plan_ilp
from autotm_core.plans import verify_plan
from autotm_core.solvers.highs import HighsSolver


@attrs.define
class CtrlCWhenArmed:
    """HiGHS until armed; then the next solve is interrupted by Ctrl-C."""

    name: str = "ctrl-c"
    description: str = "HiGHS, interrupted on demand"
    capabilities = HighsSolver.capabilities
    armed: bool = False

    def unavailable_reason(self) -> None:
        return None

    def solve(self, problem, config=None, start=None):  # type: ignore[no-untyped-def]
        if self.armed:
            raise KeyboardInterrupt
        return HighsSolver().solve(problem, config, start)


def _plan(problem, backend, *, arm_on, addresses=True):  # type: ignore[no-untyped-def]
    def listener(event: object) -> None:
        if arm_on(event):
            backend.armed = True

    settings = IlpSettings.of(PlanSettings(mode="exact", addresses=addresses), problem.graph,
                              backend)
    return plan_ilp(problem, PLANNERS["asynchronous"], settings, warm_starts=(),
                    listener=listener)


@pytest.mark.highs
@pytest.mark.parametrize("addresses", [True, False])
def test_ctrl_c_in_a_richer_stage_keeps_the_simpler_plan(addresses: bool) -> None:
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")
    backend = CtrlCWhenArmed()
    outcome = _plan(problem, backend, addresses=addresses,
                    arm_on=lambda e: isinstance(e, ModelBuilt) and e.stage == "asynchronous")
    assert outcome.interrupted and outcome.solve is not None
    assert outcome.solve.termination == "interrupted" and not outcome.solve.proven_optimal
    assert not verify_plan(outcome.plan, problem.graph, problem.limited_system)
    assert outcome.plan.has_offsets == addresses
    assert outcome.step_seconds <= plan(problem, "synchronous",
                                        PlanSettings(addresses=addresses)).step_seconds * 1.001
    assert "interrupted (Ctrl-C)" in outcome.note


@pytest.mark.highs
def test_ctrl_c_before_any_stage_keeps_a_held_baseline() -> None:
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")
    backend = CtrlCWhenArmed(armed=True)  # the first solve is interrupted
    outcome = _plan(problem, backend, arm_on=lambda _e: False)
    assert outcome.interrupted and outcome.source in {"greedy", "first-touch", "checkpoint-layers",
                                                     "recompute-only"}
    assert outcome.plan.has_offsets
    assert not verify_plan(outcome.plan, problem.graph, problem.limited_system)


@pytest.mark.highs
def test_ctrl_c_outside_a_solve_stops_the_search_too() -> None:
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")
    steps: list[str] = []

    def interrupt_the_synchronous_check(event: object) -> None:
        if isinstance(event, PhaseStarted):
            steps.append(f"{event.stage}: {event.phase}")
            if event.stage == "synchronous" and event.phase == "check":
                raise KeyboardInterrupt

    settings = IlpSettings.of(PlanSettings(mode="exact"), problem.graph, HighsSolver())
    outcome = plan_ilp(problem, PLANNERS["asynchronous"], settings, warm_starts=(),
                       listener=interrupt_the_synchronous_check)
    assert outcome.interrupted
    assert not any(s.startswith("asynchronous") for s in steps)  # no later step ran
    assert not verify_plan(outcome.plan, problem.graph, problem.limited_system)


@pytest.mark.highs
def test_ctrl_c_before_any_plan_is_held_is_one_clear_error() -> None:
    problem = load_problem("example:chain-3", "gpu-h200", limit="4:1")

    def interrupt_the_held_plans(event: object) -> None:
        if isinstance(event, PhaseStarted) and event.phase == "held plans":
            raise KeyboardInterrupt

    settings = IlpSettings.of(PlanSettings(mode="exact"), problem.graph, HighsSolver())
    with pytest.raises(SolveInterruptedError, match="before any plan with addresses"):
        plan_ilp(problem, PLANNERS["asynchronous"], settings, warm_starts=(),
                 listener=interrupt_the_held_plans)
