"""Property tests of the verifier's rerun rules (issue 27): random valid plans with reruns
verify clean; each targeted corruption is reported, naming the rerun, the tensor and the
kernels.

Two findings are kept as strict expected failures (they pass, and fail as such, once the
verifier is changed): the capacity message at a boundary does not name the reruns whose
outputs fill it, and a rerun reading a value recomputed by an earlier rerun is accepted even
when a kernel had overwritten that value before the rerun's kernel first read it.
"""

from __future__ import annotations

import functools

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core import Graph, MemorySystem
from autotm_core.examples.networks import training_chain
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.plans import MoveKind, Plan, Rerun, Residency, make_plan, verify_plan
from autotm_core.plans.build import kernel_configs

from .random_plans import three_pools, tiny_system
from .random_reruns import random_plan_with_reruns

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def chain(layers: int) -> Graph:
    """A training chain whose forward kernels need a workspace (so do their reruns)."""
    graph = training_chain(layers, base_nbytes=4096)
    return attrs.evolve(graph, kernels=[
        attrs.evolve(k, workspace_nbytes=8192) if k.name.startswith("fwd") else k
        for k in graph.kernels])


@functools.cache
def system(three: bool) -> MemorySystem:
    return three_pools() if three else tiny_system(None)


cases = st.tuples(st.integers(1, 5), st.booleans(), st.integers(0, 2**32 - 1))


def build(case: tuple[int, bool, int]) -> tuple[Plan, Graph, MemorySystem]:
    layers, three, seed = case
    graph, sys_ = chain(layers), system(three)
    return random_plan_with_reruns(graph, sys_, seed), graph, sys_


def kernel(graph: Graph, k: int) -> str:
    """How the verifier names a kernel."""
    return f"kernel #{k} ({graph.kernels[k].name!r})"


def rerun_name(graph: Graph, plan: Plan, i: int) -> str:
    """How the verifier names ``plan.reruns[i]``."""
    r = plan.reruns[i]
    return f"reruns[{i}] ({kernel(graph, r.kernel)} again before {kernel(graph, r.before)})"


def restored(plan: Plan, graph: Graph, fastest: str) -> list[tuple[int, str]]:
    """(rerun position, tensor) of each residency a rerun restores."""
    landed = {(m.tensor, m.target, m.kernel) for m in plan.moves}
    begins = {(r.tensor, r.first) for r in plan.residencies if r.pool == fastest}
    return [(i, t) for i, r in enumerate(plan.reruns) for t in graph.kernels[r.kernel].outputs
            if (t, r.before) in begins and (t, fastest, r.before) not in landed]


@SETTINGS
@given(case=cases)
def test_random_plans_with_reruns_pass(case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    assert verify_plan(plan, graph, sys_) == []


def test_the_random_plans_rerun_chains_and_fetch_inputs():
    """The generator exercises what the rules allow: chains, inputs copied in, early restores."""
    seen = {"reruns": 0, "chains": 0, "fetched": 0, "early": 0}
    for seed in range(40):
        plan, graph, sys_ = build((4, seed % 2 == 1, seed))
        fast = sys_.pools[0].name
        boundaries = [r.before for r in plan.reruns]
        seen["reruns"] += bool(plan.reruns)
        seen["chains"] += len(boundaries) > len(set(boundaries))
        seen["fetched"] += any(m.target == fast and m.kind is MoveKind.SYNC
                               and m.kernel in boundaries for m in plan.moves)
        uses = {t: [k for k, kr in enumerate(graph.kernels) if t in kr.tensors]
                for t in graph.tensor_index}
        seen["early"] += any(plan.reruns[i].before not in uses[t]
                             for i, t in restored(plan, graph, fast))
    assert all(count >= 3 for count in seen.values()), seen


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_an_input_written_in_between_is_named(case: tuple[int, bool, int], pick: int) -> None:
    """Rerunning a forward layer after the optimizer updated its weight reads another value."""
    plan, graph, sys_ = build(case)
    layers = case[0]
    if layers < 2:
        return
    j = pick % (layers - 1)
    k = graph.kernel_index
    fwd, update = k[f"fwd{j}"], k[f"sgd_w{j}"]
    late = update + 1
    bad = attrs.evolve(plan, reruns=(*plan.reruns, Rerun(fwd, late)))
    problems = verify_plan(bad, graph, sys_)
    name = rerun_name(graph, bad, len(plan.reruns))
    assert any(name in p and f"its input 'w{j}' (parameter) was written by "
               f"{kernel(graph, update)}" in p for p in problems), problems


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_an_input_outside_the_fastest_pool_is_named(case: tuple[int, bool, int],
                                                    pick: int) -> None:
    """An input kept in the fastest pool over the boundary is moved to a slower one."""
    plan, graph, sys_ = build(case)
    fast, slow = sys_.pools[0].name, sys_.pools[1].name
    live = graph.liveness
    candidates = []
    for i, rerun in enumerate(plan.reruns):
        for v in graph.kernels[rerun.kernel].inputs:
            t = graph.tensor_index[v]
            mine = [j for j, r in enumerate(plan.residencies) if r.tensor == v]
            whole = [j for j in mine if plan.residencies[j].pool == fast
                     and plan.residencies[j].first == live.first[t]
                     and plan.residencies[j].last == live.last[t]]
            if len(mine) == 1 and whole and graph.tensors[t].pools is None \
                    and not any(m.tensor == v for m in plan.moves):
                candidates.append((i, v, whole[0]))
    if not candidates:
        return
    i, v, row = candidates[pick % len(candidates)]
    residencies = list(plan.residencies)
    residencies[row] = attrs.evolve(residencies[row], pool=slow)
    bad = attrs.evolve(plan, residencies=residencies,
                       configs=kernel_configs(graph, sys_, residencies, plan.moves))
    problems = verify_plan(bad, graph, sys_)
    assert any(rerun_name(graph, bad, i) in p and f"its input {v!r} is not in pool {fast!r} "
               "at that boundary" in p for p in problems), problems


@SETTINGS
@given(case=cases, pick=st.integers(0, 10**6))
def test_a_restore_without_its_rerun_is_named(case: tuple[int, bool, int], pick: int) -> None:
    plan, graph, sys_ = build(case)
    fast = sys_.pools[0].name
    found = restored(plan, graph, fast)
    if not found:
        return
    i, tensor = found[pick % len(found)]
    b = plan.reruns[i].before
    bad = attrs.evolve(plan, reruns=plan.reruns[:i] + plan.reruns[i + 1:])
    problems = verify_plan(bad, graph, sys_)
    assert any(repr(tensor) in p and f"begins at {kernel(graph, b)}" in p
               and "no rerun restores it there" in p for p in problems), problems


def boundary_use(plan: Plan, graph: Graph, sys_: MemorySystem) -> tuple[list[int], list[int]]:
    """Bytes in the fastest pool at each half step straight from the rules (quadratic,
    obviously right): the residencies (a landed or restored one from the boundary, a
    copied-out one to it) and workspaces, and apart, what the reruns add at each boundary:
    the most, while one of them runs, of its workspace and the outputs of those so far that
    they do not restore and still hold (to the boundary's end when a kernel from there on
    uses it, else to the last rerun there using it)."""
    size = {t.name: t.nbytes for t in graph.tensors}
    n = len(graph.kernels)
    pool = sys_.pools[0].name
    sync = [m for m in plan.moves if m.kind is MoveKind.SYNC]
    landed = {(m.tensor, m.target, m.kernel) for m in sync}
    left = {(m.tensor, m.source, m.kernel) for m in sync}
    kept = {(t, plan.reruns[i].before) for i, t in restored(plan, graph, pool)}
    used = [0] * (2 * n + 1)
    for r in plan.residencies:
        if r.pool != pool:
            continue
        start = 2 * r.first + 1 - ((r.tensor, pool, r.first) in landed
                                   or (r.tensor, r.first) in kept)
        end = 2 * r.last + 1 + ((r.tensor, pool, r.last + 1) in left)
        for h in range(start, end + 1):
            used[h] += size[r.tensor]
    extra = [0] * (2 * n + 1)
    for k in range(n):
        used[2 * k + 1] += graph.kernels[k].workspace_nbytes
    for b in {r.before for r in plan.reruns}:
        here = [graph.kernels[r.kernel] for r in plan.reruns if r.before == b]
        for i, kr in enumerate(here):
            held = {t for j, kj in enumerate(here[:i + 1]) for t in kj.outputs
                    if (t, b) not in kept
                    and (any(t in kl.tensors for kl in graph.kernels[b:])
                         or any(t in kl.tensors for kl in here[i:]))}
            extra[2 * b] = max(extra[2 * b],
                               kr.workspace_nbytes + sum(size[t] for t in held))
    return used, extra


@SETTINGS
@given(case=cases)
def test_capacity_over_only_at_a_boundary_by_rerun_outputs_is_caught(
        case: tuple[int, bool, int]) -> None:
    plan, graph, sys_ = build(case)
    fast = sys_.pools[0].name
    used, extra = boundary_use(plan, graph, sys_)
    capacity = max(used)
    over = [h // 2 for h, (u, e) in enumerate(zip(used, extra, strict=True)) if u + e > capacity]
    if not over:
        return
    problems = verify_plan(attrs.evolve(plan, capacities={**plan.capacities, fast: capacity}),
                           graph, sys_.with_capacity(fast, capacity))
    assert problems and all("capacity" in p for p in problems), problems
    assert any(f"at the boundary before {kernel(graph, b)}" in p for p in problems
               for b in over), problems
    peak = max(u + e for u, e in zip(used, extra, strict=True))  # exactly enough: clean
    assert verify_plan(attrs.evolve(plan, capacities={**plan.capacities, fast: peak}),
                       graph, sys_.with_capacity(fast, peak)) == []


def test_capacity_over_at_a_boundary_names_the_reruns_and_their_outputs():
    plan, graph, sys_ = _chain_plan_with_a_dropped_output()
    fast = sys_.pools[0].name
    used, _ = boundary_use(plan, graph, sys_)
    capacity = max(used)
    problems = verify_plan(attrs.evolve(plan, capacities={**plan.capacities, fast: capacity}),
                           graph, sys_.with_capacity(fast, capacity))
    dropped = [(i, t) for i, r in enumerate(plan.reruns) for t in graph.kernels[r.kernel].outputs
               if (i, t) not in restored(plan, graph, fast)]
    assert dropped
    assert any(rerun_name(graph, plan, i) in p and repr(t) in p for p in problems
               for i, t in dropped), problems


def _chain_plan_with_a_dropped_output() -> tuple[Plan, Graph, MemorySystem]:
    for seed in range(100):
        plan, graph, sys_ = build((4, False, seed))
        used, extra = boundary_use(plan, graph, sys_)
        if any(u + e > max(used) for u, e in zip(used, extra, strict=True)):
            return plan, graph, sys_
    raise AssertionError("no random plan drops a rerun output at a boundary")


def overwritten_step() -> tuple[Graph, MemorySystem, Plan]:
    """``t`` is made, then scaled in place, then read by ``use`` into ``y``; ``y`` is dropped
    and restored before ``end`` by rerunning ``make`` (into scratch) and then ``use``, which so
    reads ``t`` as ``make`` wrote it, not as ``scale_`` left it: another value."""
    n = 4096
    b = GraphBuilder("overwritten")
    b.tensor("x", nbytes=n, kind=TensorKind.INPUT)
    for name in ("t", "y", "z"):
        b.tensor(name, nbytes=n)
    b.tensor("out", nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("make", op="matmul", inputs=["x"], outputs=["t"])
    b.kernel("scale_", op="mul_", inputs=["t"], outputs=["t"])
    b.kernel("use", op="relu", inputs=["t"], outputs=["y"])
    b.kernel("mid", op="layer", inputs=["x"], outputs=["z"])
    b.kernel("end", op="layer", inputs=["y", "z", "x"], outputs=["out"])
    graph = b.build()
    sys_ = tiny_system(None)
    plan = make_plan(graph, sys_, residencies=[
        Residency("x", "fast", 0, 4), Residency("t", "fast", 0, 2), Residency("y", "fast", 2, 2),
        Residency("y", "fast", 4, 4), Residency("z", "fast", 3, 4),
        Residency("out", "fast", 4, 4)], reruns=[Rerun(0, 4), Rerun(2, 4)], planner="hand")
    return graph, sys_, plan


def test_a_rerun_reading_a_recomputed_value_overwritten_before_its_kernel_is_named():
    graph, sys_, plan = overwritten_step()
    problems = verify_plan(plan, graph, sys_)
    assert any(rerun_name(graph, plan, 1) in p and "'t'" in p and "'scale_'" in p
               for p in problems), problems
