"""Example training graphs built in pure Python.

``mlp``
    A four-layer perceptron, batch 64, trained with SGD with momentum: forward,
    loss, backward and update, about 30 kernels.
``cnn``
    A small convolutional network (3 convolutions, batch-norm, ReLU, pooling and
    a classifier) trained with Adam, batch 32.
``chain-N``
    A synthetic training step of ``N`` layers (``3 N + 1`` kernels): every
    forward activation lives until its backward use, as in real training. Its
    sizes vary from layer to layer deterministically; used by benchmarks.

The kernels of ``mlp`` and ``cnn`` carry module paths (``layers.0.fc``, ``blocks.1.conv``,
``fc``): one layer per hidden layer or convolution block for
:func:`autotm_core.ir.layer_of`. ``chain-N`` carries none.
"""

from __future__ import annotations

from collections.abc import Callable

from autotm_core.errors import UsageError
from autotm_core.examples.networks import cnn, mlp, training_chain
from autotm_core.ir import Graph

EXAMPLES: dict[str, Callable[[], Graph]] = {"mlp": mlp, "cnn": cnn}
"""Named examples (``chain-N`` is parameterised and built on demand)."""


def build_example(name: str, **options: object) -> Graph:
    """The example called ``name``."""
    if name in EXAMPLES:
        return EXAMPLES[name]()
    if name.startswith("chain-"):
        suffix = name.removeprefix("chain-")
        if suffix.isdigit() and int(suffix) > 0:
            from autotm_core.resources import GRAPH_BYTES_PER_KERNEL, check_fits_machine

            kernels = 3 * int(suffix) + 1
            # building it is the first thing that would run out of memory
            check_fits_machine(f"example:{name}", kernels, kernels * GRAPH_BYTES_PER_KERNEL,
                               max_kernels=None)
            return training_chain(int(suffix))
    raise UsageError(
        f"no example graph called {name!r}",
        hint=f"use one of {', '.join(EXAMPLES)}, or chain-N with a number of layers N",
    )
