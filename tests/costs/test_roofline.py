"""The roofline against times computed by hand, and the separable form's three queries agreeing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core import Graph, Kernel, MemorySystem, Pool, Tensor, TensorKind
from autotm_core.costs import (
    SeparableCosts,
    TableCosts,
    estimate_flops,
    resolve_costs,
    roofline_costs,
)
from autotm_core.errors import PlanError, UsageError
from autotm_core.examples import build_example


@pytest.fixture
def three_pools() -> MemorySystem:
    """Round numbers: bandwidths in bytes/s, latencies in s, 1000 flop/s."""
    return MemorySystem(
        name="tiny",
        flops_per_second=1000.0,
        pools=(
            Pool("hbm", None, 100.0, 50.0, 1.0),
            Pool("dram", None, 10.0, 5.0, 2.0),
            Pool("cxl", None, 2.0, 1.0, 4.0),
        ),
    )


@pytest.fixture
def tiny() -> Graph:
    tensors = [
        Tensor("a", 100, TensorKind.INPUT),
        Tensor("w", 50, TensorKind.PARAMETER),
        Tensor("b", 200, TensorKind.OUTPUT),
        Tensor("c", 200, TensorKind.OUTPUT),
        Tensor("d", 200, TensorKind.OUTPUT),
    ]
    kernels = [
        Kernel("memory_bound", "matmul", ["a", "w"], ["b"], flops=1000),
        Kernel("compute_bound", "matmul", ["a", "w"], ["c"], flops=1e6),
        Kernel("in_place", "relu_", ["b"], ["b"], flops=0),
        Kernel("scratch", "copy", ["a"], ["d"], flops=0, workspace_nbytes=100),
    ]
    return Graph("tiny", tensors, kernels)


HBM, DRAM, CXL = 0, 1, 2


def test_memory_bound_kernel(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    # compute 1000/1000 = 1 s; memory a 100/10 + w 50/100 + b written 200/1 = 210.5 s;
    # latency 2 + 1 + 4 = 7 s.
    assert costs.seconds(0, [DRAM, HBM, CXL]) == pytest.approx(210.5 + 7)


def test_compute_bound_kernel(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    # compute 1e6/1000 = 1000 s; memory 100/100 + 50/100 + 200/50 = 5.5 s; latency 3 x 1 s.
    assert costs.seconds(1, [HBM, HBM, HBM]) == pytest.approx(1000 + 3)
    # All in cxl: memory 50 + 25 + 200 = 275 s, still under compute; latency 3 x 4 s.
    assert costs.seconds(1, [CXL, CXL, CXL]) == pytest.approx(1000 + 12)


def test_in_place_tensor_is_read_and_written(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    # b in dram: read 200/10 + write 200/5 = 60 s, latency 2 s.
    assert costs.seconds(2, [DRAM]) == pytest.approx(62)
    assert costs.seconds(2, [CXL]) == pytest.approx(200 / 2 + 200 / 1 + 4)


def test_workspace_in_fastest_pool(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    # a read from dram 10 s, b written to dram 40 s, workspace 100/100 + 100/50 = 3 s, latency 4 s.
    assert costs.seconds(3, [DRAM, DRAM]) == pytest.approx(10 + 40 + 3 + 4)


def test_terms_are_compute_and_memory(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    assert costs.constants.shape == (4, 2)
    assert costs.coefficients.shape == (len(tiny.liveness.kernel_tensors), 2, 3)
    assert costs.constants[:, 0].tolist() == [1.0, 1000.0, 0.0, 0.0]
    np.testing.assert_allclose(costs.coefficients[0, 0], [1.0, 2.0, 4.0])  # latency only
    np.testing.assert_allclose(costs.coefficients[0, 1], [1 + 1, 10 + 2, 50 + 4])  # a read


def test_resolve_without_file_is_the_roofline(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = resolve_costs(tiny, three_pools)
    assert isinstance(costs, SeparableCosts)
    assert costs.separable() is costs


def test_estimate_of_another_graph_is_refused(tiny: Graph, three_pools: MemorySystem) -> None:
    with pytest.raises(UsageError, match="4"):
        roofline_costs(tiny, three_pools, flops=estimate_flops(build_example("mlp")))


def test_bad_placements_are_plan_errors(tiny: Graph, three_pools: MemorySystem) -> None:
    costs = roofline_costs(tiny, three_pools)
    with pytest.raises(PlanError, match="kernel #0"):
        costs.seconds(0, [0, 3, 0])
    with pytest.raises(PlanError, match="touches 3 tensors"):
        costs.seconds(0, [0, 0])
    with pytest.raises(PlanError, match="placement"):
        costs.seconds_all(np.full(len(tiny.liveness.kernel_tensors), -1))


def _three_ways_agree(costs: SeparableCosts, entry_pools: np.ndarray) -> None:
    ptr = costs.kernel_ptr
    all_seconds = costs.seconds_all(entry_pools)
    tables = TableCosts(n_pools=costs.n_pools, kernel_ptr=ptr,
                        tables=tuple(costs.table(k) for k in range(costs.n_kernels)))
    for k in range(costs.n_kernels):
        pools = entry_pools[ptr[k] : ptr[k + 1]]
        one = costs.seconds(k, pools)
        table = costs.table(k)
        row = np.flatnonzero((table.configs == pools).all(axis=1))
        assert len(row) == 1
        assert one == pytest.approx(all_seconds[k], rel=1e-12)
        assert table.seconds[row[0]] == pytest.approx(one, rel=1e-12)
        assert tables.seconds(k, pools) == table.seconds[row[0]]
    np.testing.assert_allclose(tables.seconds_all(entry_pools), all_seconds, rtol=1e-12)


@pytest.mark.parametrize("example", ["mlp", "cnn"])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_seconds_equal_seconds_all_equal_table(example: str, data: st.DataObject) -> None:
    graph = build_example(example)
    system = MemorySystem(
        name="three", flops_per_second=data.draw(st.floats(1e9, 1e14)),
        pools=tuple(
            Pool(f"p{i}", None, data.draw(st.floats(1e9, 1e12)), data.draw(st.floats(1e9, 1e12)),
                 data.draw(st.floats(0, 1e-6)))
            for i in range(3)
        ),
    )
    costs = roofline_costs(graph, system)
    n_entries = len(graph.liveness.kernel_tensors)
    pools = data.draw(st.lists(st.integers(0, 2), min_size=n_entries, max_size=n_entries))
    _three_ways_agree(costs, np.asarray(pools, dtype=np.int64))
