"""autotm-torch: capture PyTorch training steps and inference passes as autotm-core graphs.

Use it through autotm-core's plugin registry::

    from autotm_core import get_frontend
    graph = get_frontend("torch").load(model, example_inputs, loss=loss_fn, optimizer="adam")

or from the command line: ``python -m autotm_core import torch package.module:factory -o g.json``.
Importing this package does not import torch.
"""

from importlib.metadata import PackageNotFoundError, version

from autotm_torch.frontend import TorchFrontend, capture_graph

try:
    __version__ = version("autotm-torch")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["TorchFrontend", "__version__", "capture_graph"]
