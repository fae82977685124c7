"""The physical lower bound under every cost model: no valid plan, random or planned,
simulates below it, whether its kernels are priced by a roofline preset (a slower pool
with a lower latency included) or by a measured table with arbitrary times (the same for
every placement, or faster from slower pools), with reruns or without."""

from __future__ import annotations

import functools

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core import Graph, GraphBuilder, MemorySystem
from autotm_core.baselines import run_baseline
from autotm_core.costs import KernelCosts, resolve_costs
from autotm_core.examples.networks import training_chain
from autotm_core.planning import PlanSettings, Problem, load_problem, plan
from autotm_core.planning.lower_bound import physical_lower_bound
from autotm_core.plans import MoveKind, Plan, check_plan
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from costs.random_tables import TABLES, measured
from plans.random_plans import random_plan, three_pools, tiny_system
from plans.random_reruns import random_plan_with_reruns
from plans.random_spans import random_spanning_plan


def any_configs(plan_: Plan, graph: Graph, system: MemorySystem,
                rng: np.random.Generator) -> Plan:
    """``plan_`` with each kernel reading each tensor it only reads from a random pool it is
    usable in there (not only the fastest, so that a table's cheaper slow placements are
    taken); a tensor it writes stays where the plan writes it (the copies elsewhere would
    go stale)."""
    usable: dict[tuple[str, int], set[str]] = {}
    for r in plan_.residencies:
        for k in range(r.first, r.last + 1):
            usable.setdefault((r.tensor, k), set()).add(r.pool)
    for m in plan_.moves:  # a copy still being written is not usable yet
        if m.kind is MoveKind.ASYNC:
            for k in range(m.kernel, m.until):
                usable.get((m.tensor, k), set()).discard(m.target)
    configs = tuple(
        tuple(row[i] if t in kernel.outputs
              else str(rng.choice(sorted(usable.get((t, k), ())) or [row[i]]))
              for i, t in enumerate(kernel.tensors))
        for k, (kernel, row) in enumerate(zip(graph.kernels, plan_.configs, strict=True)))
    return attrs.evolve(plan_, configs=configs)


@functools.cache
def chain(layers: int, base_nbytes: int = 4096) -> Graph:
    """A training chain whose forward kernels need a workspace (so do their reruns)."""
    graph = training_chain(layers, base_nbytes=base_nbytes)
    return attrs.evolve(graph, kernels=[
        attrs.evolve(k, workspace_nbytes=8192) if k.name.startswith("fwd") else k
        for k in graph.kernels])


SYSTEMS = ("tiny", "blocking", "three-pools", "hbm-dram-cxl", "optane-2019", "gpu-h200")
"""``blocking``: the tiny system whose links carry the kernels' accesses, so its blocking
copies (8 and 6 GB/s) outrun everything that overlaps kernels (4 and 3 GB/s)."""


@functools.cache
def system_of(name: str) -> MemorySystem:
    """The system called ``name``, its fastest pool unbounded (each plan sets its limit)."""
    if name in ("tiny", "blocking"):
        tiny = tiny_system(None)
        return tiny if name == "tiny" else attrs.evolve(tiny, links=tuple(
            attrs.evolve(link, kernel_traffic=True) for link in tiny.links))
    system = three_pools() if name == "three-pools" else preset(name)
    return system.with_capacity(system.fast.name, None)


def assert_bound_holds(plan_: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts,
                       *, recompute: bool, integral_seconds: float = 0.0) -> None:
    """The plan, under a limit of its own fastest-pool peak (so it fits), is no faster than
    the bound at that limit (with ``integral_seconds`` of its integral program)."""
    check_plan(plan_, graph, system)
    simulation = simulate(plan_, graph, system, costs)
    peak = int(simulation.pool_nbytes[0].max())
    problem = Problem(graph=graph, system=system, costs=costs, limit=str(peak))
    bound = physical_lower_bound(problem, recompute=recompute,
                                 integral_seconds=integral_seconds)
    assert simulation.step_seconds >= bound.seconds * (1 - 1e-7), (
        f"{simulation.step_seconds} < {bound}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.sampled_from([4096, 1 << 20]), st.sampled_from(SYSTEMS),
       st.sampled_from(["roofline", *TABLES]), st.booleans(), st.integers(0, 2**32 - 1))
def test_no_random_plan_beats_the_bound(layers: int, base_nbytes: int, system_name: str,
                                        costs_name: str, reruns: bool, seed: int) -> None:
    # small tensors leave compute binding, large ones the crossings (a 1 MiB copy: 20 us
    # to 0.5 ms here); the tables' times range over both
    graph, system = chain(layers, base_nbytes), system_of(system_name)
    rng = np.random.default_rng(seed)
    if reruns:
        plan_ = random_plan_with_reruns(graph, system, seed)
    else:
        plan_ = random_plan(graph, system, seed, move_rate=0.5)
    costs = (resolve_costs(graph, system) if costs_name == "roofline"
             else measured(graph, len(system.pools), TABLES[costs_name], seed))
    assert_bound_holds(any_configs(plan_, graph, system, rng), graph, system, costs,
                       recompute=reruns)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 4), st.sampled_from([4096, 1 << 20]), st.sampled_from(SYSTEMS),
       st.sampled_from(["roofline", *TABLES]), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_no_random_spanning_plan_beats_the_bound(layers: int, base_nbytes: int,
                                                 system_name: str, costs_name: str,
                                                 max_span: int, seed: int) -> None:
    """Copies in flight over up to ``max_span`` kernels, on the simulator's streams (earliest
    until first): the bound's timing facts hold for them too."""
    graph, system = chain(layers, base_nbytes), system_of(system_name)
    rng = np.random.default_rng(seed)
    plan_ = random_spanning_plan(graph, system, seed, move_rate=0.5, max_span=max_span)
    costs = (resolve_costs(graph, system) if costs_name == "roofline"
             else measured(graph, len(system.pools), TABLES[costs_name], seed))
    assert_bound_holds(any_configs(plan_, graph, system, rng), graph, system, costs,
                       recompute=False)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 3), st.sampled_from([4096, 1 << 20]), st.sampled_from(SYSTEMS),
       st.sampled_from(["roofline", *TABLES]), st.integers(0, 2), st.integers(0, 2**32 - 1))
def test_no_random_plan_beats_the_integral_bound(layers: int, base_nbytes: int,
                                                 system_name: str, costs_name: str, kind: int,
                                                 seed: int) -> None:
    """With the big tensors' columns integral (each a plan's own point takes whole), the
    bound still holds for random plans, spanning plans and plans with reruns."""
    graph, system = chain(layers, base_nbytes), system_of(system_name)
    rng = np.random.default_rng(seed)
    if kind == 0:
        plan_ = random_plan(graph, system, seed, move_rate=0.5)
    elif kind == 1:
        plan_ = random_spanning_plan(graph, system, seed, move_rate=0.5, max_span=4)
    else:
        plan_ = random_plan_with_reruns(graph, system, seed)
    costs = (resolve_costs(graph, system) if costs_name == "roofline"
             else measured(graph, len(system.pools), TABLES[costs_name], seed))
    assert_bound_holds(any_configs(plan_, graph, system, rng), graph, system, costs,
                       recompute=kind == 2, integral_seconds=5.0)


def test_a_slower_pool_with_a_lower_latency_is_not_beaten() -> None:
    # hbm-dram-cxl: dram's latency (9e-8 s) is below hbm's (1.3e-7 s), so a small kernel
    # with its tensors in dram runs faster than all in hbm, the old bound's compute term
    graph = training_chain(1, base_nbytes=4096)
    system = system_of("hbm-dram-cxl")
    costs = resolve_costs(graph, system)
    names = [p.name for p in system.pools]
    static = run_baseline("all-slow", graph, system, costs=costs)
    in_dram = attrs.evolve(static, residencies=tuple(
        attrs.evolve(r, pool=names[1]) for r in static.residencies),
        configs=tuple(tuple(names[1] for _ in row) for row in static.configs))
    step = simulate(in_dram, graph, system, costs).step_seconds
    all_fast = load_problem(graph, system).all_fast_seconds
    assert all_fast is not None and step < all_fast
    assert_bound_holds(in_dram, graph, system, costs, recompute=False)


@pytest.mark.highs
def test_the_static_plan_of_the_cnn_on_hbm_dram_cxl_is_not_beaten() -> None:
    # the case: 0.6403 ms against a bound of 0.6424 ms (the all-fast time)
    problem = load_problem("example:cnn", "hbm-dram-cxl", limit="0:1")
    step = plan(problem, "static", PlanSettings(addresses=False)).step_seconds
    bound = physical_lower_bound(problem)
    assert problem.all_fast_seconds is not None and step < problem.all_fast_seconds
    assert bound.seconds <= step * (1 + 1e-9)
    assert bound.seconds == bound.compute_seconds > 0.99 * step


def big_step() -> Graph:
    """Three kernels over tensors of 100 MB: moving any takes milliseconds."""
    g = GraphBuilder("big")
    mb = 100 << 20
    x = g.tensor("x", nbytes=mb, kind="input")
    a, b = g.tensor("a", nbytes=mb), g.tensor("b", nbytes=mb)
    loss = g.tensor("loss", nbytes=8, kind="output")
    g.kernel("k0", op="layer", inputs=[x], outputs=[a])
    g.kernel("k1", op="layer", inputs=[a], outputs=[b])
    g.kernel("k2", op="layer", inputs=[a, b], outputs=[loss])
    return g.build()


def test_a_table_that_prices_remote_accesses_at_nothing_leaves_compute_alone() -> None:
    # every placement 1 ms: all in the slow pool takes 3 ms, though the old bound, reading
    # the kernels' accesses at the slow pool's bandwidth, said 45.6 ms
    graph, system = big_step(), tiny_system(None)
    costs = measured(graph, 2, lambda configs, _: np.full(len(configs), 1e-3), 0)
    all_slow = run_baseline("all-slow", graph, system, costs=costs)
    step = simulate(all_slow, graph, system, costs).step_seconds
    assert step == pytest.approx(3e-3)
    problem = Problem(graph=graph, system=system, costs=costs, limit="1000")
    bound = physical_lower_bound(problem)
    assert bound.compute_seconds == pytest.approx(3e-3)
    assert bound.seconds <= step * (1 + 1e-9)
    # the kernels may read 200 MB from the slow pool in 1 ms: faster than any link
    assert bound.rate_in.access_bytes_per_second == pytest.approx(2 * (100 << 20) / 1e-3)
