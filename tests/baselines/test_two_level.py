"""The 2LM cache model: numba equals the reference; fits -> all-fast; streaming -> all-slow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core import Graph, GraphBuilder, MemorySystem, TensorKind
from autotm_core.baselines import cache_model, two_level_memory
from autotm_core.baselines.cache_kernels import new_state, reference_cache, run_cache
from autotm_core.capacity import fast_capacity
from autotm_core.costs import roofline_costs
from autotm_core.errors import CapacityError

MiB = 1 << 20


def _roofline_seconds(graph: Graph, system: MemorySystem, pool: int) -> float:
    """Step time with every tensor in pool ``pool``, by the roofline."""
    live = graph.liveness
    costs = roofline_costs(graph, system)
    return float(costs.seconds_all(np.full(len(live.kernel_tensors), pool, dtype=np.int64)).sum())


def _stream(n_layers: int, nbytes: int) -> Graph:
    """Each kernel reads the previous activation and writes a new one, no reuse."""
    b = GraphBuilder("stream")
    prev = b.tensor("x", nbytes=nbytes, kind=TensorKind.INPUT)
    for i in range(n_layers):
        out = b.tensor(f"a{i}", nbytes=nbytes,
                       kind=TensorKind.OUTPUT if i == n_layers - 1 else TensorKind.ACTIVATION)
        b.kernel(f"k{i}", op="copy", inputs=[prev], outputs=[out], flops=0)
        prev = out
    return b.build()


_ENTRIES = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6), st.booleans(), st.booleans()),
                    max_size=40)


@settings(max_examples=40, deadline=None)
@given(_ENTRIES, st.integers(1, 8), st.integers(1, 4), st.integers(1, 2))
def test_compiled_loop_equals_the_reference(entries, n_sets: int, ways: int, passes: int) -> None:
    first = np.array([e[0] for e in entries], dtype=np.int64)
    count = np.array([e[1] for e in entries], dtype=np.int64)
    reads = np.array([e[2] for e in entries], dtype=np.bool_)
    writes = np.array([e[3] or not e[2] for e in entries], dtype=np.bool_)
    tags, dirty, stamps = new_state(n_sets, ways)
    clock, sets = 0, None
    for _ in range(passes):
        *compiled, clock = run_cache(first, count, reads, writes, n_sets, ways, tags, dirty, stamps,
                                     clock)
        *expected, sets = reference_cache(first.tolist(), count.tolist(), reads.tolist(),
                                          writes.tolist(), n_sets, ways, sets)
        for got, want in zip(compiled, expected, strict=True):
            assert got.tolist() == want


def test_direct_mapped_conflicts_and_write_backs() -> None:
    # Lines 0 and 2 share set 0 of a 2-set direct-mapped cache: they evict each other.
    hits, rm, wm, wb, _ = reference_cache([0, 2, 0, 1], [1, 1, 1, 1], [False, True, True, True],
                                          [True, False, False, False], 2, 1)
    assert (hits, rm, wm, wb) == ([0, 0, 0, 0], [0, 1, 1, 1], [1, 0, 0, 0], [0, 1, 0, 0])


def test_a_working_set_that_fits_behaves_like_all_fast(mlp: Graph, optane: MemorySystem) -> None:
    result = cache_model(mlp, optane, cache_nbytes=None)
    assert result.hit_rate == 1.0
    assert result.writebacks == 0
    assert result.predicted_seconds == pytest.approx(_roofline_seconds(mlp, optane, 0), rel=1e-9)


def test_a_stream_much_larger_than_the_cache_approaches_all_slow(optane: MemorySystem) -> None:
    graph = _stream(40, 4 * MiB)
    result = cache_model(graph, optane, cache_nbytes=1 * MiB)
    slow, fast = _roofline_seconds(graph, optane, 1), _roofline_seconds(graph, optane, 0)
    assert result.hit_rate == 0.0
    assert fast < slow
    # Every read misses and every written line is written back: slow-pool traffic as all-slow,
    # plus the writes landing in the cache first (about 10% more on Optane's bandwidths).
    assert slow <= result.predicted_seconds <= 1.15 * slow


def test_cold_cache_pays_for_first_touches(mlp: Graph, optane: MemorySystem) -> None:
    cold = cache_model(mlp, optane, cache_nbytes=None, warm=False)
    warm = cache_model(mlp, optane, cache_nbytes=None)
    assert 0 < cold.hit_rate < 1
    assert cold.predicted_seconds > warm.predicted_seconds


@pytest.mark.parametrize(("line", "ways"), [(4096, 1), (1024, 2), (4096, 4)])
def test_plan_verifies_and_carries_the_prediction(
    cnn: Graph, optane: MemorySystem, verifies, line: int, ways: int
) -> None:
    capacity = fast_capacity(cnn, ratio="4:1")
    plan = two_level_memory(cnn, optane, fast_capacity_nbytes=capacity, line_nbytes=line, ways=ways)
    verifies(plan, cnn, optane, capacity)
    assert {r.pool for r in plan.residencies} == {"pmm"}
    reference = cache_model(cnn, optane.with_capacity("dram", capacity), cache_nbytes=capacity,
                            line_nbytes=line, ways=ways, reference=True)
    assert plan.attributes["predicted_seconds"] == pytest.approx(reference.predicted_seconds)
    assert plan.attributes["hit_rate"] == reference.hit_rate
    assert _roofline_seconds(cnn, optane, 0) <= plan.attributes["predicted_seconds"]


def test_a_cache_smaller_than_a_set_is_refused(mlp: Graph, optane: MemorySystem) -> None:
    with pytest.raises(CapacityError, match="holds no set"):
        cache_model(mlp, optane, cache_nbytes=4095)
