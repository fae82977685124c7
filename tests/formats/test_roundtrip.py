"""JSON round trips are lossless: document -> text -> record gives back an equal record."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotm_core.formats import (
    graph_from_text,
    graph_to_document,
    load_graph,
    load_system,
    save_graph,
    save_system,
    system_to_document,
)
from autotm_core.ir import Graph
from autotm_core.memory import CopyLink, MemorySystem, Pool
from autotm_core.presets import PRESETS, preset
from ir.graph_strategies import training_graphs

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_RATE = st.floats(1.0, 1e13, allow_nan=False) | st.integers(1, 10**13)
_NAME = st.text(min_size=1, max_size=8)


@_SETTINGS
@given(training_graphs(max_layers=4))
def test_graph_round_trip_through_text(graph: Graph) -> None:
    text = json.dumps(graph_to_document(graph))
    again = graph_from_text(text)
    assert again == graph
    assert graph_to_document(again) == graph_to_document(graph)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs(max_layers=3))
def test_graph_round_trip_through_a_file(graph: Graph) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "graph.json"
        save_graph(graph, path)
        assert load_graph(path) == graph


@st.composite
def memory_systems(draw: st.DrawFn) -> MemorySystem:
    """Random valid memory systems of two to five pools, with some copy links given."""
    names = draw(st.lists(_NAME, min_size=2, max_size=5, unique=True))
    pools = [
        Pool(
            name=name,
            capacity_nbytes=draw(st.none() | st.integers(0, 2**50)),
            read_bytes_per_second=draw(_RATE),
            write_bytes_per_second=draw(_RATE),
            latency_seconds=draw(st.floats(0, 1e-3) | st.just(0)),
            numa_node=draw(st.none() | st.integers(0, 7)),
            device=draw(st.none() | _NAME),
        )
        for name in names
    ]
    pairs = [(a, b) for a in names for b in names if a != b]
    given_pairs = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=len(pairs)))
    links = [CopyLink(a, b, draw(_RATE), draw(_RATE)) for a, b in given_pairs]
    return MemorySystem(
        name=draw(st.text(max_size=10)),
        pools=pools,
        links=links,
        flops_per_second=draw(_RATE),
        description=draw(st.text(max_size=20)),
        source=draw(st.text(max_size=20)),
    )


@_SETTINGS
@given(memory_systems())
def test_memory_system_round_trip(system: MemorySystem) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "system.json"
        save_system(system, path)
        again = load_system(path)
    assert again == system
    assert system_to_document(again) == system_to_document(system)


def test_presets_round_trip(tmp_path: Path) -> None:
    for name in PRESETS:
        path = tmp_path / f"{name}.json"
        save_system(preset(name), path)
        assert load_system(path) == preset(name)


def test_graph_documents_leave_unset_fields_out() -> None:
    from autotm_core.ir import GraphBuilder

    b = GraphBuilder("g")
    x = b.tensor("x", nbytes=4, kind="input")
    b.kernel("k", op="read", inputs=[x])
    doc = graph_to_document(b.build())
    assert doc == {
        "format": "autotm-core/graph", "version": 1, "name": "g",
        "tensors": [{"name": "x", "nbytes": 4, "kind": "input"}],
        "kernels": [{"name": "k", "op": "read", "inputs": ["x"], "outputs": []}],
    }
