"""Plans with reruns run for real: each rerun at its boundary with the kernels' runner, its
outputs restored in the fastest pool or in scratch, timed beside the prediction, and the
bytes still those of the one-pool replay."""

from __future__ import annotations

import pytest
from tests.executor.helpers import recompute_plan, recompute_step, two_pools
from tests.executor.test_kernels import Recording

from autotm_core.addresses import assign_offsets
from autotm_core.costs import resolve_costs
from autotm_core.errors import UsageError
from autotm_core.executor import KernelsDone, ReplayKernels, execute
from autotm_core.plans import verify_plan
from autotm_core.simulation import simulate


def _plan(*, x_moved: bool = False):
    graph, system = recompute_step(), two_pools()
    plan = assign_offsets(recompute_plan(graph, system, x_moved=x_moved), graph, system).plan
    assert verify_plan(plan, graph, system) == []
    return graph, system, plan


@pytest.mark.parametrize("x_moved", [False, True], ids=["x-kept", "x-moved-back"])
def test_a_plan_with_reruns_matches_the_one_pool_replay(x_moved):
    graph, system, plan = _plan(x_moved=x_moved)
    report = execute(plan, graph, system, repeat=2)
    assert report.check is not None and report.check.matches, report.check
    back = graph.kernel_index["back"]
    assert [(r.kernel, r.before) for r in report.reruns] == [(0, back), (1, back)]
    assert all(r.measured_seconds > 0 and r.predicted_seconds > 0 for r in report.reruns)
    assert report.rerun_seconds[back] >= sum(r.measured_seconds for r in report.reruns) * 0.5
    assert report.rerun_seconds.sum() == report.rerun_seconds[back]
    sim = simulate(plan, graph, system, resolve_costs(graph, system))
    assert report.predicted_rerun_seconds.tolist() == pytest.approx(sim.rerun_seconds.tolist())
    assert report.predicted_rerun_seconds[back] == pytest.approx(
        sum(r.predicted_seconds for r in report.reruns))
    assert report.predicted_step_seconds == pytest.approx(sim.step_seconds)
    assert any("reruns" in note and "scratch arena" in note for note in report.notes)


def test_a_rerun_reading_other_bytes_fails_the_check_and_is_named():
    graph, system, plan = _plan()
    f2 = graph.kernel_index["f2"]

    def corrupt(k, view):
        if k == f2 + 1:  # e's first copy is still there, but x changes before f1 reruns
            view("x", "dram", k)[:64] ^= 0xFF

    report = execute(plan, graph, system, repeat=1, after_kernel=corrupt)
    assert not report.check.matches
    assert "reruns[0] (kernel 'f1' again before 'back') read other bytes in step 1" in (
        report.check.detail)


class _Rerunning(Recording):
    """A third party's runner that reruns (and, here, hashes nothing itself and checks
    nothing: the loop's check of the reruns' reads is the only one)."""

    def run_rerun(self, rerun: int) -> int:
        self.calls.append(("rerun", rerun))
        digest = self.inner.run_rerun(rerun)
        return digest if self.hashes_reads else 0

    def finish(self, *, digests, final_digests) -> KernelsDone:
        return KernelsDone(check=None)


def test_the_loop_hashes_the_reads_of_reruns_for_runners_that_do_not():
    graph, system, plan = _plan()
    runner = _Rerunning(hashes_reads=False)
    report = execute(plan, graph, system, kernels=runner, repeat=1)
    assert report.check is None  # every rerun read what its kernel first read
    back = graph.kernel_index["back"]
    calls = [c for c in runner.calls if c[0] in ("rerun", "kernel")]
    assert calls[back:back + 3] == [("rerun", 0), ("rerun", 1), ("kernel", back)]

    def corrupt(k, view):
        if k == back - 1:
            view("x", "dram", k)[:64] ^= 0xFF

    runner = _Rerunning(hashes_reads=False)  # the loop hashes in the warm-up only
    report = execute(plan, graph, system, kernels=runner, repeat=1, after_kernel=corrupt)
    assert report.check is None


def test_a_runner_that_cannot_rerun_is_refused_before_anything_runs():
    graph, system, plan = _plan()
    runner = Recording()
    with pytest.raises(UsageError, match="cannot run a kernel again"):
        execute(plan, graph, system, kernels=runner, repeat=1)
    assert runner.calls == []


def test_plans_without_reruns_report_no_rerun_time():
    from tests.executor.helpers import diamond, diamond_plan

    graph, system = diamond(), two_pools()
    report = execute(diamond_plan(graph, system), graph, system, kernels=ReplayKernels(),
                     repeat=1)
    assert report.reruns == () and not report.rerun_seconds.any()
    assert report.predicted_rerun_seconds.shape == (len(graph.kernels),)


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["static", "synchronous"])
def test_an_ilp_plan_that_recomputes_runs_and_matches(formulation):
    from autotm_core.memory import MemorySystem, Pool
    from autotm_core.planning import PlanSettings, load_problem, plan

    nbytes = 64 * 1024
    graph = recompute_step(nbytes=nbytes)
    system = MemorySystem(name="test-slow-second", flops_per_second=2e9, pools=(
        Pool("dram", None, 10e9, 10e9, numa_node=0), Pool("pmm", None, 1e9, 0.5e9, numa_node=0)))
    problem = load_problem(graph, system, limit=f"dram={5 * nbytes}")
    outcome = plan(problem, formulation, PlanSettings(mode="exact", recompute=True,
                                                     relative_gap=0))
    assert outcome.plan.reruns, "recomputing e is the best plan at this limit"
    assert outcome.plan.has_offsets
    report = execute(outcome.plan, graph, problem.limited_system, repeat=1)
    assert report.check is not None and report.check.matches, report.check
    assert len(report.reruns) == len(outcome.plan.reruns)
    assert report.predicted_step_seconds == pytest.approx(outcome.simulation.step_seconds)



@pytest.mark.parametrize("seed", range(6))
def test_random_plans_with_reruns_match_the_one_pool_replay(seed):
    """Chains of reruns, inputs copied in for a rerun, early restores, three pools: the
    random valid plans of the verifier's property tests, run."""
    from tests.plans.random_plans import three_pools, tiny_system
    from tests.plans.random_reruns import random_plan_with_reruns
    from tests.plans.test_verify_reruns_properties import chain

    graph = chain(3)
    system = three_pools() if seed % 2 else tiny_system(None)
    for pool in system.pools:  # unbounded: the executor lays every pool out itself
        system = system.with_capacity(pool.name, None)
    plan = random_plan_with_reruns(graph, system, seed)
    assert plan.reruns
    report = execute(plan, graph, system, repeat=1, fit_machine=True)
    assert report.check is not None and report.check.matches, report.check
    assert len(report.reruns) == len(plan.reruns)


def test_a_rerun_reading_a_recomputed_value_that_was_overwritten_fails_the_check():
    """The plan the verifier lets through (a finding, tests/plans/test_verify_reruns_properties):
    ``use`` reruns on ``t`` recomputed by ``make``, not ``t`` as ``scale_`` left it."""
    from tests.plans.test_verify_reruns_properties import overwritten_step

    graph, system, plan = overwritten_step()
    if verify_plan(plan, graph, system):
        return  # the verifier refuses it, as the rules do: nothing to run
    report = execute(plan, graph, system, repeat=1)
    assert not report.check.matches
    assert "reruns[1] (kernel 'use' again before 'end') read other bytes" in report.check.detail


def test_a_rerun_reads_an_input_landed_at_its_boundary_not_its_old_copy():
    """``x`` leaves dram after ``head`` (its clean copy in pmm) and comes back by a synchronous
    move before ``back``, where ``f1`` reruns on it; ``w`` lands in dram at that same boundary
    at the offset ``x``'s old copy had: the rerun must read the copy that just landed."""
    from autotm_core.plans import Move, Rerun, Residency, make_plan

    graph, system = recompute_step(), two_pools()
    k = graph.kernel_index
    unit = 256 * 1024
    plan = make_plan(graph, system, residencies=[
        Residency("x", "dram", 0, 3, 0), Residency("x", "pmm", 1, 4),
        Residency("x", "dram", 4, 4, unit),
        Residency("w", "pmm", 0, 5), Residency("w", "dram", 4, 4, 0),
        Residency("a", "dram", 0, 1, 2 * unit),
        Residency("e", "dram", 1, 2, 3 * unit), Residency("e", "dram", 4, 4, 3 * unit),
        Residency("c", "dram", 2, 3, 4 * unit), Residency("loss", "pmm", 3, 5),
        Residency("dc", "dram", 3, 4, 5 * unit), Residency("dw", "dram", 4, 5, 6 * unit),
    ], moves=[Move("x", "dram", "pmm", 1), Move("x", "pmm", "dram", 4),
              Move("w", "pmm", "dram", 4)],
        reruns=[Rerun(k["f1"], k["back"]), Rerun(k["f2"], k["back"])], planner="test/landed")
    assert verify_plan(plan, graph, system) == []
    report = execute(plan, graph, system, repeat=1)
    assert report.check is not None and report.check.matches, report.check


def test_a_rerun_reads_an_input_a_synchronous_move_copies_out_at_its_boundary():
    """``x`` is copied to pmm just before ``back``; ``f1`` reruns there on its dram copy, the
    move's source (``back`` itself reads the pmm copy)."""
    from autotm_core.plans import Move, Rerun, Residency, make_plan

    graph, system = recompute_step(), two_pools()
    k = graph.kernel_index
    back = k["back"]
    plan = make_plan(graph, system, residencies=[
        Residency("x", "dram", 0, back - 1), Residency("x", "pmm", back, back),
        Residency("w", "dram", 0, 5), Residency("a", "dram", 0, 1),
        Residency("e", "dram", 1, 2), Residency("e", "dram", back, back),
        Residency("c", "dram", 2, 3), Residency("loss", "pmm", 3, 5),
        Residency("dc", "dram", 3, back), Residency("dw", "dram", back, 5),
    ], moves=[Move("x", "dram", "pmm", back)],
        reruns=[Rerun(k["f1"], back), Rerun(k["f2"], back)], planner="test/copied-out")
    plan = assign_offsets(plan, graph, system).plan
    assert verify_plan(plan, graph, system) == []
    report = execute(plan, graph, system, repeat=1)
    assert report.check is not None and report.check.matches, report.check


def test_a_rerun_chains_values_share_scratch_once_freed():
    """The chain f1..f4 restoring c before back (tests/ilp/test_recompute.chain_step): a, b
    and e (8 MiB each) are dropped; a is freed once f2 has made b from it, so e takes a's
    bytes and the scratch holds 16 MiB, as the verifier counts it, not 24."""
    from tests.ilp.test_recompute import _solve, chain_step

    from autotm_core.executor.layout import plan_layout
    from autotm_core.ilp.options import Formulation

    graph = chain_step()
    system, _, _, _, plan = _solve(graph, Formulation.SYNCHRONOUS, 84 * 2**20)
    plan = assign_offsets(plan, graph, system).plan
    layout = plan_layout(plan, graph, system)
    places = {name: layout.rerun_places[j, name] for j, r in enumerate(plan.reruns)
              for name in graph.kernels[r.kernel].outputs}
    assert places["a"] == places["e"] != places["b"]
    assert any("up to 16.00 MiB at one boundary" in note for note in layout.notes), layout.notes
