"""Copies spanning kernels on copy streams: hand-checked schedules, the numba loop equal to
the reference on random spanning plans, one-kernel copies priced as max(kernel, channel)
as before, and a copy given longer never making the step slower."""

from __future__ import annotations

import functools
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core import Graph, MemorySystem
from autotm_core.costs.roofline import roofline_costs
from autotm_core.errors import PlanError
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan, verify_plan
from autotm_core.simulation import Engine, simulate
from autotm_core.simulation.simulate import copy_rates, kernel_traffic_seconds
from plans.random_plans import random_plan, three_pools, tiny_graph, tiny_system
from plans.random_spans import random_spanning_plan
from plans.test_verify_properties import chain

from .test_link_channels import linked
from .test_simulate import per_entry_costs

NS = 1e-9
EVICT_A = 200 / 3e9  # a, fast -> slow, async
FETCH_W = 50 / 4e9  # w, slow -> fast, async


def evict_a_over_k1_k2(*, fetch_w_async: bool) -> Plan:
    """``a`` evicted from k1 until k3 (in flight over k1 and k2); ``w`` fetched during k1
    (listed after ``a``'s eviction), or synchronously before k2."""
    w_fast = Residency("w", "fast", 1, 2) if fetch_w_async else Residency("w", "fast", 2, 2)
    w_move = (Move("w", "slow", "fast", 1, MoveKind.ASYNC) if fetch_w_async
              else Move("w", "slow", "fast", 2))
    return make_plan(tiny_graph(), tiny_system(), planner="hand", residencies=[
        Residency("x", "fast", 0, 0), Residency("w", "slow", 0, 3), w_fast,
        Residency("a", "fast", 0, 2), Residency("a", "slow", 1, 3),
        Residency("b", "fast", 1, 2), Residency("c", "fast", 2, 3),
        Residency("loss", "fast", 3, 3),
    ], moves=[Move("a", "fast", "slow", 1, MoveKind.ASYNC, until=3), w_move])


@pytest.mark.parametrize("engine", list(Engine))
def test_a_copy_spanning_two_kernels_hides_behind_both(engine: Engine) -> None:
    plan = evict_a_over_k1_k2(fetch_w_async=False)
    assert verify_plan(plan, tiny_graph(), tiny_system()) == []
    sim = simulate(plan, tiny_graph(), tiny_system(), per_entry_costs(NS, 10 * NS),
                   engine=engine)
    assert sim.kernel_seconds == pytest.approx([12 * NS, 2 * NS, 3 * NS, 12 * NS])
    # k1 does not wait for a (until 3); the sync fetch of w pauses the stream; k3 waits for a,
    # which has run 2 ns during k1 and the rest from k2's start
    assert sim.effective_seconds == pytest.approx([12 * NS, 2 * NS, EVICT_A - 2 * NS, 12 * NS])
    assert sim.async_seconds == pytest.approx([0, EVICT_A, 0, 0])
    assert sim.step_seconds == pytest.approx(24 * NS + EVICT_A + 50 / 8e9)
    one_kernel = attrs.evolve(plan, moves=[attrs.evolve(plan.moves[0], until=2), plan.moves[1]])
    before = simulate(one_kernel, tiny_graph(), tiny_system(), per_entry_costs(NS, 10 * NS),
                      engine=engine)
    assert before.step_seconds == pytest.approx(sim.step_seconds + 3 * NS)  # k2 was not hidden


@pytest.mark.parametrize("engine", list(Engine))
def test_copies_on_one_stream_run_earliest_until_first(engine: Engine) -> None:
    plan = evict_a_over_k1_k2(fetch_w_async=True)
    costs = per_entry_costs(NS, 10 * NS)
    shared = linked(duplex=False, kernel_traffic=False)
    assert verify_plan(plan, tiny_graph(), shared) == []
    sim = simulate(plan, tiny_graph(), shared, costs, engine=engine)
    # w's fetch (due before k2) goes before a's eviction (due before k3, listed first) on the
    # one engine: k1 waits for w alone, k2 for the whole of a (k1 left it no time)
    assert sim.effective_seconds == pytest.approx([12 * NS, FETCH_W, EVICT_A, 12 * NS])
    duplex = simulate(plan, tiny_graph(), linked(duplex=True, kernel_traffic=False), costs,
                      engine=engine)
    # each direction its own stream: k1 waits for w only, k3 for a
    assert duplex.effective_seconds == pytest.approx(
        [12 * NS, FETCH_W, EVICT_A - FETCH_W, 12 * NS])


@pytest.mark.parametrize("engine", list(Engine))
def test_a_copy_due_sooner_takes_the_stream_from_one_due_later(engine: Engine) -> None:
    """One engine: w is copied to slow from k1 until the step's end; a is evicted during k1
    and fetched back during k2 (issued later than w's copy, due sooner): a's copies run
    first, w's in what is left, in k3."""
    graph, system = tiny_graph(), linked(duplex=False, kernel_traffic=False)
    plan = make_plan(graph, system, planner="hand", residencies=[
        Residency("x", "fast", 0, 0), Residency("w", "fast", 0, 3), Residency("w", "slow", 1, 3),
        Residency("a", "fast", 0, 1), Residency("a", "slow", 1, 3), Residency("a", "fast", 2, 3),
        Residency("b", "fast", 1, 2), Residency("c", "fast", 2, 3),
        Residency("loss", "fast", 3, 3),
    ], moves=[Move("w", "fast", "slow", 1, MoveKind.ASYNC, until=4),
              Move("a", "fast", "slow", 1, MoveKind.ASYNC),
              Move("a", "slow", "fast", 2, MoveKind.ASYNC)])
    assert verify_plan(plan, graph, system) == []
    sim = simulate(plan, graph, system, per_entry_costs(NS, 10 * NS), engine=engine)
    assert sim.kernel_seconds == pytest.approx([3 * NS, 2 * NS, 3 * NS, 3 * NS])
    # in issue order, k2 would wait for w's copy too (50 / 3e9 more)
    assert sim.effective_seconds == pytest.approx([3 * NS, EVICT_A, 200 / 4e9, 50 / 3e9])


@pytest.mark.parametrize(("engine", "until"), [(e, u) for e in Engine for u in (3, 4)])
def test_a_kernels_traffic_goes_before_a_copy_in_flight(engine: Engine, until: int) -> None:
    """w is fetched from k1 until k3 or the step's end; k2 reads w from slow (its source)
    over the link the copy uses: k2's read goes first, the copy takes what is left."""
    graph = tiny_graph()
    system = linked(duplex=True, kernel_traffic=True)
    plan = make_plan(graph, system, planner="hand", residencies=[
        Residency("x", "fast", 0, 0), Residency("w", "slow", 0, 3),
        Residency("w", "fast", 1, until - 1), Residency("a", "fast", 0, 3),
        Residency("b", "fast", 1, 2), Residency("c", "fast", 2, 3),
        Residency("loss", "fast", 3, 3),
    ], moves=[Move("w", "slow", "fast", 1, MoveKind.ASYNC, until=until)])
    assert verify_plan(plan, graph, system) == []
    assert plan.configs[2] == ("slow", "fast", "fast")
    sim = simulate(plan, graph, system, per_entry_costs(NS, 10 * NS), engine=engine)
    read_w = copy_w = 50 / 4e9  # over slow -> fast, as k0's read of w
    rest = copy_w - 2 * NS  # the copy runs 2 ns during k1
    if until == 3:  # k3 waits for the copy: k2 lasts its read, then the rest of the copy
        expected = [read_w, 2 * NS, read_w + rest, 3 * NS]
    else:  # k2 lasts its read (12.5 ns > its 12 ns); the copy runs on during k3
        expected = [read_w, 2 * NS, read_w, rest]
    assert sim.effective_seconds == pytest.approx(expected)


def test_an_until_outside_the_program_is_refused() -> None:
    plan = evict_a_over_k1_k2(fetch_w_async=False)
    graph, system = tiny_graph(), tiny_system()
    for until in (1, 5):
        bad = attrs.evolve(plan, moves=[attrs.evolve(plan.moves[0], until=until),
                                        plan.moves[1]])
        with pytest.raises(PlanError, match="complete before a kernel outside"):
            simulate(bad, graph, system, per_entry_costs(NS, 10 * NS))


@functools.cache
def streamed(kind: int) -> MemorySystem:
    """The systems the random tests run on: three pools (one engine), two pools with one
    engine, duplex links, duplex links carrying kernel traffic."""
    if kind == 0:
        return three_pools()
    return linked(duplex=kind >= 2, kernel_traffic=kind == 3)


spans = st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(0, 2**32 - 1))


def spanning_case(case: tuple[int, int, int]) -> tuple[Plan, Graph, MemorySystem, Any]:
    """A random spanning plan, its graph, its system and roofline costs."""
    layers, kind, seed = case
    graph, system = chain(layers), streamed(kind)
    plan = random_spanning_plan(graph, system, seed, move_rate=0.5)
    return plan, graph, system, roofline_costs(graph, system)


@settings(max_examples=25, deadline=None)
@given(case=spans)
def test_numba_equals_reference_on_spanning_plans(case: tuple[int, int, int]) -> None:
    plan, graph, system, costs = spanning_case(case)
    fast = simulate(plan, graph, system, costs)
    slow = simulate(plan, graph, system, costs, engine=Engine.REFERENCE)
    for field in ("kernel_seconds", "sync_seconds", "async_seconds", "effective_seconds"):
        np.testing.assert_allclose(getattr(fast, field), getattr(slow, field), rtol=1e-12)
    assert fast.step_seconds == pytest.approx(slow.step_seconds, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(case=spans)
def test_one_kernel_copies_cost_max_of_kernel_and_channels(case: tuple[int, int, int]) -> None:
    """With no copy spanning kernels, each kernel costs max(its time, each channel's copies
    and traffic during it): the model of every formulation, unchanged."""
    layers, kind, seed = case
    graph, system = chain(layers), streamed(kind)
    plan = random_plan(graph, system, seed, move_rate=0.5)
    costs = roofline_costs(graph, system)
    sim = simulate(plan, graph, system, costs)
    expected = np.maximum(sim.kernel_seconds, channel_work(plan, graph, system).max(axis=1))
    np.testing.assert_array_equal(sim.effective_seconds, expected)


def channel_work(plan: Plan, graph: Graph, system: MemorySystem) -> np.ndarray:
    """``(n_kernels, n_channels)`` seconds of each kernel's traffic and of the async copies
    issued at it, per copy channel, added in plan order."""
    from autotm_core.plans.arrays import encode_plan

    channels = system.link_channels
    _, async_bps = copy_rates(system)
    busy = kernel_traffic_seconds(graph, system, encode_plan(plan, graph, system)[0].entry_pools)
    for m in plan.moves:
        if m.kind is MoveKind.ASYNC:
            s, t = system.pool_index(m.source), system.pool_index(m.target)
            busy[m.kernel, channels[s, t]] += graph.tensor(m.tensor).nbytes / async_bps[s, t]
    return busy


@settings(max_examples=25, deadline=None)
@given(case=spans, pick=st.integers(0, 10**6))
def test_more_time_for_a_copy_never_slows_the_step(case: tuple[int, int, int],
                                                   pick: int) -> None:
    plan, graph, system, costs = spanning_case(case)
    copies = [i for i, m in enumerate(plan.moves)
              if m.kind is MoveKind.ASYNC and m.until < len(graph.kernels)]
    if not copies:
        return
    i = copies[pick % len(copies)]
    moves = list(plan.moves)
    moves[i] = attrs.evolve(moves[i], until=moves[i].until + 1)
    for engine in Engine:
        now = simulate(plan, graph, system, costs, engine=engine).step_seconds
        later = simulate(attrs.evolve(plan, moves=moves), graph, system, costs,
                         engine=engine).step_seconds
        assert later <= now * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(case=spans)
def test_the_step_lasts_each_streams_work(case: tuple[int, int, int]) -> None:
    """Streams only run while kernels do, one piece of work at a time."""
    plan, graph, system, costs = spanning_case(case)
    sim = simulate(plan, graph, system, costs)
    work = channel_work(plan, graph, system).sum(axis=0)
    running = sim.effective_seconds.sum()
    assert running >= sim.kernel_seconds.sum() * (1 - 1e-12)
    assert running >= work.max() * (1 - 1e-12)
