"""Liveness against a brute-force recomputation on random valid training graphs."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from autotm_core.ir import Graph, Severity, TensorKind, verify_graph

from .graph_strategies import brute_liveness, training_graphs


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs())
def test_liveness_matches_brute_force(graph: Graph) -> None:
    # the generator must produce what it promises: valid graphs of every usual kind
    assert [p for p in verify_graph(graph) if p.severity is Severity.ERROR] == []
    assert {t.kind for t in graph.tensors} >= {
        TensorKind.INPUT, TensorKind.PARAMETER, TensorKind.ACTIVATION,
        TensorKind.GRADIENT, TensorKind.OUTPUT,
    }
    live = graph.liveness
    brute = brute_liveness(graph)
    n_tensors = len(graph.tensors)
    assert live.n_kernels == len(graph.kernels)
    assert live.producer.tolist() == brute.producer
    assert [live.users(t).tolist() for t in range(n_tensors)] == brute.users
    assert [live.last_use(t) for t in range(n_tensors)] == [u[-1] if u else -1 for u in brute.users]
    # first/last only matter where the tensor lives at all
    for t in range(n_tensors):
        if brute.last[t] >= 0:
            got = (live.first[t], live.last[t])
            assert got == (brute.first[t], brute.last[t]), graph.tensors[t]
        else:
            assert live.last[t] < live.first[t]
    for k in range(len(graph.kernels)):
        assert live.live_at(k).tolist() == brute.live[k]
        assert all(live.is_live(t, k) == (t in brute.live[k]) for t in range(n_tensors))
    assert live.live_nbytes.tolist() == brute.live_nbytes
    assert live.peak_nbytes == max(brute.live_nbytes)
    assert live.peak_kernel == brute.live_nbytes.index(max(brute.live_nbytes))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs())
def test_kernel_tensor_table_lists_inputs_first_each_once(graph: Graph) -> None:
    live = graph.liveness
    for k, kernel in enumerate(graph.kernels):
        entries = live.kernel_tensor_slice(k)
        names = [graph.tensors[t].name for t in live.kernel_tensors[entries]]
        assert names == list(dict.fromkeys(kernel.inputs + kernel.outputs))
        assert live.kernel_reads[entries].tolist() == [n in kernel.inputs for n in names]
        assert live.kernel_writes[entries].tolist() == [n in kernel.outputs for n in names]
    assert np.array_equal(live.workspace_nbytes, [k.workspace_nbytes for k in graph.kernels])
    assert np.array_equal(live.nbytes, [t.nbytes for t in graph.tensors])
