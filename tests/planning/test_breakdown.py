"""The breakdown of a plan by tensor kind: bytes per pool, moves, in-place use, added time."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from autotm_core.ir import TensorKind
from autotm_core.planning import load_problem, plan
from autotm_core.planning.breakdown import MoveDirection, outcome_breakdown, plan_breakdown
from autotm_core.report.kinds_report import render_kinds


@pytest.fixture(scope="module")
def problem():  # type: ignore[no-untyped-def]
    return load_problem("example:mlp", "optane-2019", limit="4:1")


@pytest.mark.parametrize("planner", ["greedy", "first-touch", "all-slow"])
def test_the_kinds_share_out_the_time_over_all_fast(problem, planner: str) -> None:  # type: ignore[no-untyped-def]
    outcome = plan(problem, planner)
    b = outcome_breakdown(outcome)
    assert b.added_seconds == pytest.approx(outcome.step_seconds - problem.all_fast_seconds)
    charged = sum(u.added_seconds or 0.0 for u in b.uses)
    assert charged + (b.unattributed_seconds or 0.0) == pytest.approx(b.added_seconds)
    assert all((u.added_seconds or 0.0) >= 0 for u in b.uses)
    assert sum(b.share(u) or 0.0 for u in b.uses) == pytest.approx(1.0, abs=1e-6)
    graph = problem.graph
    for u in b.uses:  # every kind the graph has, its tensors counted once
        tensors = [t for t in graph.tensors if t.kind is u.kind]
        assert u.tensors == len(tensors) and u.nbytes == sum(t.nbytes for t in tensors)
        assert all(kept <= u.nbytes for kept in u.kept_nbytes)
    sim = outcome.simulation
    assert sum(u.moved_nbytes[MoveDirection.TO_FASTER] for u in b.uses) == sum(
        int(sim.pair_nbytes[s, t].sum()) for s in range(2) for t in range(2) if t < s)
    assert sum(u.moved_nbytes[MoveDirection.TO_SLOWER] for u in b.uses) == sum(
        int(sim.pair_nbytes[s, t].sum()) for s in range(2) for t in range(2) if t > s)


def test_all_fast_adds_nothing_and_all_slow_is_all_in_place(problem) -> None:  # type: ignore[no-untyped-def]
    fast = outcome_breakdown(plan(problem.with_limit(None), "all-fast"))
    assert fast.added_seconds == pytest.approx(0.0, abs=1e-12)
    for u in fast.uses:
        assert u.kept_nbytes == (u.nbytes, 0) and u.in_place_nbytes == 0
        assert set(u.moved_nbytes.values()) == {0}
    slow = outcome_breakdown(plan(problem, "all-slow"))
    live = problem.graph.liveness
    used = np.bincount(live.kernel_tensors, minlength=len(problem.graph.tensors))
    for u in slow.uses:
        assert u.kept_nbytes == (0, u.nbytes)
        expected = sum(int(used[i]) * t.nbytes for i, t in enumerate(problem.graph.tensors)
                       if t.kind is u.kind)
        assert u.in_place_nbytes == expected  # counted once per kernel that uses it
    optimizer = next(u for u in slow.uses if u.kind is TensorKind.OPTIMIZER_STATE)
    assert (slow.share(optimizer) or 0) > 0.1


def test_no_time_is_attributed_when_the_step_is_not_the_simulators(problem) -> None:  # type: ignore[no-untyped-def]
    outcome = plan(problem, "2lm")
    b = outcome_breakdown(outcome)
    assert b.added_seconds is None and all(u.added_seconds is None for u in b.uses)
    assert b.to_json()["kinds"][0]["added_share"] is None
    same = plan_breakdown(problem, outcome.plan, step_seconds=outcome.step_seconds)
    assert same.added_seconds is None


def test_the_kinds_table_fits_80_columns(problem) -> None:  # type: ignore[no-untyped-def]
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(render_kinds(outcome_breakdown(plan(problem, "greedy")), width=80))
    page = console.file.getvalue()  # type: ignore[attr-defined]
    assert max(len(line.rstrip()) for line in page.splitlines()) <= 80, page
    assert "…" not in page
    for word in ("optimizer", "state", "parameter", "dram", "pmm", "added"):
        assert word in page.split(), (word, page)


class _CountingTables:
    """Profiled (table) costs that count every lookup of each kernel."""

    def __init__(self, tables) -> None:  # type: ignore[no-untyped-def]
        self.tables = tables
        self.lookups = np.zeros(len(tables.tables), dtype=np.int64)

    @property
    def n_pools(self) -> int:
        return int(self.tables.n_pools)

    def seconds(self, kernel, pools):  # type: ignore[no-untyped-def]
        self.lookups[kernel] += 1
        return self.tables.seconds(kernel, pools)

    def seconds_all(self, entry_pools):  # type: ignore[no-untyped-def]
        ptr = self.tables.kernel_ptr
        return np.array([self.seconds(k, entry_pools[ptr[k]:ptr[k + 1]])
                         for k in range(len(self.lookups))])

    def table(self, kernel):  # type: ignore[no-untyped-def]
        self.lookups[kernel] += 1
        return self.tables.table(kernel)

    def separable(self) -> None:
        return None


@pytest.mark.parametrize("planner", ["greedy", "all-slow"])
def test_profiled_costs_are_looked_up_once_per_kernel_and_agree(problem, planner: str) -> None:  # type: ignore[no-untyped-def]
    from autotm_core.costs.model import TableCosts
    from autotm_core.planning.breakdown import kind_breakdown

    roofline = problem.costs.separable()
    tables = _CountingTables(TableCosts(
        n_pools=roofline.n_pools, kernel_ptr=roofline.kernel_ptr,
        tables=tuple(roofline.table(k) for k in range(roofline.n_kernels))))
    outcome = plan(problem, planner)
    by_table = kind_breakdown(outcome.plan, problem.graph, problem.limited_system, tables,
                              outcome.simulation)
    # the all-fast time, then the table of each kernel with a tensor outside the fastest pool
    assert tables.lookups.max() <= 2, tables.lookups
    by_roofline = outcome_breakdown(outcome)
    for mine, theirs in zip(by_table.uses, by_roofline.uses, strict=True):
        assert mine.added_seconds == pytest.approx(theirs.added_seconds, rel=1e-9, abs=1e-15)
    assert by_table.unattributed_seconds == pytest.approx(by_roofline.unattributed_seconds,
                                                          abs=1e-12)


def test_the_saving_of_each_tensor_is_its_kernels_time_with_it_in_the_fastest_pool(problem) -> None:  # type: ignore[no-untyped-def]
    from autotm_core.planning.breakdown import _saving_weights
    from autotm_core.plans.arrays import encode_plan

    outcome = plan(problem, "all-slow")
    live = problem.graph.liveness
    arrays, _ = encode_plan(outcome.plan, problem.graph, problem.limited_system)
    pools = np.asarray(arrays.entry_pools, dtype=np.int64)
    owner = live.entry_kernels()
    seconds = outcome.simulation.kernel_seconds
    weights = _saving_weights(pools, owner, live.kernel_ptr, problem.costs, seconds)
    for e in range(len(pools)):  # the plain reference: one kernel's time per tensor flipped
        k = owner[e]
        flipped = pools[live.kernel_ptr[k]:live.kernel_ptr[k + 1]].copy()
        flipped[e - live.kernel_ptr[k]] = 0
        expected = max(0.0, seconds[k] - problem.costs.seconds(k, flipped)) if pools[e] else 0.0
        assert weights[e] == pytest.approx(expected, rel=1e-9, abs=1e-15), e


def test_a_reruns_time_goes_to_what_it_writes_again() -> None:
    """recompute-only at example:cnn keeps every tensor in HBM and reruns kernels: all its
    time over all-fast is the reruns', charged to the activations they restore."""
    problem = load_problem("example:cnn", "gpu-h200", limit="1:2")
    outcome = plan(problem, "recompute-only")
    assert outcome.n_reruns > 0 and outcome.moved_nbytes == 0
    b = outcome_breakdown(outcome)
    assert b.added_seconds == pytest.approx(outcome.rerun_seconds)
    shares = {u.kind: b.share(u) or 0.0 for u in b.uses}
    assert shares[TensorKind.ACTIVATION] == pytest.approx(1.0)
    assert (b.unattributed_seconds or 0.0) == pytest.approx(0.0, abs=1e-12)


def test_a_spanning_copys_wait_goes_to_its_tensor() -> None:
    """``a`` is evicted from k1 until k3: k2's wait for it is charged to activations, and
    every second over all-fast to some kind."""
    from autotm_core.planning.breakdown import kind_breakdown
    from autotm_core.simulation import simulate
    from plans.random_plans import tiny_graph, tiny_system
    from simulation.test_simulate import per_entry_costs
    from simulation.test_spanning_copies import evict_a_over_k1_k2

    plan, graph, system = evict_a_over_k1_k2(fetch_w_async=False), tiny_graph(), tiny_system()
    costs = per_entry_costs(1e-9, 1e-8)
    b = kind_breakdown(plan, graph, system, costs, simulate(plan, graph, system, costs))
    assert (b.unattributed_seconds or 0.0) == pytest.approx(0.0, abs=1e-15)
    moved = {u.kind: u.added_seconds or 0.0 for u in b.uses}
    assert moved[TensorKind.ACTIVATION] >= 200 / 3e9 - 3e-9  # the wait before k3
