"""The baselines of what practitioners do (checkpoint-layers, offload-activations,
recompute-only) on real and random graphs at many limits: every plan verifies, or the limit
is refused with one CapacityError; the simulator prices their reruns and copies."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.ir.graph_strategies import training_graphs

from autotm_core import Graph, MemorySystem, Pool
from autotm_core.baselines import run_baseline
from autotm_core.baselines.saved import backward_start
from autotm_core.capacity import with_fast_capacity
from autotm_core.costs import roofline_costs
from autotm_core.errors import CapacityError
from autotm_core.examples import build_example
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from autotm_core.zoo import build_network

from .blocks import blocks
from .conftest import assert_verifies

PRACTICE = ("checkpoint-layers", "offload-activations", "recompute-only")
GRAPHS = {
    "example:cnn": lambda: build_example("cnn"),
    "example:mlp": lambda: build_example("mlp"),
    "gpt2 tiny": lambda: build_network("gpt2:batch=2,seq=64,layers=2"),
    "gpt2 small vocabulary": lambda: build_network(
        "gpt2:batch=8,seq=256,layers=2,vocab=1000,width=256,heads=4,dropout=true"),
    "blocks": lambda: blocks(3, random=frozenset({1})),
}
FRACTIONS = (None, 1.0, 0.9, 0.75, 0.6, 0.5, 0.3)


@pytest.fixture(scope="module")
def graphs() -> dict[str, Graph]:
    return {name: build() for name, build in GRAPHS.items()}


@pytest.mark.parametrize("system", ["gpu-h200", "optane-2019"])
@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
@pytest.mark.parametrize("name", PRACTICE)
def test_every_plan_verifies_and_is_priced(graphs, name: str, graph_name: str,  # type: ignore[no-untyped-def]
                                           system: str) -> None:
    graph, memory = graphs[graph_name], preset(system)
    costs = roofline_costs(graph, memory)
    planned = 0
    for fraction in FRACTIONS:
        capacity = None if fraction is None else int(graph.liveness.peak_nbytes * fraction)
        try:
            plan = run_baseline(name, graph, memory, fast_capacity_nbytes=capacity, costs=costs)
        except CapacityError as refused:
            assert name in refused.message and refused.hint
            continue
        planned += 1
        assert_verifies(plan, graph, memory, capacity)
        limited = with_fast_capacity(memory, capacity)
        simulation = simulate(plan, graph, limited, costs)
        assert simulation.rerun_seconds.sum() == pytest.approx(
            plan.attributes.get("rerun_seconds", 0.0))
        assert len(plan.reruns) == plan.attributes.get("reruns", 0)
    assert planned >= 1  # at least without a limit


def _with_modules(graph: Graph, data: st.DataObject) -> Graph:
    """``graph`` with its forward kernels grouped into numbered layers (``layers.N``)."""
    start = backward_start(graph)
    layer, kernels = 0, []
    for k, kernel in enumerate(graph.kernels):
        if k < start and data.draw(st.booleans()):
            layer += 1
        module = f"layers.{layer}.op{k}" if k < start and data.draw(st.booleans()) else ""
        kernels.append(attrs.evolve(kernel, module=module))
    tensors = [attrs.evolve(t, pools=t.pools or None) for t in graph.tensors]
    return Graph(graph.name, tensors, kernels)


@st.composite
def layered_steps(draw: st.DrawFn) -> Graph:
    """A random training step of numbered layers: each forward kernel reads the value before
    it (and maybe a weight), may be random; its backward kernel reads any of the values it
    read or wrote; a weight's update comes last, or (rarely) before the backward pass."""
    b = GraphBuilder("layered")
    sizes = st.integers(1, 8).map(lambda n: n << 20)
    b.tensor("x", nbytes=draw(sizes), kind=TensorKind.INPUT)
    forward: list[tuple[str, list[str], str, str | None]] = []
    h, n = "x", 0
    for i in range(draw(st.integers(1, 3))):
        for j in range(draw(st.integers(1, 3))):
            out = b.tensor(f"t{n}", nbytes=draw(sizes))
            weight = None
            if draw(st.booleans()):
                weight = b.tensor(f"w{n}", nbytes=1 << 16, kind=TensorKind.PARAMETER)
            op = draw(st.sampled_from(["gelu", "mul", "matmul", "native_dropout"]))
            module = draw(st.sampled_from([f"blocks.{i}.m{j}", f"blocks.{i}", ""]))
            inputs = [h] + ([weight] if weight else [])
            b.kernel(f"f{n}", op=op, inputs=inputs, outputs=[out], flops=draw(
                st.sampled_from([1e3, 1e9, 1e12])), module=module)
            forward.append((f"f{n}", inputs, out, weight))
            h, n = out, n + 1
    weights = [w for *_, w in forward if w]
    early = weights and draw(st.booleans()) and draw(st.booleans())
    if early:
        b.kernel("early", op="sgd_update", inputs=[weights[0]], outputs=[weights[0]])
    b.tensor("loss", nbytes=4, kind=TensorKind.OUTPUT)
    b.kernel("loss", op="loss", inputs=[h], outputs=["loss"], flops=1e3)
    grad = b.tensor("g", nbytes=1 << 20, kind=TensorKind.GRADIENT)
    b.kernel("loss.backward", op="loss_backward", inputs=[h], outputs=[grad], flops=1e3)
    for name, inputs, out, weight in reversed(forward):
        reads = [t for t in [*inputs, out] if draw(st.booleans())]
        outs = [b.tensor(f"d{name}", nbytes=1 << 20, kind=TensorKind.GRADIENT)]
        if weight:
            outs.append(b.tensor(f"d{weight}", nbytes=1 << 16, kind=TensorKind.GRADIENT))
        b.kernel(f"{name}.backward", op="backward", inputs=[grad, *dict.fromkeys(reads)],
                 outputs=outs, flops=1e6)
        grad = outs[0]
    for w in weights[1 if early else 0:]:
        b.kernel(f"sgd.{w}", op="sgd_update", inputs=[w, f"d{w}"], outputs=[w])
    return b.build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layered_steps(), st.sampled_from(["gpu-h200", "optane-2019"]),
       st.sampled_from([1.0, 0.8, 0.6, 0.4]))
def test_on_random_layered_steps_every_plan_verifies(graph: Graph, system: str,
                                                     fraction: float) -> None:
    memory = preset(system)
    capacity = int(graph.liveness.peak_nbytes * fraction)
    for name in PRACTICE:
        try:
            plan = run_baseline(name, graph, memory, fast_capacity_nbytes=capacity)
        except CapacityError:
            continue
        assert_verifies(plan, graph, memory, capacity)


SYSTEM = MemorySystem(
    "three",
    pools=(
        Pool("hbm", None, 1e12, 1e12, 1e-7),
        Pool("dram", 1 << 26, 1e11, 1e11, 1e-7),
        Pool("pmm", None, 3e10, 1e10, 3e-7),
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs(max_layers=5), st.data(), st.sampled_from([0, 1, 2, 4]))
def test_on_random_training_graphs_every_plan_verifies(graph: Graph, data: st.DataObject,
                                                        ratio: int) -> None:
    graph = _with_modules(graph, data)
    capacity = graph.liveness.peak_nbytes * 4 // (ratio + 4)
    for name in PRACTICE:
        try:
            plan = run_baseline(name, graph, SYSTEM, fast_capacity_nbytes=capacity)
        except CapacityError:
            continue
        assert_verifies(plan, graph, SYSTEM, capacity)
