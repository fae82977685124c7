"""Verification catches every kind of defect injected into a valid graph, and says where."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core.errors import GraphError
from autotm_core.ir import Graph, Kernel, Severity, Tensor, TensorKind, check_graph, verify_graph

from .graph_strategies import training_graphs

Defect = Callable[[Graph, st.DataObject], tuple[Graph, tuple[str, ...]]]
"""Injects one defect; returns the broken graph and the names one message must quote."""


def _produced(graph: Graph) -> list[tuple[str, int]]:
    """(tensor, producer position) of every tensor some kernel produces."""
    live = graph.liveness
    return [(t.name, int(live.producer[i])) for i, t in enumerate(graph.tensors)
            if live.producer[i] >= 0]


def _with_kernels(graph: Graph, kernels: list[Kernel]) -> Graph:
    return attrs.evolve(graph, kernels=kernels)


def duplicate_tensor(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    t = data.draw(st.sampled_from(graph.tensors))
    copy = attrs.evolve(t, nbytes=t.nbytes + 1)
    return attrs.evolve(graph, tensors=[*graph.tensors, copy]), (t.name,)


def duplicate_kernel(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    i, j = data.draw(st.lists(st.integers(0, len(graph.kernels) - 1), min_size=2, max_size=2,
                              unique=True))
    kernels = list(graph.kernels)
    kernels[j] = attrs.evolve(kernels[j], name=kernels[i].name)
    return _with_kernels(graph, kernels), (kernels[i].name,)


def use_before_produce(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    name, producer = data.draw(st.sampled_from(_produced(graph)))
    at = data.draw(st.integers(0, producer))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("early_reader", "peek", inputs=(name,)))
    return _with_kernels(graph, kernels), ("early_reader", name, graph.kernels[producer].name)


def produced_twice(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    name, producer = data.draw(st.sampled_from(_produced(graph)))
    at = data.draw(st.integers(producer + 1, len(graph.kernels)))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("second_writer", "overwrite", outputs=(name,)))
    return _with_kernels(graph, kernels), ("second_writer", name, graph.kernels[producer].name)


def never_produced(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    kind = data.draw(st.sampled_from([k for k in TensorKind if not k.exists_before_step]))
    at = data.draw(st.integers(0, len(graph.kernels)))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("orphan_reader", "read", inputs=("ghost",)))
    tensors = [*graph.tensors, Tensor("ghost", 8, kind)]
    return Graph(name=graph.name, tensors=tensors, kernels=kernels), ("orphan_reader", "ghost")


def unknown_tensor(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    k = data.draw(st.integers(0, len(graph.kernels) - 1))
    role = data.draw(st.sampled_from(("inputs", "outputs")))
    kernels = list(graph.kernels)
    victim = kernels[k]
    kernels[k] = attrs.evolve(victim, **{role: (*getattr(victim, role), "no_such_tensor")})
    return _with_kernels(graph, kernels), (victim.name, "no_such_tensor")


def empty_kernel(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    at = data.draw(st.integers(0, len(graph.kernels)))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("idle", "nop"))
    return _with_kernels(graph, kernels), ("idle",)


def pre_existing_written_as_new(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    t = data.draw(st.sampled_from([t for t in graph.tensors if t.kind.exists_before_step]))
    at = data.draw(st.integers(0, len(graph.kernels)))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("clobber", "fill", outputs=(t.name,)))
    return _with_kernels(graph, kernels), ("clobber", t.name)


def constant_written_in_place(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    at = data.draw(st.integers(0, len(graph.kernels)))
    kernels = list(graph.kernels)
    kernels.insert(at, Kernel("scale_", "scale", inputs=("pi",), outputs=("pi",)))
    tensors = [*graph.tensors, Tensor("pi", 8, TensorKind.CONSTANT)]
    return Graph(name=graph.name, tensors=tensors, kernels=kernels), ("scale_", "pi")


def listed_twice(graph: Graph, data: st.DataObject) -> tuple[Graph, tuple[str, ...]]:
    candidates = [(i, role) for i, k in enumerate(graph.kernels)
                  for role in ("inputs", "outputs") if getattr(k, role)]
    i, role = data.draw(st.sampled_from(candidates))
    kernels = list(graph.kernels)
    victim = kernels[i]
    names = getattr(victim, role)
    twice = data.draw(st.sampled_from(names))
    kernels[i] = attrs.evolve(victim, **{role: (*names, twice)})
    return _with_kernels(graph, kernels), (victim.name, twice)


DEFECTS: list[Defect] = [
    duplicate_tensor, duplicate_kernel, use_before_produce, produced_twice, never_produced,
    unknown_tensor, empty_kernel, pre_existing_written_as_new, constant_written_in_place,
    listed_twice,
]


@pytest.mark.parametrize("defect", DEFECTS, ids=lambda d: d.__name__)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=training_graphs(max_layers=3), data=st.data())
def test_verification_catches_injected_defect(defect: Defect, graph: Graph,
                                              data: st.DataObject) -> None:
    broken, names = defect(graph, data)
    errors = [str(p) for p in verify_graph(broken) if p.severity is Severity.ERROR]
    assert errors, f"{defect.__name__} went unnoticed"
    assert any(all(repr(n) in e for n in names) for e in errors), (names, errors)
    with pytest.raises(GraphError) as caught:
        check_graph(broken)
    assert caught.value.problems == tuple(errors)
    assert caught.value.hint
    with pytest.raises(GraphError):
        _ = broken.liveness
