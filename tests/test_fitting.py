"""The address-fitting loop: tightening around overflows, re-solving until the plan packs."""

from __future__ import annotations

import numpy as np
import pytest

import autotm_core
from autotm_core.capacity import fast_capacity
from autotm_core.errors import CapacityError, UsageError
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.fitting import plan_with_addresses, tighten
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.search import Origin, Source
from autotm_core.plans import verify_plan
from autotm_core.presets import preset

SYSTEM = preset("optane-2019")


def test_tighten_cuts_a_window_by_at_least_the_excess_from_what_was_used() -> None:
    limits = np.full(30, 100_000, dtype=np.int64)
    used = np.full(30, 90_000, dtype=np.int64)
    used[3] = 150_000  # more than the limit: the limit is the start there
    out = tighten(limits, used, (12,), (5_000,), window_kernels=2, page_nbytes=4096)
    assert np.array_equal(out[:10], limits[:10]) and np.array_equal(out[15:], limits[15:])
    assert np.all(out[10:15] == 90_000 - 8192)  # excess rounded up to pages, from the usage
    out = tighten(limits, used, (3,), (1,), window_kernels=0, page_nbytes=1)
    assert out[3] == 99_999 and np.array_equal(np.delete(out, 3), np.delete(limits, 3))


def test_tighten_keeps_the_larger_cut_and_the_floor() -> None:
    limits = np.full(10, 50_000, dtype=np.int64)
    used = np.full(10, 50_000, dtype=np.int64)
    floor = np.full(10, 45_000, dtype=np.int64)
    out = tighten(limits, used, (4, 5), (1_000, 3_000), window_kernels=1, page_nbytes=1)
    assert list(out[3:7]) == [49_000, 47_000, 47_000, 47_000]
    out = tighten(limits, used, (4,), (20_000,), floor_nbytes=floor, window_kernels=0,
                  page_nbytes=1)
    assert out[4] == 45_000
    assert np.all(tighten(out, used, (4,), (20_000,), floor_nbytes=floor) <= out)


def _coarse() -> dict:  # type: ignore[type-arg]
    """A model that counts exact bytes under an allocator of 4 KiB pages: the first plan
    overflows its packing, so the loop has to tighten."""
    graph = training_chain(4, base_nbytes=10_000)
    return dict(graph=graph, system=SYSTEM, options=FormulationOptions(page_nbytes=1),
                fast_capacity_nbytes=fast_capacity(graph, ratio="1:1"), alignment_nbytes=4096)


def test_overflowing_plan_is_re_solved_until_it_fits() -> None:
    kwargs = _coarse()
    graph = kwargs["graph"]
    seen = []
    fitted = plan_with_addresses(**kwargs, on_round=seen.append)
    assert fitted.fits and len(fitted.rounds) >= 2
    assert [r.round for r in fitted.rounds] == list(range(1, len(fitted.rounds) + 1))
    assert list(seen) == list(fitted.rounds)
    assert not fitted.rounds[0].fits and fitted.rounds[0].overflow_nbytes > 0
    assert fitted.rounds[-1].fits and fitted.rounds[-1].overflow_nbytes == 0
    capacity = kwargs["fast_capacity_nbytes"]
    limits = np.array(fitted.limits["dram"])
    assert len(limits) == len(graph.kernels)
    assert limits.max() <= capacity and limits.min() < capacity
    plan = fitted.plan
    assert plan.capacities["dram"] == capacity  # the plan fits the real pool, not the cut limits
    assert all(r.offset is not None and r.offset % 4096 == 0
               for r in plan.residencies if r.pool == "dram")
    assert verify_plan(plan, graph, SYSTEM.with_capacity("dram", capacity)) == []
    packing = fitted.assignment.pool("dram")
    assert packing.height_nbytes <= capacity
    assert fitted.fragmentation_nbytes == fitted.assignment.fragmentation_nbytes >= 0
    assert fitted.result.step_seconds == pytest.approx(fitted.rounds[-1].step_seconds)


@pytest.mark.slow
def test_a_plan_that_packs_at_once_takes_one_round() -> None:
    graph = training_chain(4)
    fitted = plan_with_addresses(
        graph, SYSTEM, fast_capacity_nbytes=fast_capacity(graph, ratio="4:1"))
    assert fitted.fits and len(fitted.rounds) == 1 and fitted.limits == {}
    assert not fitted.interrupted


def test_gives_up_after_the_last_round_naming_pool_kernel_and_bytes() -> None:
    kwargs = _coarse()
    with pytest.raises(CapacityError) as caught:
        plan_with_addresses(**kwargs, max_rounds=1)
    message = caught.value.message
    assert "after 1 round;" in message and "'dram'" in message and "bytes" in message
    assert any(f"'{k.name}'" in message for k in kwargs["graph"].kernels)
    assert "--no-addresses" in caught.value.hint


def test_zero_rounds_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        plan_with_addresses(training_chain(2), SYSTEM, max_rounds=0)


def test_the_bound_is_the_first_rounds_and_the_source_the_last_round() -> None:
    from autotm_core.ilp.planner import plan_graph

    kwargs = _coarse()
    fitted = plan_with_addresses(**kwargs)
    assert len(fitted.rounds) >= 2 and fitted.source.round == len(fitted.rounds)
    first = plan_graph(kwargs["graph"], SYSTEM, options=kwargs["options"],
                       fast_capacity_nbytes=kwargs["fast_capacity_nbytes"])
    assert fitted.bound_seconds == pytest.approx(first.bound_seconds, rel=1e-9)
    assert fitted.bound_seconds <= fitted.result.step_seconds
    attributes = fitted.plan.attributes
    assert attributes["bound_seconds"] == fitted.bound_seconds
    assert attributes["fitting_round"] == len(fitted.rounds)
    assert attributes["gap"] == pytest.approx(
        (attributes["objective_seconds"] - fitted.bound_seconds) / attributes["objective_seconds"])


def test_a_fitting_start_plan_is_kept_when_the_rounds_give_up() -> None:
    from autotm_core.baselines import first_touch

    kwargs = _coarse()
    graph, capacity = kwargs["graph"], kwargs["fast_capacity_nbytes"]
    start = first_touch(graph, SYSTEM, fast_capacity_nbytes=capacity)
    unfit = autotm_core.baselines.all_fast(graph, SYSTEM)  # more than the fast capacity
    fitted = plan_with_addresses(**kwargs, max_rounds=1, start_plans=(unfit, start))
    assert fitted.source == Source(Origin.WARM_START, name=start.planner)
    assert start.planner == "baseline/first-touch"
    assert fitted.fits and len(fitted.rounds) == 1 and not fitted.rounds[0].fits
    assert verify_plan(fitted.plan, graph, SYSTEM.with_capacity("dram", capacity)) == []
    assert fitted.plan.moves == () and fitted.plan.has_offsets


def test_never_slower_than_a_fitting_start_plan() -> None:
    graph = training_chain(4)
    capacity = fast_capacity(graph, ratio="4:1")
    system = SYSTEM.with_capacity("dram", capacity)
    free = plan_with_addresses(graph, SYSTEM, fast_capacity_nbytes=capacity)
    # pinned parameters cannot express the free plan: every round's plan is slower
    pinned = plan_with_addresses(graph, SYSTEM, fast_capacity_nbytes=capacity,
                                 options=FormulationOptions(pin_to_fast=True),
                                 start_plans=(free.plan,))
    assert pinned.result.step_seconds > free.result.step_seconds
    assert pinned.source == Source(Origin.WARM_START, name=free.plan.planner) and pinned.fits
    assert verify_plan(pinned.plan, graph, system) == []
    assert pinned.plan.residencies == free.plan.residencies
    # the pinned model's bound is above the plan kept, which lies outside it: no bound
    assert pinned.result.bound_seconds > free.result.step_seconds
    assert pinned.bound_seconds is None


def _tied_head() -> autotm_core.Graph:
    """A weight read at the first kernel, by the head and by its backward pass, whose logits
    and their gradient fill HBM at the loss to less than the weight's size: the plan moves
    the weight out around the loss and back, so its stays at the step's start and end (one
    address: the next step finds it there) meet each of the two big tensors."""
    from autotm_core.ir.builder import GraphBuilder

    mib = 2**20
    g = GraphBuilder("tied-head")
    g.tensor("x", nbytes=mib, kind="input")
    g.tensor("w", nbytes=64 * mib, kind="parameter")
    g.tensor("dw", nbytes=64 * mib, kind="gradient")
    for name, nbytes in (("h", 4 * mib), ("dh", 4 * mib), ("logits", 1024 * mib),
                         ("dlogits", 1024 * mib)):
        g.tensor(name, nbytes=nbytes)
    g.tensor("loss", nbytes=8, kind="output")
    g.kernel("embed", op="embedding", inputs=["x", "w"], outputs=["h"])
    g.kernel("head", op="matmul", inputs=["h", "w"], outputs=["logits"], flops=1e12)
    g.kernel("loss", op="loss", inputs=["logits"], outputs=["loss", "dlogits"], flops=1e11)
    g.kernel("head_bwd", op="matmul", inputs=["dlogits", "w", "h"], outputs=["dh", "dw"],
             flops=2e12)
    g.kernel("update", op="sgd", inputs=["w", "dw", "dh"], outputs=["w"])
    return g.build()


def test_a_weight_whose_stays_at_the_step_ends_share_no_address_begins_outside() -> None:
    graph, system = _tied_head(), preset("gpu-h200")
    capacity = 2 * 2**30 + 40 * 2**20  # the logits and their gradient, and 40 MiB
    fitted = plan_with_addresses(graph, system, fast_capacity_nbytes=capacity)
    first, last = fitted.rounds[0], fitted.rounds[-1]
    # round 1 keeps w in HBM but for the loss: its one address must lie clear of the
    # logits (at the head) and of their gradient (at its backward), which fill HBM
    assert not first.fits and first.split_tensors == ("w",)
    assert last.fits and len(fitted.rounds) == 2 and fitted.begin_outside == {"hbm": ("w",)}
    assert fitted.limits == {}  # the limits were not cut: every kernel's bytes did fit
    starts = [r for r in fitted.plan.residencies if r.tensor == "w" and r.first == 0]
    assert starts and all(r.pool != "hbm" for r in starts)
    assert verify_plan(fitted.plan, graph, system.with_capacity("hbm", capacity)) == []
    assert fitted.plan.attributes["options"]["begin_outside"] == {"hbm": ["w"]}
    # beginning outside costs a fetch or slow reads of 64 MiB; cutting every limit by the
    # overflow (as before) left the logits and their gradient no room together: 2.9x
    assert last.step_seconds < 1.1 * first.step_seconds


def test_a_weight_barred_from_beginning_in_hbm_is_a_named_restriction() -> None:
    """The plan's label names the bar the fitting loop added: a plan where w begins the
    step in HBM is not one that model could find."""
    from autotm_core.planning import PlanSettings, load_problem, plan

    problem = load_problem(_tied_head(), "gpu-h200", limit=f"hbm={2 * 2**30 + 40 * 2**20}")
    outcome = plan(problem, "synchronous", PlanSettings(recompute=False))
    assert outcome.solve is not None
    assert any("'w' may not begin the step in 'hbm'" in line
               for line in outcome.solve.restrictions), outcome.solve.restrictions


def _roomy() -> dict:  # type: ignore[type-arg]
    """As :func:`_coarse`, with tensors large enough that copying idle ones out of DRAM
    makes its first plan pack."""
    graph = training_chain(4, base_nbytes=50_001)
    return dict(graph=graph, system=SYSTEM, options=FormulationOptions(page_nbytes=1),
                fast_capacity_nbytes=fast_capacity(graph, ratio="1:1"), alignment_nbytes=4096)


def test_a_plan_that_overflows_packs_with_idle_tensors_copied_out_and_back() -> None:
    kwargs = _roomy()
    graph, capacity = kwargs["graph"], kwargs["fast_capacity_nbytes"]
    # a gap wide enough to take the copies' cost: the loop ends with the round's plan
    fitted = plan_with_addresses(**kwargs, relative_gap=0.2)
    (first,) = fitted.rounds
    assert not first.fits and first.room_copies > 0
    assert first.step_seconds < first.room_step_seconds <= first.step_seconds * 1.2
    plan = fitted.plan
    assert fitted.fits and plan.has_offsets and fitted.source.round == 1
    assert plan.attributes["room_copies"] == first.room_copies
    assert plan.attributes["objective_seconds"] == pytest.approx(first.room_step_seconds)
    assert verify_plan(plan, graph, SYSTEM.with_capacity("dram", capacity)) == []
    # with the default gap the copies cost too much: another round solves, and the answer is
    # the faster of its plan and the one with room made
    fitted = plan_with_addresses(**kwargs)
    assert len(fitted.rounds) >= 2 and fitted.rounds[0].room_copies == first.room_copies
    assert fitted.result is not None
    assert fitted.plan.attributes.get("room_copies", 0) == (
        first.room_copies if fitted.source.round == 1 else 0)
    packed = [r.step_seconds for r in fitted.rounds if r.fits] + [first.room_step_seconds]
    assert fitted.assignment.plan is fitted.plan
    from autotm_core.costs import resolve_costs
    from autotm_core.simulation import simulate

    system = SYSTEM.with_capacity("dram", capacity)
    step = simulate(fitted.plan, graph, system, resolve_costs(graph, system)).step_seconds
    assert step == pytest.approx(min(packed))


def test_no_room_is_made_in_a_static_round_or_when_the_strategy_says_never() -> None:
    import attrs

    from autotm_core.ilp.search import DEFAULT_STRATEGY

    kwargs = _roomy()
    never = attrs.evolve(DEFAULT_STRATEGY, room_attempts=0)
    static = {**kwargs, "options": attrs.evolve(kwargs["options"], formulation="static")}
    for fitted in (plan_with_addresses(**kwargs, strategy=never, relative_gap=0.2),
                   plan_with_addresses(**static, relative_gap=0.2)):
        assert not fitted.rounds[0].fits and fitted.rounds[0].room_copies == 0
        assert "room_copies" not in fitted.plan.attributes


@pytest.mark.parametrize(("excess_mib", "cut"), [(64, False), (100, True)])
def test_split_tensors_holding_less_than_the_overflow_are_barred_and_the_limits_cut_too(
        excess_mib: int, cut: bool) -> None:
    from types import SimpleNamespace

    from autotm_core.addresses import Overflow
    from autotm_core.costs import resolve_costs
    from autotm_core.ilp.fitting import Packing, _Fitting
    from autotm_core.ilp.search import DEFAULT_STRATEGY, IncumbentPool
    from autotm_core.ilp.search.budget import Budget
    from autotm_core.ilp.search.events import ignore
    from autotm_core.plugins import get_solver

    capacity = 3 * 2**30
    graph = _tied_head()
    system = preset("gpu-h200").with_capacity("hbm", capacity)
    costs = resolve_costs(graph, system)
    fitting = _Fitting(graph=graph, system=system, costs=costs, options=FormulationOptions(),
                       solver=get_solver("highs"), relative_gap=0.01, strategy=DEFAULT_STRATEGY,
                       budget=Budget.of(None), listener=ignore, on_round=None,
                       pool=IncumbentPool(graph, system, costs, test=Packing(graph, system)))
    n = len(graph.kernels)
    used = np.full((len(system.pools), n), capacity // 2, dtype=np.int64)
    # w (64 MiB) shares one address at the step's two ends and found none
    overflow = Overflow("hbm", range(n), [excess_mib * 2**20] * n, split_tensors=("w",))
    fitting._tighten(SimpleNamespace(simulation=SimpleNamespace(pool_nbytes=used)),
                     SimpleNamespace(overflows=(overflow,)))
    assert fitting.begin_outside == {"hbm": frozenset({"w"})}
    if cut:  # barring w takes 64 of the 100 MiB away at most: the limits are cut as well
        assert set(fitting.limits) == {"hbm"}
        assert max(fitting.limits["hbm"]) <= capacity // 2 - excess_mib * 2**20
    else:
        assert fitting.limits == {}
