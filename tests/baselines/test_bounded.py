"""Every bounded pool, not only the fast one: random graphs on tight two- and three-pool systems.

Each baseline's plan verifies (capacities at every kernel and boundary, and the
value rules of a training step), or it raises one :class:`CapacityError`; greedy
plans wherever first-touch or all-slow does (its homes fall back to their
placements). All-slow and 2LM name the pool, the kernel and the shortfall.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.ir.graph_strategies import training_graphs

from autotm_core import Graph, GraphBuilder, MemorySystem, Pool, TensorKind
from autotm_core.baselines import BASELINES, all_slow, run_baseline, two_level_memory
from autotm_core.errors import CapacityError
from autotm_core.plans import Plan

from .conftest import assert_verifies

PAGE = 4096


def _fitted(graph: Graph, system: MemorySystem) -> Graph:
    """``graph`` with each tensor's pools cut to the system's (no restriction when none left)."""
    names = {pool.name for pool in system.pools}
    tensors = [attrs.evolve(t, pools=tuple(p for p in t.pools or () if p in names) or None)
               for t in graph.tensors]
    return Graph(graph.name, tensors, graph.kernels)


@st.composite
def tight_points(draw: st.DrawFn) -> tuple[Graph, MemorySystem]:
    """A random training graph on a system whose slow pool (and middle pool) is bounded."""
    three = draw(st.booleans())
    pools = [Pool("hbm", None, 1e12, 1e12, 1e-7)] if three else []
    pools += [Pool("dram", None, 1e11, 1e11, 1e-7), Pool("pmm", None, 3e10, 1e10, 3e-7)]
    system = MemorySystem("tight", pools=tuple(pools))
    graph = _fitted(draw(training_graphs(max_layers=3)), system)
    peak = max(1, graph.liveness.peak_nbytes)
    fractions = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])
    for pool in system.pools[1:]:
        system = system.with_capacity(pool.name, int(draw(fractions) * peak))
    fast = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, None]))
    capacity = None if fast is None else max(int(fast * peak),
                                             int(graph.liveness.workspace_nbytes.max(initial=0)))
    return graph, system.with_capacity(system.fast.name, capacity)


def _plan(name: str, graph: Graph, system: MemorySystem) -> Plan | None:
    try:
        return run_baseline(name, graph, system)
    except CapacityError:
        return None


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tight_points())
def test_every_plan_verifies_and_greedy_plans_where_a_static_plan_does(
    point: tuple[Graph, MemorySystem],
) -> None:
    graph, system = point
    plans = {name: _plan(name, graph, system) for name in sorted(BASELINES)}
    for plan in plans.values():
        if plan is not None:
            assert_verifies(plan, graph, system, None)
    if plans["first-touch"] is not None or plans["all-slow"] is not None:
        assert plans["greedy"] is not None


def _wide(nbytes: int = 2 * PAGE) -> Graph:
    """Three tensors of ``nbytes`` live together at kernel 'make'."""
    b = GraphBuilder("wide")
    b.tensor("x", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("a", nbytes=nbytes)
    b.tensor("b", nbytes=nbytes)
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("make", op="copy", inputs=["x"], outputs=["a", "b"])
    b.kernel("use", op="add", inputs=["a", "b"], outputs=["y"])
    return b.build()


def _two(slow_nbytes: int) -> MemorySystem:
    return MemorySystem("two", pools=(Pool("dram", None, 1e11, 1e11),
                                      Pool("pmm", slow_nbytes, 1e10, 1e10)))


@pytest.mark.parametrize("baseline", [all_slow, two_level_memory])
def test_all_slow_and_2lm_name_the_pool_the_kernel_and_the_shortfall(baseline) -> None:
    with pytest.raises(CapacityError) as caught:
        baseline(_wide(), _two(5 * PAGE))
    message = caught.value.message
    assert "pool 'pmm' needs 24.00 KiB at kernel 'make' (#0) but holds 20.00 KiB" in message
    assert "(4096 bytes) too much" in message
    assert "at least 24576 bytes" in caught.value.hint


def test_2lm_keeps_no_addresses_that_would_lie_outside_a_bounded_slow_pool(verifies) -> None:
    """The layout rounds sizes up to pages: 3 tensors of a page and a byte take 6 pages."""
    graph = _wide(PAGE + 1)
    plan = two_level_memory(graph, _two(4 * PAGE))
    verifies(plan, graph, _two(4 * PAGE), None)
    assert all(r.offset is None for r in plan.residencies)
    roomy = two_level_memory(graph, _two(6 * PAGE))
    verifies(roomy, graph, _two(6 * PAGE), None)
    assert all(r.offset is not None for r in roomy.residencies)


def test_greedy_needs_a_home_for_every_tensor() -> None:
    """A plan exists only by moving ``a`` from dram to pmm; greedy does not find it.

    ``b`` may live only in pmm and ``d`` only in dram, one page each, pools of one
    page: ``a`` must be in dram beside ``b`` at kernel 0 and in pmm beside ``d`` at
    kernel 2. Greedy keeps a pool reserved for each tensor for its whole life (its
    home), so it raises, as first-touch does: homed slow first, ``a`` leaves ``b``
    no room; placed first-touch, ``a`` leaves ``d`` none.
    """
    b = GraphBuilder("swap")
    b.tensor("a", nbytes=PAGE, kind=TensorKind.INPUT)
    b.tensor("b", nbytes=PAGE, kind=TensorKind.INPUT, pools=("pmm",))
    b.tensor("d", nbytes=PAGE, pools=("dram",))
    b.tensor("y", nbytes=0, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="add", inputs=["a", "b"], outputs=[])
    b.kernel("k1", op="copy", inputs=["a"], outputs=[])
    b.kernel("k2", op="add", inputs=["a"], outputs=["d", "y"])
    graph = b.build()
    system = MemorySystem("one-page", pools=(Pool("dram", PAGE, 1e11, 1e11),
                                             Pool("pmm", PAGE, 1e10, 1e10)))
    with pytest.raises(CapacityError, match=r"tensor 'b'.* pool 'pmm' lacks 4\.00 KiB"):
        run_baseline("greedy", graph, system)
    with pytest.raises(CapacityError, match=r"tensor 'd'.* pool 'dram' has 0 B free"):
        run_baseline("first-touch", graph, system)
