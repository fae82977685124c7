"""``calibrate --kernels torch``: this machine's rates as PyTorch's own kernels get them.

``run --kernels torch:SPEC`` runs the captured ATen kernels, whose matrix
multiplies go to a BLAS at tens to hundreds of GFLOP/s and whose every call
costs microseconds of dispatch; the replay kernels a plain ``calibrate``
measures compute at about 1 GFLOP/s and have no such fixed cost. So for a
system whose roofline predicts the torch kernels, autotm-core's calibration asks
this module (:class:`TorchRates`, through
:meth:`autotm_torch.frontend.TorchFrontend.kernel_rates`) for:

- the compute rate: ``torch.mm`` with ``out=`` of square float32 matrices of
  several sizes, ``2 n^3`` FLOPs over the median time of each, the median over
  the sizes (the roofline has one rate for every kernel);
- read and write bandwidth: a ``sum`` and a ``fill_`` of each NUMA-bound buffer
  seen as float32 (buffers beyond the last-level cache);
- the fixed time per kernel: a small training step (a two-layer MLP with Adam,
  90 kernels) that autotm-core runs through the executor's loop as ``run`` does.

Everything runs on torch's threads (``torch.get_num_threads()``), timed in wall
time as ``run`` times kernels: calibrate and run with the same
``OMP_NUM_THREADS``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import torch

if TYPE_CHECKING:
    from autotm_core.executor import KernelRunner
    from autotm_core.ir import Graph

QUICK_SIZES = (128, 256, 512)
"""Matrix sizes of ``--quick``."""
FULL_SIZES = (128, 256, 512, 1024)
"""Matrix sizes of a full calibration."""
FLOPS_PER_SAMPLE = 200_000_000
"""Floating-point operations per timed sample of one size (a few milliseconds)."""


def _median_seconds(action: Callable[[], object], repeat: int) -> float:
    action()  # untimed: pages touched, BLAS threads started
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        action()
        samples.append((time.perf_counter_ns() - start) * 1e-9)
    return float(np.median(samples))


class TorchRates:
    """PyTorch's kernels on this machine, measured for a calibration (see the module doc)."""

    name = "torch"

    def __init__(self) -> None:
        threads = torch.get_num_threads()
        self.method = (
            f"torch {torch.__version__}'s own kernels on {threads} thread"
            f"{'s' if threads != 1 else ''} (torch.get_num_threads(); run with the same "
            f"OMP_NUM_THREADS): compute rate the median over n x n float32 matrix multiplies "
            f"(torch.mm with out=, n from {QUICK_SIZES[0]} to {QUICK_SIZES[-1]}, or "
            f"{FULL_SIZES[-1]} without --quick) of 2 n^3 "
            f"FLOPs over their time; read by a sum and write by a fill_ of each buffer as "
            f"float32; wall time")

    def compute_rate(self, *, quick: bool, repeat: int) -> float:
        """FLOPs per second of a float32 matrix multiply, the median over the sizes."""
        rates = []
        for n in QUICK_SIZES if quick else FULL_SIZES:
            a, b = torch.randn(n, n), torch.randn(n, n)
            c = torch.empty(n, n)
            count = max(1, FLOPS_PER_SAMPLE // (2 * n**3))

            def multiply(a: torch.Tensor = a, b: torch.Tensor = b, c: torch.Tensor = c,
                         count: int = count) -> None:
                for _ in range(count):
                    torch.mm(a, b, out=c)

            rates.append(2 * n**3 * count / _median_seconds(multiply, repeat))
        return float(np.median(rates))

    def read_rate(self, buffer: npt.NDArray[np.uint8], *, repeat: int) -> float:
        """Bytes per second of a float32 sum over ``buffer``."""
        values = torch.from_numpy(buffer).view(torch.float32)
        return buffer.nbytes / _median_seconds(values.sum, repeat)

    def write_rate(self, buffer: npt.NDArray[np.uint8], *, repeat: int) -> float:
        """Bytes per second of a float32 fill of ``buffer``."""
        values = torch.from_numpy(buffer).view(torch.float32)
        return buffer.nbytes / _median_seconds(lambda: values.fill_(1.0), repeat)

    def overhead_step(self) -> tuple[Graph, KernelRunner]:
        """A two-layer MLP's training step with Adam (batch 4, widths 8, 16, 4) and the real
        kernels that run it (checked against one eager step, as ``run`` does)."""
        from torch import nn

        from autotm_torch.frontend import _graph, make_request
        from autotm_torch.plan_run import CapturedKernels

        with torch.random.fork_rng():  # the caller's random numbers stay as they were
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
            inputs, targets = torch.randn(4, 8), torch.randint(0, 4, (4,))
        request = make_request(model, (inputs,), loss=nn.CrossEntropyLoss(),
                               targets=(targets,), optimizer="adam", mode=None,
                               name="calibration step", device=None)
        return _graph(request), CapturedKernels(request)


__all__ = ["FULL_SIZES", "QUICK_SIZES", "TorchRates"]
