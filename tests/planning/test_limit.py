"""Limits: a size, a PMM:DRAM ratio or per-pool limits, parsed once, one error per mistake."""

from __future__ import annotations

from fractions import Fraction

import pytest

from autotm_core import Graph, preset
from autotm_core.capacity import Limit, PoolLimit
from autotm_core.errors import UsageError


def test_the_three_ways_to_write_a_limit(mlp: Graph) -> None:
    peak = mlp.liveness.peak_nbytes
    optane, three = preset("optane-2019"), preset("hbm-dram-cxl")
    assert Limit.parse("16GiB").capacities(mlp, optane) == {"dram": 16 * 2**30}
    assert Limit.parse("4:1").capacities(mlp, optane) == {"dram": peak // 5}
    assert Limit.parse("8:2").capacities(mlp, optane) == {"dram": peak // 5}
    both = Limit.parse("hbm=4:1, dram=64MiB")
    assert both.parts == (PoolLimit("hbm", ratio=Fraction(4)), PoolLimit("dram", nbytes=2**26))
    limited = both.apply(mlp, three)
    assert [p.capacity_nbytes for p in limited.pools] == [peak // 5, 2**26,
                                                         three.pools[2].capacity_nbytes]
    assert str(both) == "hbm=4:1, dram=64MiB" and str(Limit((both.parts[0],))) == "hbm=4:1"


def test_no_limit_keeps_the_systems_capacities(mlp: Graph) -> None:
    system = preset("optane-2019")
    for none in (Limit(), Limit.parse(None), Limit.parse("  ")):
        assert none.parts == () and none.apply(mlp, system) == system


@pytest.mark.parametrize("text", ["lots", "4:-1", "1:0", "hbm=", "=4:1", "hbm=4:1,hbm=2:1",
                                  "hbm=4:1,dram"])
def test_a_bad_limit_is_one_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as info:
        Limit.parse(text)
    assert info.value.hint


def test_an_unknown_pool_names_the_pools(mlp: Graph) -> None:
    with pytest.raises(UsageError, match="no pool 'hbm'"):
        Limit.parse("hbm=4:1").apply(mlp, preset("optane-2019"))


def test_command_line_options_give_one_limit() -> None:
    assert Limit.from_options(ratio="4:1") == Limit.parse("4:1")
    assert Limit.from_options(nbytes="1GiB") == Limit.parse("1GiB")
    assert Limit.from_options(pools="dram=1GiB") == Limit.parse("dram=1GiB")
    assert Limit.from_options() == Limit()
    with pytest.raises(UsageError, match="not several"):
        Limit.from_options(ratio="4:1", nbytes="1GiB")
    with pytest.raises(UsageError, match="not a ratio") as info:
        Limit.from_options(ratio="dram=4:1")
    assert "--limit" in (info.value.hint or "")


def test_zero_to_one_is_the_peak_which_only_perfect_packing_fills() -> None:
    """docs/user-guide.md: why a plan at 0:1 can be a little slower than all-fast."""
    from autotm_core.planning import load_problem, plan
    from autotm_core.planning.breakdown import outcome_breakdown
    from autotm_core.units import round_up

    problem = load_problem("example:cnn", "optane-2019", limit="0:1")
    assert problem.fast_capacity_nbytes == problem.peak_nbytes
    live = problem.graph.liveness
    rounded = max(sum(round_up(int(live.nbytes[t])) for t in live.live_at(k))
                  + round_up(int(live.workspace_nbytes[k])) for k in range(live.n_kernels))
    assert rounded > problem.peak_nbytes  # what the ILPs' page rounding cannot fit
    assert plan(problem, "greedy").slowdown == pytest.approx(1.0)
    first_touch = plan(problem, "first-touch")
    assert first_touch.slowdown is not None and first_touch.slowdown > 1.0
    slow = sum(u.kept_nbytes[1] for u in outcome_breakdown(first_touch).uses)
    assert 0 < slow <= 2**20  # one gradient left without a free block
