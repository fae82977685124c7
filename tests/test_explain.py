"""explain: a tensor's life and what its absences made room for; a kernel against its best."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autotm_core import Graph, MemorySystem
from autotm_core.baselines import all_fast, greedy
from autotm_core.capacity import fast_capacity
from autotm_core.costs import resolve_costs
from autotm_core.errors import UsageError
from autotm_core.explain import explain_kernel, explain_tensor
from autotm_core.plans import save_plan


def _greedy(cnn: Graph, optane: MemorySystem):
    return greedy(cnn, optane, fast_capacity_nbytes=fast_capacity(cnn, ratio="4:1"))


def test_evicted_tensor_made_room_for_the_tensors_entering_fast(cnn, optane) -> None:
    plan = _greedy(cnn, optane)
    fast = optane.fast.name
    evicted = next(m for m in plan.moves if m.source == fast)
    e = explain_tensor(plan, cnn, optane, tensor=evicted.tensor)
    assert any(m.move == evicted for m in e.moves)
    assert e.residencies == tuple(sorted((r for r in plan.residencies
                                          if r.tensor == evicted.tensor),
                                         key=lambda r: (r.first, r.pool)))
    # the eviction opens an absence from the fast pool starting at the move's kernel
    absence = next(a for a in e.absences if a.first == evicted.kernel)
    assert fast not in absence.pools
    for r in plan.residencies:
        if r.pool == fast and r.tensor != evicted.tensor and \
                absence.first <= r.first <= absence.last:
            assert r.tensor in {n for n, _ in absence.room_for} or len(absence.room_for) == 10
    sizes = [b for _, b in absence.room_for]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) <= absence.room_for_nbytes
    # no absence covers a kernel where the tensor is in the fast pool
    for a in e.absences:
        for r in e.residencies:
            if r.pool == fast:
                assert r.last < a.first or r.first > a.last


def test_all_fast_plan_has_no_absence_and_best_kernels(cnn, optane) -> None:
    plan = all_fast(cnn, optane)
    costs = resolve_costs(cnn, optane)
    tensor = cnn.tensors[0].name
    e = explain_tensor(plan, cnn, optane, tensor=tensor)
    assert e.absences == () and e.moves == ()
    k = explain_kernel(plan, cnn, optane, costs, kernel=cnn.kernels[3].name)
    assert k.seconds == pytest.approx(k.best_seconds)
    assert k.slowdown == pytest.approx(1.0)
    assert set(k.best_pools) == {optane.fast.name}


def test_kernel_in_slow_memory_is_slower_than_its_best(cnn, optane) -> None:
    plan = _greedy(cnn, optane)
    costs = resolve_costs(cnn, optane)
    slow = optane.slow.name
    k = next(i for i, config in enumerate(plan.configs) if slow in config)
    e = explain_kernel(plan, cnn, optane, costs, kernel=cnn.kernels[k].name)
    assert e.seconds == pytest.approx(costs.seconds(k, [optane.pool_index(p)
                                                         for p in plan.configs[k]]))
    assert e.best_seconds <= e.seconds
    assert [p for _, _, p in e.tensors] == list(plan.configs[k])
    assert e.sync_move_seconds == pytest.approx(
        sum(m.seconds for m in e.moves if m.move.kind.value == "sync"))


def test_unknown_names_are_usage_errors(cnn, optane) -> None:
    plan = all_fast(cnn, optane)
    with pytest.raises(UsageError, match="no tensor called 'nope'"):
        explain_tensor(plan, cnn, optane, tensor="nope")
    with pytest.raises(UsageError, match="no kernel called 'nope'"):
        explain_kernel(plan, cnn, optane, resolve_costs(cnn, optane), kernel="nope")


@pytest.mark.slow
def test_explain_command(tmp_path, cnn, optane) -> None:
    plan = _greedy(cnn, optane)
    save_plan(plan, tmp_path / "plan.json")
    moved = next(m for m in plan.moves if m.source == optane.fast.name)
    common = [sys.executable, "-m", "autotm_core", "explain", str(tmp_path / "plan.json"),
              "--graph", "example:cnn", "--system", "optane-2019"]
    out = subprocess.run([*common, "--tensor", moved.tensor, "--json"], capture_output=True,
                         text=True, check=True).stdout
    facts = json.loads(out)
    assert facts["tensor"] == moved.tensor and facts["absences"]
    out = subprocess.run([*common, "--kernel", cnn.kernels[moved.kernel].name],
                         capture_output=True, text=True, check=True,
                         env={"COLUMNS": "120", "NO_COLOR": "1", "PATH": ""}).stdout
    assert "best placement" in out and moved.tensor in out
    bad = subprocess.run([*common, "--tensor", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "no tensor called 'nope'" in bad.stderr


def test_a_spanning_copy_is_told_with_its_flight() -> None:
    import io

    from rich.console import Console

    from autotm_core.report.explain_report import render_kernel, render_tensor
    from plans.random_plans import tiny_graph, tiny_system
    from simulation.test_simulate import per_entry_costs
    from simulation.test_spanning_copies import evict_a_over_k1_k2

    plan, graph, system = evict_a_over_k1_k2(fetch_w_async=False), tiny_graph(), tiny_system()
    console = Console(width=100, color_system=None, file=io.StringIO())
    names = tuple(k.name for k in graph.kernels)
    console.print(render_tensor(explain_tensor(plan, graph, system, tensor="a"), names))
    console.print(render_kernel(explain_kernel(plan, graph, system, per_entry_costs(1e-9, 1e-8),
                                               kernel="k1")))
    page = " ".join(console.file.getvalue().split())  # type: ignore[attr-defined]
    assert "from #1 k1, done before #3 k3" in page, page
    assert "in flight until kernel #3" in page, page
