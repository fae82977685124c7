"""The independent checker and the verifier agree on plans whose copies span kernels: random
spanning plans of the tiny cases, their capacities lifted or not, and single changes of
them (a copy's ``until`` among them)."""

from __future__ import annotations

import random

import pytest

from autotm_core.plans import verify_plan
from plans.random_spans import random_spanning_plan

from .harness import case_of, disagreement
from .mutate import SPAN_MUTATIONS, mutants
from .rules import check


@pytest.mark.parametrize("seed", range(12))
def test_checkers_agree_on_spanning_plans_and_their_mutants(seed: int) -> None:
    case = case_of(seed, 3 if seed % 4 == 3 else 2)
    unbounded = case.system
    for pool in case.system.pools:
        unbounded = unbounded.with_capacity(pool.name, None)
    rng = random.Random(seed)
    found, count = [], 0
    for system in (case.system, unbounded):
        plans = [random_spanning_plan(case.graph, system, seed * 100 + draw, move_rate=0.6)
                 for draw in range(6)]
        if system is unbounded:  # every rule kept, capacity aside
            assert all(not check(p, case.graph, system) and not verify_plan(p, case.graph, system)
                       for p in plans)
        plans += [m for p in list(plans)
                  for m in mutants(p, case.graph, system, rng, 6, SPAN_MUTATIONS)]
        count += len(plans)
        found += [d for p in plans if (d := disagreement(p, case.graph, system))]
    assert not found, f"{case}\n{len(found)} of {count} plans:\n" + "\n".join(found[:3])


def test_the_spanning_plans_span_kernels() -> None:
    spans = sum(m.spans_kernels
                for seed in range(12) for draw in range(6)
                for m in random_spanning_plan(case_of(seed).graph, case_of(seed).system,
                                              seed * 100 + draw, move_rate=0.6).moves)
    assert spans > 10
