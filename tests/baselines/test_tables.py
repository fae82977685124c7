"""Partial cost tables: every baseline runs each kernel in a configuration its table allows,
or raises one error naming the kernel and what the table allows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.ir.graph_strategies import training_graphs

from autotm_core import Graph, GraphBuilder, MemorySystem, Pool, TensorKind
from autotm_core.baselines import BASELINES, all_fast, all_slow, first_touch, greedy, run_baseline
from autotm_core.baselines.tables import allowed_configs
from autotm_core.capacity import fast_capacity
from autotm_core.costs import (
    CostTable,
    KernelCosts,
    TableCosts,
    costs_to_document,
    load_costs,
    roofline_costs,
)
from autotm_core.errors import CapacityError, PlanError, UsageError
from autotm_core.plans import Plan
from autotm_core.simulation import simulate

from .conftest import assert_verifies

Keep = Callable[[str, dict[str, str]], bool]
"""Whether a kernel (by name) keeps a configuration (tensor -> pool) in the table."""


def _table(graph: Graph, system: MemorySystem, keep: Keep, path: Path) -> TableCosts:
    """The roofline written as a cost file without the configurations ``keep`` refuses."""
    document = costs_to_document(roofline_costs(graph, system), graph=graph, system=system)
    for kernel in document["kernels"]:
        kernel["configs"] = [c for c in kernel["configs"] if keep(kernel["name"], c["pools"])]
    path.write_text(json.dumps(document))
    return load_costs(path, graph=graph, system=system)


def _not_all(pool: str, kernels: set[str] | None = None) -> Keep:
    """Drop the configuration with every tensor in ``pool`` (of ``kernels``, or of all)."""
    return lambda name, pools: (kernels is not None and name not in kernels) or any(
        p != pool for p in pools.values())


def _priced(plan: Plan, graph: Graph, system: MemorySystem, costs: KernelCosts,
            capacity: int | None = None) -> None:
    """The plan verifies and the table prices every kernel of it."""
    assert_verifies(plan, graph, system, capacity)
    limited = system if capacity is None else system.with_capacity(system.fast.name, capacity)
    assert simulate(plan, graph, limited, costs).step_seconds > 0


def test_the_roofline_and_complete_tables_restrict_nothing(
    mlp: Graph, optane: MemorySystem, tmp_path: Path
) -> None:
    assert allowed_configs(mlp, optane, roofline_costs(mlp, optane)) is None
    full = _table(mlp, optane, lambda name, pools: True, tmp_path / "full.json")
    assert allowed_configs(mlp, optane, full) is None
    partial = _table(mlp, optane, _not_all("dram", {"relu0"}), tmp_path / "partial.json")
    allowed = allowed_configs(mlp, optane, partial)
    assert allowed is not None
    assert sorted(allowed.tables) == [1]
    assert not allowed.allows(1, [0, 0]) and allowed.allows(1, [0, 1])


def test_without_all_fast_configurations(mlp: Graph, optane: MemorySystem, tmp_path: Path) -> None:
    """No kernel may run with all its tensors in dram: all-fast does not exist, the rest plan."""
    costs = _table(mlp, optane, _not_all("dram"), tmp_path / "costs.json")
    with pytest.raises(PlanError) as caught:
        all_fast(mlp, optane, costs=costs)
    message = caught.value.message
    assert message.startswith("baseline/all-fast: kernel 'linear0' (#0) would run with "
                              "(x: dram, w0: dram, b0: dram, z0: dram); its cost table allows "
                              "only (x: dram, w0: dram, b0: dram, z0: pmm), ")
    assert message.endswith(" and 11 more")
    for capacity in (None, fast_capacity(mlp, ratio="1:1")):
        for planner in (all_slow, first_touch, greedy):
            plan = planner(mlp, optane, fast_capacity_nbytes=capacity, costs=costs)
            _priced(plan, mlp, optane, costs, capacity)
    plan = run_baseline("2lm", mlp, optane, costs=costs)
    _priced(plan, mlp, optane, costs)


def test_without_one_kernels_all_slow_configuration(
    mlp: Graph, optane: MemorySystem, tmp_path: Path
) -> None:
    costs = _table(mlp, optane, _not_all("pmm", {"relu0"}), tmp_path / "costs.json")
    for name in ("all-slow", "2lm"):
        with pytest.raises(PlanError, match=r"kernel 'relu0' \(#1\) would run with "
                           r"\(z0: pmm, a0: pmm\); its cost table allows only \(z0: dram, a0: "
                           "dram\\), \\(z0: dram, a0: pmm\\), \\(z0: pmm, a0: dram\\)$"):
            run_baseline(name, mlp, optane, costs=costs)
    capacity = fast_capacity(mlp, ratio="8:1")
    for planner in (first_touch, greedy):
        plan = planner(mlp, optane, fast_capacity_nbytes=capacity, costs=costs)
        _priced(plan, mlp, optane, costs, capacity)
        assert plan.configs[1] != ("pmm", "pmm")


def _pinned() -> Graph:
    """``w`` may live only in dram."""
    b = GraphBuilder("pinned")
    b.tensor("x", nbytes=64, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=64, kind=TensorKind.PARAMETER, pools=("dram",))
    b.tensor("y", nbytes=64, kind=TensorKind.OUTPUT)
    b.kernel("k", op="mul", inputs=["x", "w"], outputs=["y"])
    return b.build()


def test_a_table_no_placement_can_meet(optane: MemorySystem, tmp_path: Path) -> None:
    """The only configurations put ``w`` in pmm, where it may not live: one error each."""
    graph = _pinned()
    costs = _table(graph, optane, lambda name, pools: pools["w"] == "pmm", tmp_path / "c.json")
    for name in sorted(BASELINES):
        with pytest.raises(PlanError) as caught:
            run_baseline(name, graph, optane, costs=costs)
        message = caught.value.message
        assert f"baseline/{name}: kernel 'k' (#0)" in message, message
        assert message.endswith("its cost table allows only (x: dram, w: pmm, y: dram), "
                                "(x: dram, w: pmm, y: pmm), (x: pmm, w: pmm, y: dram), "
                                "(x: pmm, w: pmm, y: pmm)")


def test_greedy_runs_the_cheapest_allowed_configuration(
    optane: MemorySystem, tmp_path: Path
) -> None:
    """With every configuration but all-in-pmm's too slow to matter, greedy keeps to pmm."""
    graph = _pinned()
    system = MemorySystem("free", pools=(Pool("dram", None, 1e11, 1e11),
                                         Pool("pmm", None, 1e10, 1e10)))
    costs = _table(graph, system, lambda name, pools: pools["w"] == "dram", tmp_path / "c.json")
    slow = costs.seconds(0, [1, 0, 1])
    tables = (CostTable(configs=costs.table(0).configs,
                        seconds=np.where((costs.table(0).configs[:, [0, 2]] == 1).all(axis=1),
                                         slow, 10.0)),)
    costs = TableCosts(n_pools=2, kernel_ptr=costs.kernel_ptr, tables=tables)
    plan = greedy(graph, system, costs=costs)
    assert plan.configs == (("pmm", "dram", "pmm"),)
    _priced(plan, graph, system, costs)


@st.composite
def partial_tables(draw: st.DrawFn) -> tuple[Graph, MemorySystem, TableCosts, int | None]:
    """A random graph, its roofline table with random configurations left out, and a limit."""
    system = MemorySystem("two", pools=(Pool("dram", None, 1e11, 1e11, 1e-7),
                                        Pool("pmm", None, 3e10, 1e10, 3e-7)))
    graph = draw(training_graphs(max_layers=2))
    graph = Graph(graph.name, [attrs.evolve(t, pools=tuple(p for p in t.pools or ()
                                                           if p in ("dram", "pmm")) or None)
                               for t in graph.tensors], graph.kernels)
    roofline = roofline_costs(graph, system)
    tables = []
    for k in range(len(graph.kernels)):
        full = roofline.table(k)
        keep = np.array(draw(st.lists(st.booleans(), min_size=len(full.configs),
                                      max_size=len(full.configs))), dtype=np.bool_)
        keep[draw(st.integers(0, len(full.configs) - 1))] = True
        tables.append(CostTable(configs=full.configs[keep], seconds=full.seconds[keep]))
    costs = TableCosts(n_pools=2, kernel_ptr=graph.liveness.kernel_ptr, tables=tuple(tables))
    peak = graph.liveness.peak_nbytes
    ratio = draw(st.sampled_from([None, 0, 1, 4]))
    limit = None if ratio is None else max(peak // (ratio + 1),
                                           int(graph.liveness.workspace_nbytes.max(initial=0)))
    return graph, system, costs, limit


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partial_tables())
def test_plans_run_only_allowed_configurations(
    point: tuple[Graph, MemorySystem, TableCosts, int | None],
) -> None:
    graph, system, costs, limit = point
    for name in sorted(BASELINES):
        try:
            plan = run_baseline(name, graph, system, fast_capacity_nbytes=limit, costs=costs)
        except (CapacityError, PlanError) as exc:
            assert any(word in exc.message for word in ("kernel", "tensor", "pool"))
            continue
        _priced(plan, graph, system, costs, limit)


def test_costs_of_another_graph_or_system_are_refused(
    mlp: Graph, cnn: Graph, optane: MemorySystem, tmp_path: Path
) -> None:
    costs = _table(mlp, optane, _not_all("dram"), tmp_path / "costs.json")
    with pytest.raises(UsageError, match="the costs do not fit graph 'cnn'"):
        greedy(cnn, optane, costs=costs)
    three = MemorySystem("three", pools=(*optane.pools, Pool("ssd", None, 1e9, 1e9)))
    with pytest.raises(UsageError, match="the costs are for 2 pools"):
        first_touch(mlp, three, costs=costs)
