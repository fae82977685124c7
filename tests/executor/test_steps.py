"""A plan is one step of a training loop: the executor runs step after step, carrying state over."""

from __future__ import annotations

import attrs
import pytest
from tests.executor.helpers import MIB, pmm_home_plan, sgd_plan, sgd_step, two_pools

from addresses.wrap import wrap_offset_problems
from autotm_core.addresses import assign_offsets
from autotm_core.baselines import all_fast
from autotm_core.errors import ExecutionError, PlanError
from autotm_core.executor import build_program, plan_layout
from autotm_core.executor.check import replay_one_pool
from autotm_core.executor.run import execute
from autotm_core.plans import check_plan, verify_plan
from autotm_core.plans import verify as plans_verify


def fitted(plan, graph, system):  # type: ignore[no-untyped-def]
    result = assign_offsets(plan, graph, system, alignment_nbytes=64)
    assert result.fits
    # Spec rule 3's offset clause, checked here too while the verifier is being taught it.
    assert wrap_offset_problems(result.plan, graph) == []
    return result.plan


def test_a_parameter_evicted_and_updated_in_place_carries_over_three_steps():
    graph, system = sgd_step(), two_pools()
    plan = fitted(sgd_plan(graph, system), graph, system)
    assert verify_plan(plan, graph, system) == []
    start, _, end = (r for r in plan.residencies if r.tensor == "w")
    assert (start.pool, start.first, end.pool, end.last) == ("dram", 0, "dram", 3)
    assert start.offset == end.offset  # where the next step finds it

    # Between two steps w stays where sgd left it: the bytes fwd reads next are sgd's.
    at_end: list[bytes] = []
    carried: list[bool] = []

    def watch(k, view):  # type: ignore[no-untyped-def]
        if k == 0 and at_end:
            carried.append(bytes(view("w", "dram", 0)) == at_end[-1])
        if k == 3:
            at_end.append(bytes(view("w", "dram", 3)))

    report = execute(plan, graph, system, repeat=3, after_kernel=watch)
    assert report.check is not None and report.check.matches and report.check.step == -1
    assert carried == [True, True] and len(set(at_end)) == 3  # updated every step
    assert report.sync_nbytes == 2 * graph.tensor("w").nbytes  # the plan's two moves, no more

    # Equal, step by step, to every tensor in one pool: the one-pool replay and the plan that
    # keeps everything in dram; and w is not re-initialised: its bytes after 4 steps differ
    # from those after 1.
    digests, final = replay_one_pool(graph, steps=4)
    assert report.final_digests == final and (report.digests == digests[-1]).all()
    alone = execute(fitted(all_fast(graph, system), graph, system), graph, system,
                    repeat=3)
    assert alone.check.matches and alone.final_digests == report.final_digests
    assert replay_one_pool(graph, steps=1)[1]["w"] != final["w"]


def test_a_parameter_at_home_in_an_unbounded_pool_gets_one_place_there():
    graph, system = sgd_step(metric=True), two_pools()
    plan = pmm_home_plan(graph, system)
    assert verify_plan(plan, graph, system) == []
    layout = plan_layout(plan, graph, system)  # pmm is unbounded: the executor packs it
    start, _, end = (layout.residency_places[i] for i, r in enumerate(plan.residencies)
                     if r.tensor == "w")
    assert start == end
    report = execute(plan, graph, system, repeat=3)
    assert report.check.matches
    assert report.final_digests == replay_one_pool(graph, steps=4)[1]


def test_a_corrupted_copy_during_the_eviction_shows_in_the_step_it_happened():
    graph, system = sgd_step(), two_pools()
    plan = fitted(sgd_plan(graph, system), graph, system)
    seen = []

    def corrupt(k, view):  # type: ignore[no-untyped-def]
        seen.append(k)
        if k == 1 and len(seen) > 4:  # the second timed step: w is in pmm only
            view("w", "pmm", 1)[:8] ^= 0xFF

    report = execute(plan, graph, system, repeat=3, after_kernel=corrupt)
    assert not report.check.matches
    assert (report.check.step, report.check.first_kernel) == (2, 2)  # bwd reads the copy back
    assert "w" in report.check.tensors


def test_inputs_get_each_steps_data():
    graph, system = sgd_step(), two_pools()
    digests, _ = replay_one_pool(graph, steps=3)
    assert len({int(d) for d in digests[:, 0]}) == 3  # fwd reads new data every step
    report = execute(fitted(sgd_plan(graph, system), graph, system), graph, system, repeat=2)
    assert report.check.matches


def test_a_plan_that_is_not_a_steady_state_is_refused_by_the_verifier():
    graph, system = sgd_step(), two_pools()
    plan = fitted(sgd_plan(graph, system, stale_copy=True), graph, system)
    with pytest.raises(PlanError, match="'w' begins the step in pool 'pmm'"):
        execute(plan, graph, system, repeat=1)


def test_a_stale_copy_carried_into_the_next_step_is_caught_by_the_bytes(monkeypatch):
    # Were the verifier bypassed, the run itself would show it: nothing is re-initialised
    # between steps, so step 1 copies the old w back from pmm before bwd.
    graph, system = sgd_step(), two_pools()
    plan = fitted(sgd_plan(graph, system, stale_copy=True), graph, system)
    monkeypatch.setattr(plans_verify, "check_plan", lambda plan, graph, system: plan)
    report = execute(plan, graph, system, repeat=1)
    assert not report.check.matches
    assert (report.check.step, report.check.first_kernel) == (1, 2)


def test_the_executor_needs_a_tensor_living_on_where_it_began():
    # Its own layout too: a persistent tensor's two residencies at different offsets cannot
    # be run as a loop, verified or not.
    graph, system = sgd_step(), two_pools()
    plan = fitted(sgd_plan(graph, system), graph, system)
    moved = [attrs.evolve(r, offset=r.offset + 2 * MIB) if (r.tensor, r.first) == ("w", 2)
             else r for r in plan.residencies]
    shifted = attrs.evolve(plan, residencies=moved)
    with pytest.raises(PlanError):
        check_plan(shifted, graph, system)
    layout = plan_layout(shifted, graph, system)
    with pytest.raises(ExecutionError, match=r"'w' begins the step in pool 'dram' at offset 0 "
                                             r"\(residencies\[1\]\), but the step leaves it at "
                                             r"offset 2097152") as info:
        build_program(shifted, graph, layout, flops=[0.0] * 4)
    assert "assign_offsets" in info.value.hint
