"""The fast-memory limit a planner works under, from ``--fast-capacity`` or ``--ratio``.

Every planner and command takes the limit the same way: either a size
(``"16GiB"``, ``"512MiB"``, a number of bytes) or a PMM:DRAM ratio written as
the paper writes it (``"4:1"``), which AutoTM turns into a limit of
``peak live bytes / (ratio + 1)``. Giving neither means "the system's own
capacity".
"""

from __future__ import annotations

from autotm_core.errors import CapacityError, UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.units import fast_capacity_for_ratio, format_bytes, parse_ratio, parse_size


def fast_capacity(
    graph: Graph, *, nbytes: str | int | None = None, ratio: str | None = None
) -> int | None:
    """The fast-pool limit in bytes that ``nbytes`` or ``ratio`` asks for (``None``: neither given).

    ``ratio`` is PMM:DRAM, e.g. ``"4:1"``; the limit is the graph's peak live
    bytes (tensors plus workspace) divided by ``ratio + 1``.
    """
    if nbytes is not None and ratio is not None:
        raise UsageError(
            "give either a fast-memory capacity or a PMM:DRAM ratio, not both",
            hint="e.g. --fast-capacity 16GiB, or --ratio 4:1",
        )
    if nbytes is not None:
        return parse_size(nbytes)
    if ratio is not None:
        return fast_capacity_for_ratio(graph.liveness.peak_nbytes, parse_ratio(ratio))
    return None


def with_fast_capacity(system: MemorySystem, capacity_nbytes: int | None) -> MemorySystem:
    """``system`` with its fastest pool limited to ``capacity_nbytes`` (unchanged when ``None``)."""
    if capacity_nbytes is None:
        return system
    return system.with_capacity(system.fast.name, capacity_nbytes)


def check_workspace_fits(graph: Graph, capacity_nbytes: int | None, *, pool: str) -> None:
    """Raise :class:`CapacityError` when some kernel's workspace alone overflows the fast pool.

    A kernel's workspace lives in the fastest pool while it runs, whatever the
    plan does with the tensors, so no plan exists below the largest workspace.
    """
    if capacity_nbytes is None or not graph.kernels:
        return
    workspace = graph.liveness.workspace_nbytes
    k = int(workspace.argmax())
    if int(workspace[k]) > capacity_nbytes:
        raise CapacityError(
            f"kernel {graph.kernels[k].name!r} needs {format_bytes(int(workspace[k]))} of "
            f"workspace in pool {pool!r}, which holds only {format_bytes(capacity_nbytes)}",
            hint="give the fast pool at least the largest kernel workspace "
            "(raise --fast-capacity or lower the --ratio)",
        )
