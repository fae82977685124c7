"""The tape: backward kernels, gradient accumulation, optimizer state, kinds and sizes."""

from __future__ import annotations

import pytest

from autotm_core.errors import GraphError, UsageError
from autotm_core.ir import Graph, TensorKind
from autotm_core.zoo import Tape
from autotm_core.zoo import layers as L


def _residual(optimizer: str = "momentum", dtype: str = "float32") -> Graph:
    t = Tape("residual", dtype=dtype)
    x, labels = L.image_inputs(t, batch=2, image=8)
    x = L.conv2d(t, x, 4, 3, padding=1, name="conv0")
    y = L.conv2d(t, x, 4, 3, padding=1, name="conv1")
    y = L.relu(t, y, name="relu1")
    x = L.add(t, x, y, name="add")
    x = L.global_avg_pool(t, x, name="pool")
    logits = L.linear(t, x, 10, name="fc")
    t.loss(logits, labels)
    return t.finish(optimizer=optimizer)


def test_forward_backward_and_update_in_order() -> None:
    g = _residual()
    names = [k.name for k in g.kernels]
    assert names[:7] == ["conv0", "conv1", "relu1", "add", "pool", "fc", "loss"]
    assert names[7] == "loss.backward"
    # The first convolution reads the images, which need no gradient: no backward_data.
    assert "conv0.backward_data" not in names
    assert "conv0.backward_filter" in names
    # Updates come last, one per parameter, each updating it in place with its momentum.
    updates = [k for k in g.kernels if k.op == "momentum_update"]
    assert [k.name for k in g.kernels[-len(updates):]] == [k.name for k in updates]
    params = [t.name for t in g.tensors if t.kind is TensorKind.PARAMETER]
    assert [k.inputs[0] for k in updates] == params
    assert params == ["conv0.weight", "conv1.weight", "fc.weight", "fc.bias"]
    for kernel in updates:
        p = kernel.inputs[0]
        assert p in kernel.outputs and f"{p}.momentum" in kernel.outputs


def test_residual_gradient_is_accumulated_by_an_add_kernel() -> None:
    g = _residual()
    adds = [k for k in g.kernels if k.op == "add" and k.name.startswith("conv0.grad_add")]
    assert len(adds) == 1
    # It sums the skip path (the add's output gradient, passed through) and the branch.
    (acc,) = adds
    assert set(acc.inputs) == {"add.grad", "conv0.grad.conv1"}
    assert g.kernel("conv0.backward_filter").inputs[0] == acc.outputs[0]


def test_backward_kernels_read_what_the_forward_saved() -> None:
    g = _residual()
    # The add passes its output gradient through unchanged; ReLU's backward reads its output.
    assert g.kernel("relu1.backward").inputs == ("add.grad", "relu1")
    assert g.kernel("conv1.backward_data").inputs == ("conv1.grad", "conv1.weight")
    assert g.kernel("conv1.backward_filter").inputs[1] == "conv0"
    assert set(g.kernel("loss.backward").inputs) == {"fc", "labels"}


def test_kinds_and_sizes() -> None:
    g = _residual(optimizer="adam", dtype="float16")
    kinds = {t.name: t.kind for t in g.tensors}
    assert kinds["images"] is TensorKind.INPUT and kinds["labels"] is TensorKind.INPUT
    assert kinds["loss"] is TensorKind.OUTPUT
    assert kinds["conv1.weight"] is TensorKind.PARAMETER
    assert kinds["conv1.weight.grad"] is TensorKind.GRADIENT
    for state in ("adam_m", "adam_v"):
        assert kinds[f"conv1.weight.{state}"] is TensorKind.OPTIMIZER_STATE
    assert kinds["conv1"] is TensorKind.ACTIVATION
    assert g.tensor("conv1").nbytes == 2 * 4 * 8 * 8 * 2  # float16
    assert g.tensor("conv1.weight.adam_v").nbytes == 4 * 4 * 3 * 3 * 2
    assert g.tensor("labels").nbytes == 2 * 8  # int64
    n_params = sum(t.kind is TensorKind.PARAMETER for t in g.tensors)
    assert sum(t.kind is TensorKind.OPTIMIZER_STATE for t in g.tensors) == 2 * n_params


def test_flops_are_twice_the_macs_for_convolutions() -> None:
    g = _residual()
    macs = 2 * 4 * 8 * 8 * 4 * 3 * 3  # batch, out channels, H, W, in channels, kernel
    assert g.kernel("conv1").flops == 2 * macs
    assert g.kernel("conv1.backward_data").flops == 2 * macs
    assert g.kernel("fc").flops == 2 * 2 * 4 * 10 + 2 * 10


@pytest.mark.parametrize(("optimizer", "states"), [("sgd", 0), ("momentum", 1), ("adam", 2)])
def test_optimizer_state_per_parameter(optimizer: str, states: int) -> None:
    g = _residual(optimizer=optimizer)
    n_params = sum(t.kind is TensorKind.PARAMETER for t in g.tensors)
    assert sum(t.kind is TensorKind.OPTIMIZER_STATE for t in g.tensors) == states * n_params


def test_tied_parameter_gets_its_gradients_summed() -> None:
    t = Tape("tied")
    ids = t.input("ids", (2, 3), dtype="int64")
    labels = t.input("labels", (2, 3), dtype="int64")
    h = L.embedding(t, ids, 7, 5, name="emb")
    logits = L.linear(t, h, 7, bias=False, weight=t.parameter_named("emb.weight"), name="head")
    t.loss(logits, labels)
    g = t.finish(optimizer="sgd")
    (update,) = [k for k in g.kernels if k.op == "sgd_update"]
    producer = next(k for k in g.kernels if update.inputs[1] in k.outputs)
    assert producer.op == "add"


def test_errors_name_the_fault() -> None:
    t = Tape("dead")
    x, labels = L.image_inputs(t, batch=1, image=4)
    L.conv2d(t, x, 2, 1, name="unused")
    with pytest.raises(GraphError, match="no loss"):
        t.finish()
    logits = L.linear(t, L.view(x, (1, 48)), 3, name="fc")
    t.loss(logits, labels)
    with pytest.raises(GraphError, match="'unused' does not reach the loss"):
        t.finish()
    with pytest.raises(UsageError, match="floating-point"):
        Tape("bad", dtype="int32")
    with pytest.raises(UsageError, match="optimizer"):
        _residual(optimizer="lion")
    t2 = Tape("small")
    x2, _ = L.image_inputs(t2, batch=1, image=2)
    with pytest.raises(UsageError, match="would have shape"):
        L.conv2d(t2, x2, 2, 3, name="conv")
