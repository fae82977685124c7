"""Cache keys and measurements for the profiler tests, importable by writer subprocesses."""

from __future__ import annotations

from autotm_core.profiler.cache import CacheKey
from autotm_core.profiler.context import current_context
from autotm_core.profiler.records import Measurement
from autotm_core.profiler.signature import KernelSignature, TensorSignature


def key(i: int) -> CacheKey:
    """A distinct key per ``i``: a kernel reading ``i + 1`` KiB and writing 4 KiB."""
    signature = KernelSignature(
        "relu", (TensorSignature(1024 * (i + 1), None, "float32", "r"),
                 TensorSignature(4096, (1024,), "float32", "w")), 1024.0, 0)
    return CacheKey(signature, (0, 0), 0, current_context())


def measurement(seconds: float, repeat: int = 3) -> Measurement:
    """A measurement whose median is ``seconds``."""
    return Measurement(median_seconds=seconds, min_seconds=seconds / 2, iqr_seconds=0.0,
                       repeat=repeat)
