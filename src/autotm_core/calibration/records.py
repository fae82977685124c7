"""Records of a calibration: figures per NUMA node, per copy direction, the compute rate and the
fixed time per kernel of the kind of kernels calibrated for."""

from __future__ import annotations

import attrs

from autotm_core.calibration.rates import REPLAY, ReplayRates


@attrs.frozen(slots=True)
class NodeFigures:
    """What one NUMA node's memory does for one thread."""

    node: int
    """The NUMA node."""
    memory_nbytes: int | None
    """Its memory (``MemTotal``), when the kernel says."""
    read_bytes_per_second: float
    """Streaming read bandwidth (median of the repetitions)."""
    write_bytes_per_second: float
    """Streaming write bandwidth (median of the repetitions)."""
    latency_seconds: float
    """Time of one dependent load over a random cycle far larger than the caches."""


@attrs.frozen(slots=True)
class LinkFigures:
    """Copy bandwidth from one node's memory to another's (or to itself)."""

    source: int
    """Node copied from."""
    target: int
    """Node copied to."""
    sync_bytes_per_second: float
    """Bytes copied per second by one thread doing nothing else (as a synchronous move)."""
    async_bytes_per_second: float
    """Bytes copied per second on a second thread while the first computes."""


@attrs.frozen(slots=True)
class Calibration:
    """Everything measured by :func:`~autotm_core.calibration.calibrate.calibrate`."""

    nodes: tuple[NodeFigures, ...]
    """One per allowed NUMA node, in node order."""
    links: tuple[LinkFigures, ...]
    """One per ordered pair of nodes, a node to itself included."""
    flops_per_second: float
    """Compute rate of the kernels calibrated for (:attr:`kernels`): the replay kernels'
    compute rounds (one thread; a division counts 4 FLOPs), or a frontend's matrix
    multiply."""
    buffer_nbytes: int
    """Size of every buffer streamed or chased."""
    last_level_cache_nbytes: int | None
    """Largest cache this machine reports, which the buffers exceed."""
    repeat: int
    """Timed repetitions of each measurement (the median is kept)."""
    chase_steps: int
    """Dependent loads per latency measurement."""
    cpu: str
    """Processor and thread count, for the file's description."""
    seconds: float
    """Wall time of the calibration."""
    kernels: str = REPLAY
    """The kind of kernels whose compute rate, bandwidths and fixed time were measured
    (``calibrate --kernels``: ``replay``, or a frontend such as ``torch``)."""
    method: str = ReplayRates.method
    """How that kind's figures were measured, in words."""
    kernel_overhead_seconds: float = 0.0
    """Fixed seconds per kernel of that kind in the executor's loop (0: not measured)."""
    overhead_kernels: int = 0
    """Kernels of the step the fixed time was measured on (0: none was run)."""
