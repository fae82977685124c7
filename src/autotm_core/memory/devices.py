"""Which kind of device a memory system plans for, and whether a graph was captured for it.

A frontend such as torch records the device type it traced for
(:attr:`~autotm_core.ir.Graph.captured_for`); the ops it chose there (attention kernels,
fused or foreach optimizers, convolution algorithms and their workspace) may not be the
ones the same model runs on another kind of device. :func:`capture_mismatch` says so.
"""

from __future__ import annotations

from autotm_core.ir import Graph
from autotm_core.memory.system import MemorySystem


def device_kind(system: MemorySystem) -> str:
    """The kind of device ``system``'s fastest pool belongs to, as torch names device types:
    ``"cuda"`` for a pool on ``cuda:0``, ``"cpu"`` for host memory (a pool with no device,
    or a host or NUMA one)."""
    device = (system.fast.device or "").strip().lower()
    kind = device.split(":", 1)[0]
    return "cpu" if not kind or kind.startswith("host") or kind == "numa" else kind


def capture_mismatch(graph: Graph, system: MemorySystem) -> str | None:
    """A sentence when ``graph`` was captured for another kind of device than ``system``
    plans for, naming what may differ; ``None`` when they agree or either is unknown."""
    captured = graph.captured_for.strip().lower()
    if not captured:
        return None
    planned = device_kind(system)
    if captured == planned:
        return None
    return (f"graph {graph.name!r} was captured for {captured} but is planned on "
            f"{system.name} ({planned}): its kernels may not be the ones it runs there "
            "(attention kernels, fused or foreach optimizers, convolution algorithms and "
            f"their workspace differ by device); capture it for {planned} (the torch "
            f"frontend's --option device={planned}) to plan what runs there")


__all__ = ["capture_mismatch", "device_kind"]
