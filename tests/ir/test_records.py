"""Unit tests of the IR records, the builder and graph lookups."""

from __future__ import annotations

import math

import pytest

from autotm_core.errors import GraphError
from autotm_core.ir import (
    Graph,
    GraphBuilder,
    Kernel,
    Severity,
    Tensor,
    TensorKind,
    nbytes_of,
    verify_graph,
)

# --- Tensor ------------------------------------------------------------------------------


def test_tensor_defaults_and_conversions() -> None:
    t = Tensor("x", 16, "input", [2, 2], "float32", ["dram"])
    assert t.kind is TensorKind.INPUT
    assert t.shape == (2, 2) and t.pools == ("dram",)
    plain = Tensor("y", 0)
    assert plain.kind is TensorKind.ACTIVATION
    assert (plain.shape, plain.dtype, plain.pools) == (None, None, None)


@pytest.mark.parametrize("nbytes", [-1, 1.5, 2.0, "8", True, None, math.nan, 2**48 + 1, 10**30],
                         ids=str)
def test_tensor_rejects_bad_sizes_naming_the_tensor(nbytes: object) -> None:
    with pytest.raises(GraphError, match="'w0'") as caught:
        Tensor("w0", nbytes)  # type: ignore[arg-type]
    assert caught.value.hint


def test_sizes_up_to_2_48_bytes_and_graphs_up_to_2_60() -> None:
    assert Tensor("w", 2**48).nbytes == 2**48
    with pytest.raises(GraphError, match=r"workspace of about 2\^16609 is more than the 2"):
        Kernel("k", "x", (), ("w",), workspace_nbytes=10**5000)
    b = GraphBuilder("huge")
    names = [b.tensor(f"t{i}", nbytes=2**48) for i in range(4097)]
    for i, name in enumerate(names):
        b.kernel(f"k{i}", op="x", outputs=[name])
    problems = verify_graph(b.build(verify=False))
    assert any("more than the 2^60 bytes" in str(p) for p in problems)


@pytest.mark.parametrize("name", ["", 3, None])
def test_tensor_rejects_bad_names(name: object) -> None:
    with pytest.raises(GraphError, match="non-empty string"):
        Tensor(name, 4)  # type: ignore[arg-type]


@pytest.mark.parametrize("shape", [[2, -1], [1.5], [True], "4x4", 7])
def test_tensor_rejects_bad_shapes(shape: object) -> None:
    with pytest.raises(GraphError, match="shape"):
        Tensor("x", 4, shape=shape)  # type: ignore[arg-type]


@pytest.mark.parametrize("pools", ["dram", [1, 2], 5])
def test_tensor_rejects_bad_pools(pools: object) -> None:
    with pytest.raises(GraphError, match="pools"):
        Tensor("x", 4, pools=pools)  # type: ignore[arg-type]


def test_tensor_rejects_unknown_kind() -> None:
    with pytest.raises(GraphError, match="'weights' is not one of activation, parameter"):
        Tensor("x", 4, "weights")  # type: ignore[arg-type]


def test_kind_lifetimes() -> None:
    pre = {k for k in TensorKind if k.exists_before_step}
    survive = {k for k in TensorKind if k.survives_step}
    assert pre == {TensorKind.PARAMETER, TensorKind.OPTIMIZER_STATE, TensorKind.INPUT,
                   TensorKind.CONSTANT}
    assert survive == {TensorKind.PARAMETER, TensorKind.OPTIMIZER_STATE, TensorKind.CONSTANT,
                       TensorKind.OUTPUT}


def test_nbytes_of() -> None:
    assert nbytes_of((64, 784), "float32") == 64 * 784 * 4
    assert nbytes_of((), "float16") == 2
    assert nbytes_of([3, 0], "int64") == 0
    with pytest.raises(GraphError, match="unknown dtype 'float33'") as caught:
        nbytes_of((2,), "float33")
    assert "float32" in caught.value.hint


# --- Kernel ------------------------------------------------------------------------------


def test_kernel_tensors_inputs_first_each_once() -> None:
    k = Kernel("sgd", "sgd", inputs=["w", "g"], outputs=["w", "m"])
    assert k.inputs == ("w", "g") and k.outputs == ("w", "m")
    assert k.tensors == ("w", "g", "m")
    assert k.workspace_nbytes == 0 and k.flops is None


@pytest.mark.parametrize("names", ["x", ("x", 3), 5, None])
def test_kernel_rejects_bad_tensor_lists(names: object) -> None:
    with pytest.raises(GraphError, match="tensor"):
        Kernel("k", "op", inputs=names)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="tensor"):
        Kernel("k", "op", outputs=names)  # type: ignore[arg-type]


@pytest.mark.parametrize("flops", [-1, "10", True, math.nan, math.inf])
def test_kernel_rejects_bad_flops(flops: object) -> None:
    with pytest.raises(GraphError, match="kernel 'k': flops"):
        Kernel("k", "op", inputs=["x"], flops=flops)  # type: ignore[arg-type]


@pytest.mark.parametrize("workspace", [-1, 1.5, "8", True])
def test_kernel_rejects_bad_workspace(workspace: object) -> None:
    with pytest.raises(GraphError, match="kernel 'k': workspace"):
        Kernel("k", "op", inputs=["x"], workspace_nbytes=workspace)  # type: ignore[arg-type]


def test_kernel_rejects_empty_name() -> None:
    with pytest.raises(GraphError, match="non-empty string"):
        Kernel("", "op")


# --- Builder and graph -------------------------------------------------------------------


def _tiny() -> GraphBuilder:
    b = GraphBuilder("tiny")
    x = b.tensor("x", shape=(4, 8), dtype="float32", kind="input")
    w = b.tensor("w", nbytes=64, kind=TensorKind.PARAMETER)
    y = b.tensor("y", nbytes=128)
    loss = b.tensor("loss", nbytes=4, kind="output")
    b.kernel("mm", op="matmul", inputs=[x, w], outputs=[y], flops=512, workspace_nbytes=32)
    b.kernel("reduce", op="sum", inputs=[y], outputs=[loss])
    b.kernel("update", op="scale", inputs=[w], outputs=[w])
    return b


def test_builder_builds_a_verified_graph_with_liveness() -> None:
    graph = _tiny().build()
    assert [k.name for k in graph.kernels] == ["mm", "reduce", "update"]
    assert graph.tensor("x").nbytes == 128
    assert graph.kernel("mm").workspace_nbytes == 32
    assert graph.total_nbytes == 128 + 64 + 128 + 4
    live = graph.liveness
    # x (input, last use 0); w (parameter, whole step); y (0..1); loss (1..end)
    assert live.live_nbytes.tolist() == [128 + 64 + 128 + 32, 64 + 128 + 4, 64 + 4]
    assert (live.peak_nbytes, live.peak_kernel) == (352, 0)
    assert graph.liveness is live  # computed once


def test_builder_nbytes_and_errors() -> None:
    b = _tiny()
    assert b.nbytes("w") == 64
    with pytest.raises(GraphError, match="'nope' has not been declared"):
        b.nbytes("nope")
    with pytest.raises(GraphError, match="give nbytes, or both shape and dtype"):
        b.tensor("z", shape=(2,))


def test_builder_verifies_unless_asked_not_to() -> None:
    b = _tiny()
    b.kernel("bad", op="read", inputs=["missing"])
    with pytest.raises(GraphError, match="kernel 'bad' \\(#3\\): reads unknown tensor 'missing'"):
        b.build()
    graph = b.build(verify=False)
    assert len(graph.kernels) == 4
    with pytest.raises(GraphError, match="graph 'tiny': 1 problem"):
        _ = graph.liveness


def test_graph_lookups_name_the_graph_and_the_missing_record() -> None:
    graph = _tiny().build()
    assert graph.tensor_index["loss"] == 3 and graph.kernel_index["update"] == 2
    with pytest.raises(GraphError, match="graph 'tiny' has no tensor 'nope'") as caught:
        graph.tensor("nope")
    assert "info" in caught.value.hint
    with pytest.raises(GraphError, match="graph 'tiny' has no kernel 'nope'"):
        graph.kernel("nope")


def test_graph_equality_is_by_value() -> None:
    assert _tiny().build() == _tiny().build()
    other = _tiny()
    other.kernel("extra", op="noop", inputs=["loss"])
    assert other.build() != _tiny().build()


def test_unused_tensor_is_a_warning_not_an_error() -> None:
    b = _tiny()
    b.tensor("spare", nbytes=8)
    graph = b.build()
    problems = verify_graph(graph)
    assert [(p.severity, p.subject) for p in problems] == [(Severity.WARNING, "tensor 'spare'")]
    # a tensor nobody produces and that does not pre-exist is never live
    spare = graph.tensor_index["spare"]
    assert not any(graph.liveness.is_live(spare, k) for k in range(3))


def test_empty_graph() -> None:
    graph = Graph(name="empty", tensors=[], kernels=[])
    assert verify_graph(graph) == []
    assert (graph.liveness.peak_nbytes, graph.liveness.peak_kernel) == (0, -1)
    assert graph.liveness.live_nbytes.tolist() == []
