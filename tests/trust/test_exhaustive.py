"""The exhaustive optimiser against the project: verifier, simulator and ILP on random tiny steps.

(a) the independent checker and ``verify_plan`` agree on every plan tried: the
search's optima, every plan of the tiniest spaces (rule breakers included), random
plans and mutants; (b) the ILP is never better than the exhaustive optimum, and
equal to it for two pools, roofline costs, synchronous and asynchronous (on these
steps the asynchronous model's named restrictions, the window above all, never bind);
(c) static >= synchronous >= asynchronous, for both. The exhaustive optimiser's
asynchronous copies overlap one kernel each, so the ILP here is the one-kernel model
(``async_spans=False``); copies spanning kernels: ``test_spanning_exhaustive.py``.
"""

from __future__ import annotations

import random

import pytest

from autotm_core.costs import resolve_costs
from autotm_core.plans import MoveKind
from autotm_core.simulation import simulate

from .exhaustive import Optimum, count_plans, enumerate_plans, optimum, random_plan
from .harness import at_most, case_of, costs_of, describe, disagreement, ilp_outcome, optima
from .mutate import mutants
from .rules import check
from .space import FORMULATIONS
from .tiny import random_case

FAST = [2, 5, 8, 12]
"""Seeds checked in the fast lane: moves pay (12), overlap pays (8), a constant (5)."""
SLOW = [s for s in range(80) if s not in FAST]
"""Two pools, unbounded slow pool."""
BOUNDED = list(range(100, 116))
"""Two pools, both bounded."""
THREE = list(range(200, 210))
"""Three pools."""
CASES = ([pytest.param(s, 2, False, id=f"seed{s}") for s in FAST]
         + [pytest.param(s, 2, False, id=f"seed{s}", marks=pytest.mark.slow) for s in SLOW]
         + [pytest.param(s, 2, True, id=f"bounded{s}", marks=pytest.mark.slow) for s in BOUNDED]
         + [pytest.param(s, 3, False, id=f"three{s}", marks=pytest.mark.slow) for s in THREE])


def _seconds(value: Optimum | None) -> float:
    return float("inf") if value is None else value.seconds


@pytest.mark.parametrize(("seed", "pools", "bounded"), CASES)
def test_optima_are_valid_priced_and_monotone(seed: int, pools: int, bounded: bool) -> None:
    case = case_of(seed, pools, bounded)
    found = optima(seed, pools, bounded)
    for formulation, best in found.items():
        if best is None:
            continue
        assert not check(best.plan, case.graph, case.system), f"{case}\n{describe(best.plan)}"
        assert disagreement(best.plan, case.graph, case.system) is None, str(case)
        simulated = simulate(best.plan, case.graph, case.system, costs_of(case)).step_seconds
        assert simulated == pytest.approx(best.seconds, rel=1e-9)
        kinds = {m.kind for m in best.plan.moves}
        assert formulation != "static" or not kinds
        assert formulation != "synchronous" or MoveKind.ASYNC not in kinds
    static, sync, asyn = (_seconds(found[f]) for f in FORMULATIONS)
    assert at_most(sync, static) and at_most(asyn, sync), str(case)


@pytest.mark.parametrize(("seed", "pools", "bounded"), CASES)
def test_checkers_agree_on_random_and_mutated_plans(seed: int, pools: int, bounded: bool) -> None:
    case = case_of(seed, pools, bounded)
    rng = random.Random(seed)
    costs = costs_of(case)
    plans = [best.plan for best in optima(seed, pools, bounded).values() if best is not None]
    for formulation in FORMULATIONS:
        for lenient in (False, True):
            for _ in range(4):
                drawn = random_plan(case.graph, case.system, costs, formulation=formulation,
                                    rng=rng, lenient=lenient)
                plans += [drawn] if drawn is not None else []
    plans += [m for p in list(plans) for m in mutants(p, case.graph, case.system, rng, 3)]
    found = [d for p in plans if (d := disagreement(p, case.graph, case.system))]
    assert not found, f"{case}\n{len(found)} of {len(plans)} plans:\n" + "\n".join(found[:3])


TINIEST = [pytest.param(s, 150, id=f"small{s}") for s in (2, 23)] + [
    pytest.param(s, 1500, id=f"tiniest{s}", marks=pytest.mark.slow) for s in range(30)]
"""Seeds and the largest space enumerated plan by plan (each plan is checked twice and
simulated, about 6 ms)."""


@pytest.mark.parametrize(("seed", "largest"), TINIEST)
def test_enumeration_matches_the_search(seed: int, largest: int) -> None:
    """Every plan of the tiniest spaces, rule breakers included: the checkers agree on each,
    and the best the checker accepts is the search's optimum."""
    case = random_case(seed, kernels=(3, 4), tensors=(2, 3))
    costs = resolve_costs(case.graph, case.system)
    tried = 0
    for formulation in FORMULATIONS:
        for lenient in (False, True):
            if count_plans(case.graph, case.system, costs, formulation=formulation,
                           lenient=lenient) > largest:
                continue
            best = float("inf")
            for plan in enumerate_plans(case.graph, case.system, costs, formulation=formulation,
                                        lenient=lenient):
                tried += 1
                problem = disagreement(plan, case.graph, case.system)
                assert problem is None, f"{case}\n{problem}"
                if not check(plan, case.graph, case.system):
                    best = min(best, simulate(plan, case.graph, case.system, costs).step_seconds)
            searched = optimum(case.graph, case.system, costs, formulation=formulation)
            assert _seconds(searched) == pytest.approx(best, rel=1e-9), (formulation, str(case))
    if not tried:
        pytest.skip(f"every space of seed {seed} has more than {largest} plans")


def _ilp_results(seed: int, pools: int, bounded: bool) -> dict[str, float]:
    case = case_of(seed, pools, bounded)
    out = {}
    for formulation in FORMULATIONS:
        outcome = ilp_outcome(case.graph, case.system, formulation, spans=False)
        out[formulation] = float("inf") if outcome is None else outcome.step_seconds
        if outcome is not None:
            assert not check(outcome.plan, case.graph, case.system), describe(outcome.plan)
            stats = outcome.solve
            best = _seconds(optima(seed, pools, bounded)[formulation])
            if stats is not None and stats.proven_optimal and (stats.gap or 0) <= 1e-9:
                assert at_most(outcome.step_seconds, best), (
                    f"{formulation}: reported proven optimal at gap 0 with "
                    f"{outcome.step_seconds}, but the rules allow {best}\n{case}")
    return out


@pytest.mark.highs
@pytest.mark.parametrize(("seed", "pools", "bounded"), CASES)
def test_ilp_against_the_optimum(seed: int, pools: int, bounded: bool) -> None:
    """Never better than the optimum (it would accept a plan the rules refuse); exactly optimal
    for two pools, synchronous and asynchronous; monotone in the formulation."""
    case = case_of(seed, pools, bounded)
    found = optima(seed, pools, bounded)
    ilp = _ilp_results(seed, pools, bounded)
    for formulation in FORMULATIONS:
        best = _seconds(found[formulation])
        assert at_most(best, ilp[formulation]), (
            f"{formulation}: the ILP's {ilp[formulation]} beats the rules' optimum {best}\n{case}")
    for formulation in ("synchronous", "asynchronous"):
        exact = found[formulation]
        if pools == 2 and exact is not None:
            assert at_most(ilp[formulation], exact.seconds), (
                f"{formulation}, two pools: the ILP's {ilp[formulation]} is worse than the "
                f"optimum {exact.seconds}\n{case}\n{describe(exact.plan)}")
    assert at_most(ilp["synchronous"], ilp["static"]), str(case)
    assert at_most(ilp["asynchronous"], ilp["synchronous"]), str(case)
