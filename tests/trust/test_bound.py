"""The physical lower bound against the exhaustive optimum (issue 28): the best plan the
rules allow, of each formulation, with reruns or without, under the roofline or a measured
table with arbitrary times, and on a system whose slower pool has the lower latency, is
never faster than :func:`~autotm_core.planning.lower_bound.physical_lower_bound`."""

from __future__ import annotations

import attrs
import pytest

from autotm_core.costs import KernelCosts, resolve_costs
from autotm_core.memory import MemorySystem
from autotm_core.planning import Problem
from autotm_core.planning.lower_bound import physical_lower_bound
from costs.random_tables import TABLES, measured

from .exhaustive import Optimum, optimum
from .harness import at_most, case_of, costs_of, describe, optima
from .recompute import optimum_with_reruns
from .space import FORMULATIONS
from .tiny import Case, random_case, random_recompute_case

FAST = [2, 5, 8, 12]
"""The exhaustive tests' fast seeds (two pools)."""
SLOW = [*range(20), *range(100, 108), *range(200, 205)]
"""More: two pools, both bounded (from 100), three pools (from 200)."""
RECOMPUTE = [7, 9, 12, 17, 36, 37]
"""The recomputation tests' fast seeds."""


def _points(seeds: list[int], fast: list[int]) -> list:
    return [pytest.param(s, id=f"seed{s}", marks=[] if s in fast else [pytest.mark.slow])
            for s in seeds]


def _case(seed: int) -> Case:
    if seed >= 200:
        return case_of(seed, 3)
    return case_of(seed, 2, seed >= 100)


def _assert_no_optimum_beats_the_bound(case: Case, costs: KernelCosts, *,
                                       recompute: bool = False,
                                       found: dict[str, Optimum | None] | None = None) -> None:
    """Each formulation's exhaustive optimum (``found``, else searched here) is no faster
    than the bound."""
    bound = physical_lower_bound(Problem(graph=case.graph, system=case.system, costs=costs),
                                 recompute=recompute)
    for formulation in FORMULATIONS:
        if found is not None:
            best = found[formulation]
        elif recompute:
            best = optimum_with_reruns(case.graph, case.system, costs, formulation=formulation)
        else:
            best = optimum(case.graph, case.system, costs, formulation=formulation)
        if best is not None:
            assert at_most(bound.seconds, best.seconds), (
                f"{formulation}: the rules' optimum {best.seconds} beats {bound}\n{case}\n"
                f"{describe(best.plan)}")


@pytest.mark.parametrize("seed", _points([*FAST, *SLOW], FAST))
def test_no_optimum_beats_the_bound(seed: int) -> None:
    case = _case(seed)
    # the two-pool cases' optima are the exhaustive tests' (cached)
    _assert_no_optimum_beats_the_bound(case, costs_of(case),
                                       found=optima(seed) if seed < 100 else None)


@pytest.mark.parametrize("seed", _points([*RECOMPUTE, 1, 2, 3, 4, 5, 115], RECOMPUTE))
def test_no_optimum_with_reruns_beats_the_recomputing_bound(seed: int) -> None:
    case = random_recompute_case(seed)
    _assert_no_optimum_beats_the_bound(case, resolve_costs(case.graph, case.system),
                                       recompute=True)


@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed", _points([*FAST, 0, 1, 3, 4, 6], FAST))
def test_no_optimum_beats_the_bound_under_a_measured_table(seed: int, table: str) -> None:
    case = _case(seed)
    costs = measured(case.graph, len(case.system.pools), TABLES[table], seed)
    _assert_no_optimum_beats_the_bound(case, costs)


def _lower_latency_in_the_middle(system: MemorySystem) -> MemorySystem:
    """``system`` with its middle pool's latency below the fastest's, as on hbm-dram-cxl."""
    fast, middle, slow = system.pools
    return attrs.evolve(system, pools=(
        fast, attrs.evolve(middle, latency_seconds=fast.latency_seconds / 2), slow))


@pytest.mark.parametrize("seed", _points([200, 201, 202, 203, 204, 205, 206, 207], [200, 201]))
def test_no_optimum_beats_the_bound_when_a_slower_pool_has_less_latency(seed: int) -> None:
    case = random_case(seed, pools=3, kernels=(3, 4), tensors=(2, 3))
    case = attrs.evolve(case, system=_lower_latency_in_the_middle(case.system))
    _assert_no_optimum_beats_the_bound(case, resolve_costs(case.graph, case.system))
