"""With recomputation, each formulation first chooses among the held plans' reruns only."""

from __future__ import annotations

import pytest
from tests.baselines.blocks import MIB, blocks

from autotm_core.baselines import checkpoint_layers
from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.planning.ilp import StageKind
from autotm_core.plans import verify_plan
from autotm_core.simulation import simulate


def test_the_stage_names_say_which_reruns_each_model_may_choose() -> None:
    from autotm_core.ilp.options import Formulation

    sync = Formulation.SYNCHRONOUS
    assert StageKind(sync).name == "synchronous"
    assert StageKind(sync, recompute=True).name == "synchronous, recomputing"
    assert (StageKind(sync, recompute=True, held_reruns=True).name
            == "synchronous, the held plans' reruns")


@pytest.mark.highs
def test_a_recomputing_chain_improves_the_practitioners_reruns_before_every_option() -> None:
    problem = load_problem(blocks(3, nbytes=4 * MIB), "gpu-h200", limit="1:1")
    graph, system = problem.graph, problem.limited_system
    held = checkpoint_layers(graph, system, costs=problem.costs)
    assert held.reruns
    outcome = plan(problem, "synchronous", PlanSettings(time_limit_seconds=60))
    stages = [p.name.split(":")[0] for p in outcome.phases]
    order = [stages.index(s) for s in ("synchronous", "synchronous, the held plans' reruns",
                                       "synchronous, recomputing")]
    assert order == sorted(order)
    assert verify_plan(outcome.plan, graph, system) == []
    assert outcome.step_seconds <= simulate(held, graph, system,
                                            problem.costs).step_seconds * (1 + 1e-9)


def test_a_plan_held_from_before_its_stages_rounds_is_said_so():
    """The head's objective and termination are the last round's: when the plan returned was
    held from an earlier stage (it packs faster than any round's), the outcome says so."""
    from autotm_core.ilp.fitting import FitRound
    from autotm_core.planning.ilp import _held_over_rounds

    def fit(round_: int, step: float, fits: bool, room: float | None = None) -> FitRound:
        return FitRound(round=round_, step_seconds=step, fits=fits, fragmentation_nbytes=0,
                        overflow_nbytes=0 if fits else 4096, overflow_kernels=0 if fits else 1,
                        seconds=0.1, room_step_seconds=room)

    rounds = (fit(1, 1.0, False, room=1.5), fit(2, 1.2, True))
    assert _held_over_rounds(rounds, 1.2, "synchronous", "ilp", 1.2) == ""
    assert _held_over_rounds(rounds, 1.5, "synchronous", "ilp", 1.2) == ""  # room made
    note = _held_over_rounds(rounds, 1.1, "synchronous, recomputing", "ilp", 1.2)
    assert "none of the synchronous, recomputing stage's 2 address-fitting round(s)" in note
    assert "(1.1 s; the last round's objective 1.2 s)" in note
