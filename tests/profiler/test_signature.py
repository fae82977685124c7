"""Kernel signatures and the configurations profiled."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.profiler.helpers import key

from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.profiler.configs import kernel_configs
from autotm_core.profiler.signature import kernel_signatures


def _graph(names: tuple[str, str, str], nbytes: int = 4096, op: str = "relu"):
    b = GraphBuilder("g")
    x, y, z = names
    b.tensor(x, nbytes=nbytes, kind=TensorKind.INPUT, shape=(nbytes // 4,), dtype="float32")
    b.tensor(y, nbytes=nbytes, shape=(nbytes // 4,), dtype="float32")
    b.tensor(z, nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("first", op=op, inputs=[x], outputs=[y], flops=100.0)
    b.kernel("second", op="sum", inputs=[y, x], outputs=[z])
    return b.build()


def test_names_do_not_matter_sizes_and_ops_do() -> None:
    base = kernel_signatures(_graph(("x", "y", "z")), flops=[100.0, 5.0])
    renamed = kernel_signatures(_graph(("a", "b", "c")), flops=[100.0, 5.0])
    assert [s.digest for s in base] == [s.digest for s in renamed]
    bigger = kernel_signatures(_graph(("x", "y", "z"), nbytes=8192), flops=[100.0, 5.0])
    other_op = kernel_signatures(_graph(("x", "y", "z"), op="gelu"), flops=[100.0, 5.0])
    more_flops = kernel_signatures(_graph(("x", "y", "z")), flops=[200.0, 5.0])
    for changed in (bigger, other_op, more_flops):
        assert changed[0].digest != base[0].digest
    assert base[0].digest != base[1].digest
    assert [t.access for t in base[1].tensors] == ["r", "r", "w"]


def test_in_place_tensors_are_read_and_written(mlp) -> None:
    signatures = kernel_signatures(mlp, flops=[0.0] * len(mlp.kernels))
    sgd = signatures[mlp.kernel_index["sgd_w0"]]
    assert [t.access for t in sgd.tensors] == ["rw", "r", "rw"]
    assert signatures[mlp.kernel_index["sgd_b0"]].digest == signatures[
        mlp.kernel_index["sgd_b1"]].digest


def test_the_digest_is_pinned() -> None:
    # the same text hashes alike in every process and version; a change to the signature's
    # JSON makes every existing cache entry miss, so make it on purpose
    assert key(0).signature.digest == "95032bb15b69a02487fe17def8aca10c"


def test_every_configuration_when_few() -> None:
    rows, cut = kernel_configs([[0, 1], [0, 1], [0, 1]], n_pools=2)
    assert not cut and rows.shape == (8, 3) and len({tuple(r) for r in rows.tolist()}) == 8


def test_restricted_configurations() -> None:
    rows, cut = kernel_configs([[0, 1], [0, 1], [0, 1]], n_pools=2, max_configs=4)
    assert cut
    assert rows.tolist() == [[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    rows, cut = kernel_configs([[0], [0, 1], [1]], n_pools=2, max_configs=1)
    assert cut and rows.tolist() == [[0, 0, 1], [0, 1, 1]]


@settings(max_examples=50)
@given(st.lists(st.sets(st.integers(0, 2), min_size=1), min_size=0, max_size=6),
       st.integers(1, 40))
def test_configurations_respect_allowed_pools(allowed_sets, max_configs) -> None:
    allowed = [sorted(a) for a in allowed_sets]
    rows, cut = kernel_configs(allowed, n_pools=3, max_configs=max_configs)
    assert rows.dtype == np.int8 and rows.shape[1] == len(allowed)
    assert len({tuple(r) for r in rows.tolist()}) == len(rows) >= 1
    for row in rows.tolist():
        assert all(p in a for p, a in zip(row, allowed, strict=True))
    if not cut:
        assert len(rows) == int(np.prod([len(a) for a in allowed]))
    else:
        assert len(rows) <= 3 + 2 * len(allowed)
