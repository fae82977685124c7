"""ResNets with bottleneck blocks (He et al. 2016; torchvision's v1.5, stride on the 3x3).

Stem: 7x7/2 convolution (64), batch-norm, ReLU, 3x3/2 max pool. Each bottleneck:
1x1 (width) - 3x3 (width, stride) - 1x1 (4 x width) convolutions, each with
batch-norm, ReLU after the first two and after the residual add; the first block
of each stage projects the shortcut with a strided 1x1 convolution + batch-norm.
Convolutions have no bias. Head: global average pool, linear to ``classes``. Kernels carry
torchvision's module paths (``conv1``, ``layer1.0.conv1``, ``layer1.0.downsample.0``, ``fc``):
one layer per bottleneck block.
"""

from __future__ import annotations

from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, Value, check_positive

RESNET_STAGES: dict[int, tuple[int, int, int, int]] = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
    200: (3, 24, 36, 3),
}
"""Bottleneck blocks per stage, by depth."""


def _conv_bn(t: Tape, x: Value, channels: int, kernel: int, *, name: str,
             modules: tuple[str, str], stride: int = 1, relu: bool = True) -> Value:
    conv, bn = modules
    with t.module(conv):
        x = L.conv2d(t, x, channels, kernel, stride=stride, padding=kernel // 2,
                     name=f"{name}.conv")
    with t.module(bn):
        x = L.batch_norm(t, x, name=f"{name}.bn")
    if not relu:
        return x
    with t.module("relu"):
        return L.relu(t, x, name=f"{name}.relu")


def _bottleneck(t: Tape, x: Value, width: int, stride: int, *, name: str) -> Value:
    out = _conv_bn(t, x, width, 1, name=f"{name}.1", modules=("conv1", "bn1"))
    out = _conv_bn(t, out, width, 3, stride=stride, name=f"{name}.2", modules=("conv2", "bn2"))
    out = _conv_bn(t, out, 4 * width, 1, relu=False, name=f"{name}.3", modules=("conv3", "bn3"))
    shortcut = x
    if stride != 1 or x.shape[1] != 4 * width:
        shortcut = _conv_bn(t, x, 4 * width, 1, stride=stride, relu=False,
                            name=f"{name}.downsample", modules=("downsample.0", "downsample.1"))
    out = L.add(t, out, shortcut, name=f"{name}.add")
    with t.module("relu"):
        return L.relu(t, out, name=f"{name}.relu")


def resnet(depth: int = 50, *, batch: int = 1, image: int = 224, classes: int = 1000,
           dtype: str = "float32", optimizer: Optimizer | str = Optimizer.MOMENTUM) -> Graph:
    """One training step of ResNet-``depth`` (50, 101, 152 or 200)."""
    if depth not in RESNET_STAGES:
        raise UsageError(f"no ResNet of depth {depth}",
                         hint="choose one of " + ", ".join(map(str, RESNET_STAGES)))
    name = f"resnet{depth}"
    check_positive(name, batch=batch, image=image, classes=classes)
    t = Tape(name, dtype=dtype)
    x, labels = L.image_inputs(t, batch=batch, image=image)
    x = L.stem(t, x, 64)
    for s, blocks in enumerate(RESNET_STAGES[depth]):
        width = 64 * 2**s
        for i in range(blocks):
            stride = 2 if i == 0 and s > 0 else 1
            with t.module(f"layer{s + 1}.{i}"):
                x = _bottleneck(t, x, width, stride, name=f"layer{s + 1}.{i}")
    t.loss(L.classifier(t, x, classes), labels)
    return t.finish(optimizer=optimizer)
