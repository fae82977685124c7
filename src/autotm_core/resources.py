"""What planning a graph will take from this machine, estimated before anything big is built.

The figures are per kernel, measured on the 2-core development machine (docs/cli.md
gives the commands): building a graph takes about :data:`GRAPH_BYTES_PER_KERNEL`
(``example:chain-200000``, 600,001 kernels, 1.65 GB peak), and the ILP model of a
training graph about :data:`MODEL_BYTES_PER_KERNEL` of its formulation
(``benchmarks/bench_large.py``, synchronous: ``chain:50000`` 4,404 MiB peak for 49,999
kernels, ``chain:100000`` 7,261 MiB for 100,000; the asynchronous model has about five
times the nonzeros). They are estimates: a graph whose kernels
touch many tensors needs more. :func:`check_fits_machine` refuses what would not fit
in the memory available (or is larger than :data:`DEFAULT_MAX_KERNELS`) in one line,
before the work starts; ``insist`` skips the check.
"""

from __future__ import annotations

from pathlib import Path

from autotm_core.errors import ResourceError
from autotm_core.units import format_bytes

GRAPH_BYTES_PER_KERNEL = 3_000
"""Memory to build a graph, per kernel (IR records, liveness)."""
MODEL_BYTES_PER_KERNEL = {"static": 90_000, "synchronous": 90_000, "asynchronous": 450_000}
"""Memory to build and solve each formulation's model, per kernel."""
DEFAULT_MAX_KERNELS = 2_000_000
"""Graphs above this many kernels are refused without ``insist``, whatever the memory."""
USABLE_FRACTION = 0.8
"""Share of the available memory an estimate may take."""


def available_memory_nbytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` (Linux), or ``None`` where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_fits_machine(what: str, kernels: int, nbytes: int, *, insist: bool = False,
                       hint: str = "", max_kernels: int | None = DEFAULT_MAX_KERNELS) -> None:
    """One :class:`ResourceError` when ``what`` (``kernels`` kernels, about ``nbytes`` of memory)
    is too big for this machine or ``max_kernels``; nothing with ``insist``."""
    if insist:
        return
    available = available_memory_nbytes()
    more = f"; {hint}" if hint else ""
    if available is not None and nbytes > available * USABLE_FRACTION:
        raise ResourceError(
            f"{what} ({kernels:,} kernels) would take about {format_bytes(nbytes)} of memory; "
            f"this machine has {format_bytes(available)} available",
            hint=f"plan a smaller graph{more}" + (", or give --insist to try anyway"
                                                   if max_kernels is not None else ""))
    if max_kernels is not None and kernels > max_kernels:
        raise ResourceError(
            f"{what} has {kernels:,} kernels, more than the {max_kernels:,} autotm-core "
            f"plans by default (about {format_bytes(nbytes)} of memory)",
            hint=f"plan a smaller graph{more}, or give --insist to try anyway")


def check_model_fits(graph_name: str, kernels: int, formulation: str, *,
                     insist: bool = False) -> None:
    """:func:`check_fits_machine` for the ``formulation`` model of a graph."""
    nbytes = kernels * MODEL_BYTES_PER_KERNEL.get(formulation, max(MODEL_BYTES_PER_KERNEL.values()))
    hint = ("a simpler formulation (--formulation synchronous)"
            if formulation == "asynchronous" else "")
    check_fits_machine(f"the {formulation} model of {graph_name}", kernels, nbytes,
                       insist=insist, hint=hint, max_kernels=DEFAULT_MAX_KERNELS)
