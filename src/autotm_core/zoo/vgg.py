"""VGG-19 (Simonyan & Zisserman 2015, configuration E) and AutoTM's 416-layer VGG.

Convolutions are 3x3 with padding 1 and a bias, each followed by ReLU, no
batch-norm; 2x2 max pooling between blocks; classifier 25088-4096-4096-classes
with ReLU (and dropout when ``dropout`` is set, as torchvision). When the last
feature map is not 7x7 (images other than 224x224) an adaptive average pool
brings it to 7x7 first, as torchvision does, so the parameter count never
depends on the image size. Kernels carry torchvision's module paths: ``features.N`` (N counts
convolutions, ReLUs and pools in order), ``avgpool``, ``classifier.N``; each is its own layer
for :func:`~autotm_core.ir.layer_of`, as in torchvision's ``nn.Sequential``.
"""

from __future__ import annotations

import itertools

from autotm_core.ir import Graph
from autotm_core.zoo import layers as L
from autotm_core.zoo.tape import Optimizer, Tape, check_positive

VGG19_BLOCKS: tuple[tuple[int, ...], ...] = (
    (64, 64), (128, 128), (256, 256, 256, 256), (512, 512, 512, 512), (512, 512, 512, 512),
)
"""Output channels of each convolution, block by block (a 2x2 max pool ends each block)."""

VGG416_REPEATS = (80, 81, 82, 83, 83)
"""Repeats of the channel-keeping convolution in each block of AutoTM's VGG-416."""


def vgg416_blocks() -> tuple[tuple[int, ...], ...]:
    """AutoTM's VGG-416 (its artifact's ``vgg416()``): 413 convolutions + 3 dense layers.

    Block 1: conv 3->64, 80 x conv 64->64, conv 64->128; block 2: 81 x 128->128,
    conv 128->256; block 3: 82 x 256->256, conv 256->512; blocks 4 and 5:
    83 x 512->512. Each block ends with a 2x2 max pool.
    """
    r1, r2, r3, r4, r5 = VGG416_REPEATS
    return (
        (64,) * (1 + r1) + (128,),
        (128,) * r2 + (256,),
        (256,) * r3 + (512,),
        (512,) * r4,
        (512,) * r5,
    )


def vgg(blocks: tuple[tuple[int, ...], ...], *, name: str, batch: int = 1, image: int = 224,
        classes: int = 1000, dropout: bool = False, dtype: str = "float32",
        optimizer: Optimizer | str = Optimizer.MOMENTUM) -> Graph:
    """One training step of a VGG with the given convolution ``blocks``."""
    check_positive(name, batch=batch, image=image, classes=classes)
    t = Tape(name, dtype=dtype)
    x, labels = L.image_inputs(t, batch=batch, image=image)
    feature = itertools.count()  # torchvision's index in ``features``
    for b, block in enumerate(blocks, start=1):
        for i, channels in enumerate(block, start=1):
            with t.module(f"features.{next(feature)}"):
                x = L.conv2d(t, x, channels, 3, padding=1, bias=True, name=f"block{b}.conv{i}")
            with t.module(f"features.{next(feature)}"):
                x = L.relu(t, x, name=f"block{b}.relu{i}")
        with t.module(f"features.{next(feature)}"):
            x = L.max_pool2d(t, x, 2, name=f"block{b}.pool")
    if x.shape[2:] != (7, 7):
        with t.module("avgpool"):
            x = L.adaptive_avg_pool2d(t, x, 7, name="avgpool")
    x = L.view(x, (batch, x.numel // batch))
    for i, width in enumerate((4096, 4096), start=1):
        with t.module(f"classifier.{3 * i - 3}"):
            x = L.linear(t, x, width, name=f"fc{i}")
        with t.module(f"classifier.{3 * i - 2}"):
            x = L.relu(t, x, name=f"fc{i}.relu")
        if dropout:
            with t.module(f"classifier.{3 * i - 1}"):
                x = L.dropout(t, x, name=f"fc{i}.dropout")
    with t.module("classifier.6"):
        logits = L.linear(t, x, classes, name="fc3")
    t.loss(logits, labels)
    return t.finish(optimizer=optimizer)
