"""Inception v4 (Szegedy et al. 2016, "Inception-v4, Inception-ResNet and the Impact of
Residual Connections on Learning"), at 299x299 by default.

Every convolution is followed by batch-norm and ReLU (no bias), as in the
reference implementations; unpadded ("valid") unless noted. Stem ->
4 x Inception-A (35x35, 384 channels) -> Reduction-A -> 7 x Inception-B (17x17,
1024) -> Reduction-B -> 3 x Inception-C (8x8, 1536) -> global average pool ->
linear. Average-pool branches use a 3x3, stride-1, padding-1 pool. The smallest
image the stem and reductions accept is 75x75.

Kernels carry the module paths of the common PyTorch Inception v4 (pretrainedmodels, timm):
``features.0`` to ``features.2`` (the stem's convolutions), ``features.3`` to ``features.5``
(Mixed-3a, 4a, 5a), ``features.6`` to ``features.21`` (the Inception and Reduction blocks,
branches ``branch0``, ``branch1.0``, ...), ``global_pool``, ``last_linear``: one layer per
block for :func:`~autotm_core.ir.layer_of`.
"""

from __future__ import annotations

import itertools

import attrs

from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, Value, check_positive

Kernel = int | tuple[int, int]


@attrs.frozen
class _Ctx:
    t: Tape
    batch_norm: bool


def _conv(c: _Ctx, x: Value, channels: int, kernel: Kernel, *, name: str, module: str,
          stride: int = 1, padding: Kernel = 0) -> Value:
    norm = c.batch_norm
    with c.t.module(module):
        with c.t.module("conv"):
            x = L.conv2d(c.t, x, channels, kernel, stride=stride, padding=padding, bias=not norm,
                         name=f"{name}.conv")
        if norm:
            with c.t.module("bn"):
                x = L.batch_norm(c.t, x, name=f"{name}.bn")
        with c.t.module("relu"):
            return L.relu(c.t, x, name=f"{name}.relu")


def _chain(c: _Ctx, x: Value, convs: list[tuple[int, Kernel, Kernel, int]], *, name: str,
           module: str) -> Value:
    """Convolutions in sequence: (channels, kernel, padding, stride) each."""
    for i, (channels, kernel, padding, stride) in enumerate(convs):
        x = _conv(c, x, channels, kernel, padding=padding, stride=stride, name=f"{name}.{i}",
                  module=f"{module}.{i}")
    return x


def _pool(c: _Ctx, x: Value, *, name: str, module: str) -> Value:
    with c.t.module(module):
        return L.max_pool2d(c.t, x, 3, stride=2, name=name)


_1X7, _7X1, _1X3, _3X1 = (1, 7), (7, 1), (1, 3), (3, 1)
_P1X7, _P7X1, _P1X3, _P3X1 = (0, 3), (3, 0), (0, 1), (1, 0)


def _stem(c: _Ctx, x: Value) -> Value:
    x = _chain(c, x, [(32, 3, 0, 2), (32, 3, 0, 1), (64, 3, 1, 1)], name="stem",
               module="features")
    with c.t.module("features.3"):
        a = _pool(c, x, name="mixed_3a.pool", module="maxpool")
        b = _conv(c, x, 96, 3, stride=2, name="mixed_3a.conv", module="conv")
        x = L.concat(c.t, [a, b], name="mixed_3a")
    with c.t.module("features.4"):
        a = _chain(c, x, [(64, 1, 0, 1), (96, 3, 0, 1)], name="mixed_4a.b0", module="branch0")
        b = _chain(c, x, [(64, 1, 0, 1), (64, _1X7, _P1X7, 1), (64, _7X1, _P7X1, 1),
                          (96, 3, 0, 1)], name="mixed_4a.b1", module="branch1")
        x = L.concat(c.t, [a, b], name="mixed_4a")
    with c.t.module("features.5"):
        a = _conv(c, x, 192, 3, stride=2, name="mixed_5a.conv", module="conv")
        b = _pool(c, x, name="mixed_5a.pool", module="maxpool")
        return L.concat(c.t, [a, b], name="mixed_5a")


def _pool_branch(c: _Ctx, x: Value, channels: int, *, name: str) -> Value:
    with c.t.module("branch3.0"):
        p = L.avg_pool2d(c.t, x, 3, stride=1, padding=1, name=f"{name}.pool")
    return _conv(c, p, channels, 1, name=f"{name}.conv", module="branch3.1")


def _inception_a(c: _Ctx, x: Value, *, name: str) -> Value:
    branches = [
        _conv(c, x, 96, 1, name=f"{name}.b0", module="branch0"),
        _chain(c, x, [(64, 1, 0, 1), (96, 3, 1, 1)], name=f"{name}.b1", module="branch1"),
        _chain(c, x, [(64, 1, 0, 1), (96, 3, 1, 1), (96, 3, 1, 1)], name=f"{name}.b2",
               module="branch2"),
        _pool_branch(c, x, 96, name=f"{name}.b3"),
    ]
    return L.concat(c.t, branches, name=name)


def _reduction_a(c: _Ctx, x: Value, *, name: str) -> Value:
    branches = [
        _conv(c, x, 384, 3, stride=2, name=f"{name}.b0", module="branch0"),
        _chain(c, x, [(192, 1, 0, 1), (224, 3, 1, 1), (256, 3, 0, 2)], name=f"{name}.b1",
               module="branch1"),
        _pool(c, x, name=f"{name}.b2", module="branch2"),
    ]
    return L.concat(c.t, branches, name=name)


def _inception_b(c: _Ctx, x: Value, *, name: str) -> Value:
    branches = [
        _conv(c, x, 384, 1, name=f"{name}.b0", module="branch0"),
        _chain(c, x, [(192, 1, 0, 1), (224, _1X7, _P1X7, 1), (256, _7X1, _P7X1, 1)],
               name=f"{name}.b1", module="branch1"),
        _chain(c, x, [(192, 1, 0, 1), (192, _7X1, _P7X1, 1), (224, _1X7, _P1X7, 1),
                      (224, _7X1, _P7X1, 1), (256, _1X7, _P1X7, 1)], name=f"{name}.b2",
               module="branch2"),
        _pool_branch(c, x, 128, name=f"{name}.b3"),
    ]
    return L.concat(c.t, branches, name=name)


def _reduction_b(c: _Ctx, x: Value, *, name: str) -> Value:
    branches = [
        _chain(c, x, [(192, 1, 0, 1), (192, 3, 0, 2)], name=f"{name}.b0", module="branch0"),
        _chain(c, x, [(256, 1, 0, 1), (256, _1X7, _P1X7, 1), (320, _7X1, _P7X1, 1),
                      (320, 3, 0, 2)], name=f"{name}.b1", module="branch1"),
        _pool(c, x, name=f"{name}.b2", module="branch2"),
    ]
    return L.concat(c.t, branches, name=name)


def _inception_c(c: _Ctx, x: Value, *, name: str) -> Value:
    b1 = _conv(c, x, 384, 1, name=f"{name}.b1.0", module="branch1_0")
    b2 = _chain(c, x, [(384, 1, 0, 1), (448, _3X1, _P3X1, 1), (512, _1X3, _P1X3, 1)],
                name=f"{name}.b2", module="branch2")
    branches = [
        _conv(c, x, 256, 1, name=f"{name}.b0", module="branch0"),
        _conv(c, b1, 256, _1X3, padding=_P1X3, name=f"{name}.b1.1a", module="branch1_1a"),
        _conv(c, b1, 256, _3X1, padding=_P3X1, name=f"{name}.b1.1b", module="branch1_1b"),
        _conv(c, b2, 256, _1X3, padding=_P1X3, name=f"{name}.b2.3a", module="branch2_3a"),
        _conv(c, b2, 256, _3X1, padding=_P3X1, name=f"{name}.b2.3b", module="branch2_3b"),
        _pool_branch(c, x, 256, name=f"{name}.b3"),
    ]
    return L.concat(c.t, branches, name=name)


def inception_v4(*, batch: int = 1, image: int = 299, classes: int = 1000, dropout: bool = False,
                 batch_norm: bool = True, dtype: str = "float32",
                 optimizer: Optimizer | str = Optimizer.MOMENTUM) -> Graph:
    """One training step of Inception v4: about 42.7 M parameters, 12.3 GMACs at 299x299.

    ``batch_norm=False`` gives every convolution a bias and no batch-norm, as in
    AutoTM's artifact (its Flux model has none).
    """
    check_positive("inception_v4", batch=batch, image=image, classes=classes)
    t = Tape("inception_v4", dtype=dtype)
    c = _Ctx(t, batch_norm)
    x, labels = L.image_inputs(t, batch=batch, image=image)
    x = _stem(c, x)
    feature = itertools.count(6)  # the index in ``features`` of the block after the stem
    for i in range(4):
        with t.module(f"features.{next(feature)}"):
            x = _inception_a(c, x, name=f"inception_a{i}")
    with t.module(f"features.{next(feature)}"):
        x = _reduction_a(c, x, name="reduction_a")
    for i in range(7):
        with t.module(f"features.{next(feature)}"):
            x = _inception_b(c, x, name=f"inception_b{i}")
    with t.module(f"features.{next(feature)}"):
        x = _reduction_b(c, x, name="reduction_b")
    for i in range(3):
        with t.module(f"features.{next(feature)}"):
            x = _inception_c(c, x, name=f"inception_c{i}")
    t.loss(L.classifier(t, x, classes, with_dropout=dropout,
                        modules=("global_pool", "head_drop", "last_linear")), labels)
    return t.finish(optimizer=optimizer)
