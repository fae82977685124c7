"""Recomputation (issue 27): the exhaustive optimum with reruns against the project.

:mod:`.recompute` searches every plan the rules allow, drops and reruns included, on tiny
forward and backward passes (:func:`.tiny.random_recompute_case`). Here (a) its optima are
valid (the project's verifier accepts them), priced exactly by the simulator, never worse
than the optimum without reruns, and monotone in the formulation; (b) the static and
synchronous ILPs with ``recompute=True`` equal it, the asynchronous one lies between it and
the synchronous optimum; (c) every ILP plan with reruns verifies and is priced at the
model's objective.

Where the ILP is above the optimum the rules allow, the case is a finding about the model,
kept here as a strict expected failure naming what the model leaves out (:data:`FINDINGS`):
when the formulation offers it, the test passes and says so.
"""

from __future__ import annotations

import functools

import pytest

from autotm_core.costs import resolve_costs
from autotm_core.ilp.decode import decode_plan, objective_of, settled_values
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.search.model import check_objective
from autotm_core.plans import verify_plan
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig

from .exhaustive import Optimum, optimum
from .harness import at_most, describe, ilp_outcome
from .recompute import may_rerun, optimum_with_reruns
from .space import FORMULATIONS
from .tiny import Case, random_recompute_case

FAST = [7, 9, 12, 17, 36, 37]
"""Seeds of the fast lane: reruns pay in each (static, synchronous or both)."""
SLOW = [s for s in [*range(40), 50, 95, 115] if s not in FAST]
"""Forty more, and the seeds of the findings: all 120 seeds took 5 of the suite's 12.5
minutes, and over range(120) nothing was found beyond these seeds' findings."""
HELD = ("finding: the rules let a rerun restore a copy in the fastest pool of a tensor still "
        "held in another pool (a recomputation instead of a copy); the model restores only a "
        "tensor it dropped (ilp/reruns.py), so without moves (static) it reads the tensor "
        "from the slow pool instead")
EARLY = ("finding: the model reruns a producer only just before a use after a gap "
         "(ilp/reruns.py); the rules let it run at any boundary, e.g. one kernel earlier, "
         "while its input is still alive, and the value is then kept until the use (here: "
         "rerun f1 before b1, where x is read for the last time, to restore a1 for b2)")
FINDINGS = {(5, "static"): HELD, (115, "static"): EARLY,
            (115, "synchronous"): EARLY, (115, "asynchronous"): EARLY}
"""(seed, formulation) where the ILP is above the rules' optimum (for the asynchronous
formulation: above the synchronous optimum), and why."""
CASES = ([pytest.param(s, id=f"seed{s}") for s in FAST]
         + [pytest.param(s, id=f"seed{s}", marks=pytest.mark.slow) for s in SLOW])


@functools.lru_cache(maxsize=128)
def case_of(seed: int) -> Case:
    """The random case of ``seed`` (cached: several tests look at each)."""
    return random_recompute_case(seed)


@functools.lru_cache(maxsize=128)
def optima(seed: int, restore_held: bool = True) -> dict[str, Optimum | None]:
    """The exhaustive optimum with reruns of each formulation of a case."""
    case = case_of(seed)
    costs = resolve_costs(case.graph, case.system)
    return {f: optimum_with_reruns(case.graph, case.system, costs, formulation=f,
                                   restore_held=restore_held) for f in FORMULATIONS}


def _seconds(value: Optimum | None) -> float:
    return float("inf") if value is None else value.seconds


@pytest.mark.parametrize("seed", CASES)
def test_optima_with_reruns_are_valid_priced_and_no_worse(seed: int) -> None:
    case = case_of(seed)
    costs = resolve_costs(case.graph, case.system)
    found = optima(seed)
    rerunnable = may_rerun(case.graph)
    for formulation, best in found.items():
        plain = optimum(case.graph, case.system, costs, formulation=formulation)
        assert at_most(_seconds(best), _seconds(plain)), (formulation, str(case))
        if best is None:
            continue
        plan = best.plan
        assert verify_plan(plan, case.graph, case.system) == [], (
            f"{formulation}: the verifier refuses the rules' optimum\n{case}\n{describe(plan)}\n"
            f"  reruns = {plan.reruns}")
        simulated = simulate(plan, case.graph, case.system, costs).step_seconds
        assert simulated == pytest.approx(best.seconds, rel=1e-9), (formulation, str(case))
        assert all(rerunnable[r.kernel] and r.kernel < r.before for r in plan.reruns)
    static, sync, asyn = (_seconds(found[f]) for f in FORMULATIONS)
    assert at_most(sync, static) and at_most(asyn, sync), str(case)


def _finding(seed: int, formulation: str) -> str | None:
    return FINDINGS.get((seed, formulation))


EXACT = [pytest.param(s, f, id=f"seed{s}-{f}", marks=[
    *([pytest.mark.slow] if s not in FAST else []),
    *([pytest.mark.xfail(strict=True, reason=_finding(s, f))] if _finding(s, f) else [])])
    for s in [*FAST, *SLOW] for f in ("static", "synchronous")]


@pytest.mark.highs
@pytest.mark.parametrize(("seed", "formulation"), EXACT)
def test_static_and_synchronous_ilps_equal_the_exhaustive_optimum(seed: int,
                                                                  formulation: str) -> None:
    """Equal: never better (the ILP would have a plan the rules refuse), never worse (the
    model would leave out plans the rules allow; where it does, :data:`FINDINGS` says how)."""
    case = case_of(seed)
    best = optima(seed)[formulation]
    outcome = ilp_outcome(case.graph, case.system, formulation, recompute=True)
    ilp = float("inf") if outcome is None else outcome.step_seconds
    exhaustive = _seconds(best)
    assert at_most(exhaustive, ilp), (
        f"{formulation}: the ILP's {ilp} beats the rules' optimum {exhaustive}\n{case}\n"
        + (describe(outcome.plan) + f"\n  reruns = {outcome.plan.reruns}" if outcome else ""))
    if at_most(ilp, exhaustive):
        return
    dropped_only = _seconds(optima(seed, restore_held=False)[formulation])
    pytest.fail(
        f"{formulation}: the ILP's {ilp} is above the rules' optimum {exhaustive} "
        f"({(ilp / exhaustive - 1):.1%}; with restores of dropped tensors only: {dropped_only})"
        f"\n{case}\n{describe(best.plan) if best else ''}\n"
        f"  reruns = {best.plan.reruns if best else ()}")


BETWEEN = [pytest.param(s, id=f"seed{s}", marks=[
    *([pytest.mark.slow] if s not in FAST else []),
    *([pytest.mark.xfail(strict=True, reason=_finding(s, "asynchronous"))]
      if _finding(s, "asynchronous") else [])]) for s in [*FAST, *SLOW]]


@pytest.mark.highs
@pytest.mark.parametrize("seed", BETWEEN)
def test_the_asynchronous_ilp_lies_between_the_optima(seed: int) -> None:
    """Within its named restrictions: never below the rules' asynchronous optimum, never above
    the synchronous one (a synchronous plan is an asynchronous plan)."""
    case = case_of(seed)
    found = optima(seed)
    # the exhaustive optimiser's copies overlap one kernel each: so do the model's here
    outcome = ilp_outcome(case.graph, case.system, "asynchronous", recompute=True, spans=False)
    ilp = float("inf") if outcome is None else outcome.step_seconds
    low, high = _seconds(found["asynchronous"]), _seconds(found["synchronous"])
    assert at_most(low, ilp), f"the ILP's {ilp} beats the rules' optimum {low}\n{case}"
    assert at_most(ilp, high), (
        f"the asynchronous ILP's {ilp} is above the synchronous optimum {high}\n{case}")


@pytest.mark.highs
@pytest.mark.parametrize("seed", CASES)
def test_ilp_plans_with_reruns_verify_and_are_priced_at_the_objective(seed: int) -> None:
    from autotm_core.solvers.highs import HighsSolver

    case = case_of(seed)
    costs = resolve_costs(case.graph, case.system)
    for formulation in Formulation:
        index = build_program(case.graph, costs, case.system, options=FormulationOptions(
            formulation=formulation, recompute=True))
        result, values = HighsSolver().solve(to_matrix_problem(index.lp),
                                           SolverConfig(relative_gap=0))
        if values is None:  # no plan fits: the exhaustive search agrees
            assert optima(seed)[formulation.value] is None, (formulation, result, str(case))
            continue
        values = settled_values(index, values)
        plan = decode_plan(index, values, case.graph, case.system, planner="test")
        assert verify_plan(plan, case.graph, case.system) == [], (formulation, str(case))
        simulated = float(simulate(plan, case.graph, case.system, costs).step_seconds)
        objective = objective_of(index, values)
        check_objective(objective_seconds=objective, simulated_seconds=simulated,
                        graph=case.graph)
        assert simulated == pytest.approx(objective, rel=1e-7), (formulation, str(case))


FILLS = [pytest.param(s, id=f"fills-seed{s}", marks=[] if s in (6, 17) else [pytest.mark.slow])
         for s in (0, 1, 5, 6, 7, 15, 16, 17)]
"""Cases whose activations are filled in place after their producer (``fills=True``: a
scaling ``g`` kernel, or dropout's ``empty_like`` then ``bernoulli_``); in 6 and 17 the
optimum reruns a fill."""


@pytest.mark.highs
@pytest.mark.parametrize("seed", FILLS)
def test_ilps_rerun_a_producer_and_its_fills_as_the_exhaustive_optimum_does(seed: int) -> None:
    """The rules' optimum, fills rerun only after their producer, is valid and priced exactly;
    the static and synchronous ILPs equal the optimum of the plans that restore only dropped
    tensors (the model's reading: :data:`HELD`), and never beat the rules' optimum."""
    case = random_recompute_case(seed, fills=True)
    graph, system = case.graph, case.system
    assert (graph.recompute.fill_of >= 0).any()
    costs = resolve_costs(graph, system)
    for formulation in ("static", "synchronous"):
        best = optimum_with_reruns(graph, system, costs, formulation=formulation)
        dropped = optimum_with_reruns(graph, system, costs, formulation=formulation,
                                      restore_held=False)
        assert best is not None and dropped is not None
        assert verify_plan(best.plan, graph, system) == [], (formulation, str(case))
        assert simulate(best.plan, graph, system, costs).step_seconds == pytest.approx(
            best.seconds, rel=1e-9)
        outcome = ilp_outcome(graph, system, formulation, recompute=True)
        assert outcome is not None
        ilp = outcome.step_seconds
        assert at_most(best.seconds, ilp), f"{formulation}: {ilp} beats {best.seconds}\n{case}"
        assert at_most(ilp, dropped.seconds), (
            f"{formulation}: the ILP's {ilp} is above the optimum restoring dropped tensors "
            f"only, {dropped.seconds}\n{case}\n{describe(dropped.plan)}\n"
            f"  reruns = {dropped.plan.reruns}")
        fills = [r for r in outcome.plan.reruns if graph.recompute.fill_of[r.kernel] >= 0]
        if seed in (6, 17):
            assert fills, formulation
