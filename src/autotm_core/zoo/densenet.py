"""DenseNets with bottleneck layers and compression (Huang et al. 2017, DenseNet-BC).

Stem: 7x7/2 convolution (2 x growth channels), batch-norm, ReLU, 3x3/2 max pool.
Each dense layer: batch-norm, ReLU, 1x1 convolution to 4 x growth channels,
batch-norm, ReLU, 3x3 convolution to ``growth`` channels; its output is
concatenated to its input (``x = concat(x, y)``, one concatenation per layer as
in AutoTM's artifact, so every layer's input is a stored tensor as in a naive
framework implementation). Transitions between blocks: batch-norm, ReLU, 1x1
convolution halving the channels (compression 0.5), 2x2 average pool. Head:
batch-norm, ReLU, global average pool, linear. Convolutions have no bias.

Kernels carry torchvision's module paths (``features.conv0``, ``features.transition1.conv``,
``classifier``) but for the dense layers, numbered as in a ``ModuleList``
(``features.denseblock1.0.conv1``, where torchvision writes ``denselayer1``) so that
:func:`~autotm_core.ir.layer_of` finds one layer per dense layer.
"""

from __future__ import annotations

from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, Value, check_positive

DENSENET_BLOCKS: dict[int, tuple[int, int, int, int]] = {
    121: (6, 12, 24, 16),
    169: (6, 12, 32, 32),
    201: (6, 12, 48, 32),
    264: (6, 12, 64, 48),
}
"""Dense layers per block, by depth."""


def _bn_relu_conv(t: Tape, x: Value, channels: int, kernel: int, *, name: str,
                  modules: tuple[str, str, str]) -> Value:
    norm, act, conv = modules
    with t.module(norm):
        x = L.batch_norm(t, x, name=f"{name}.bn")
    with t.module(act):
        x = L.relu(t, x, name=f"{name}.relu")
    with t.module(conv):
        return L.conv2d(t, x, channels, kernel, padding=kernel // 2, name=f"{name}.conv")


def densenet(depth: int = 264, *, batch: int = 1, image: int = 224, classes: int = 1000,
             growth: int = 32, transition: int | None = None, dtype: str = "float32",
             optimizer: Optimizer | str = Optimizer.MOMENTUM) -> Graph:
    """One training step of DenseNet-``depth`` (121, 169, 201 or 264).

    ``transition`` fixes the channels out of every transition instead of halving
    them (AutoTM's artifact used ``2 x growth`` = 64).
    """
    if depth not in DENSENET_BLOCKS:
        raise UsageError(f"no DenseNet of depth {depth}",
                         hint="choose one of " + ", ".join(map(str, DENSENET_BLOCKS)))
    name = f"densenet{depth}"
    check_positive(name, batch=batch, image=image, classes=classes, growth=growth)
    if transition is not None:
        check_positive(name, transition=transition)
    t = Tape(name, dtype=dtype)
    x, labels = L.image_inputs(t, batch=batch, image=image)
    x = L.stem(t, x, 2 * growth, modules=("features.conv0", "features.norm0", "features.relu0",
                                          "features.pool0"))
    blocks = DENSENET_BLOCKS[depth]
    for b, layers in enumerate(blocks, start=1):
        for i in range(layers):
            prefix = f"block{b}.layer{i}"
            with t.module(f"features.denseblock{b}.{i}"):
                y = _bn_relu_conv(t, x, 4 * growth, 1, name=f"{prefix}.1",
                                  modules=("norm1", "relu1", "conv1"))
                y = _bn_relu_conv(t, y, growth, 3, name=f"{prefix}.2",
                                  modules=("norm2", "relu2", "conv2"))
                x = L.concat(t, [x, y], name=f"{prefix}.concat")
        if b < len(blocks):
            out = x.shape[1] // 2 if transition is None else transition
            with t.module(f"features.transition{b}"):
                x = _bn_relu_conv(t, x, out, 1, name=f"transition{b}",
                                  modules=("norm", "relu", "conv"))
                with t.module("pool"):
                    x = L.avg_pool2d(t, x, 2, name=f"transition{b}.pool")
    with t.module("features.norm5"):
        x = L.batch_norm(t, x, name="final.bn")
    x = L.relu(t, x, name="final.relu")
    t.loss(L.classifier(t, x, classes, modules=("", "", "classifier")), labels)
    return t.finish(optimizer=optimizer)
