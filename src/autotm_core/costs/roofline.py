"""The analytic roofline: a kernel's time as max(compute, memory traffic) plus latencies.

For kernel ``k`` with its tensors ``t`` in pools ``p(t)``::

    compute  = flops[k] / flops_per_second
    memory   = sum_t  read[k, t]  * nbytes[t] / read_bytes_per_second[p(t)]
                    + write[k, t] * nbytes[t] / write_bytes_per_second[p(t)]
             + workspace_nbytes[k] * (1 / read_bytes_per_second[0] + 1 / write_bytes_per_second[0])
    latency  = sum_t latency_seconds[p(t)]
    seconds  = max(compute, memory) + latency + kernel_overhead_seconds
             = max(compute + latency + overhead, memory + latency + overhead)

An in-place tensor (both input and output) is read and written. The workspace is
read and written once in the fastest pool. ``kernel_overhead_seconds`` is the
system's fixed time per kernel (a framework's dispatch; 0 unless calibrated). The
second line is the separable form: term 0 is ``compute + latency + overhead``,
term 1 is ``memory + latency + overhead``, both affine in the pool of each tensor.
"""

from __future__ import annotations

import numpy as np

from autotm_core.costs.flops import FlopsEstimate, estimate_flops
from autotm_core.costs.model import SeparableCosts
from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

COMPUTE_TERM = 0
"""Index of the ``compute + latency`` term of :class:`SeparableCosts` made here."""
MEMORY_TERM = 1
"""Index of the ``memory + latency`` term."""


def roofline_costs(
    graph: Graph, system: MemorySystem, *, flops: FlopsEstimate | None = None
) -> SeparableCosts:
    """The roofline costs of ``graph`` on ``system`` in the separable form (2 terms).

    ``flops`` is the estimate to use (e.g. one already shown to the user);
    :func:`estimate_flops` is called when it is not given.
    """
    live = graph.liveness
    if flops is None:
        flops = estimate_flops(graph)
    if len(flops.flops) != live.n_kernels:
        raise UsageError(
            f"the FLOPs estimate has {len(flops.flops)} kernels; graph {graph.name!r} has "
            f"{live.n_kernels}",
            hint="estimate the FLOPs of this graph with estimate_flops(graph)",
        )
    pools = system.pools
    seconds_per_read_byte = np.array([1.0 / p.read_bytes_per_second for p in pools])
    seconds_per_write_byte = np.array([1.0 / p.write_bytes_per_second for p in pools])
    latency = np.array([p.latency_seconds for p in pools], dtype=np.float64)

    nbytes = live.nbytes[live.kernel_tensors].astype(np.float64)
    read_nbytes = np.where(live.kernel_reads, nbytes, 0.0)
    write_nbytes = np.where(live.kernel_writes, nbytes, 0.0)
    n_entries, n_pools = len(nbytes), len(pools)

    coefficients = np.empty((n_entries, 2, n_pools), dtype=np.float64)
    coefficients[:, COMPUTE_TERM, :] = latency
    coefficients[:, MEMORY_TERM, :] = (
        np.outer(read_nbytes, seconds_per_read_byte)
        + np.outer(write_nbytes, seconds_per_write_byte)
        + latency
    )
    constants = np.empty((live.n_kernels, 2), dtype=np.float64)
    constants[:, COMPUTE_TERM] = flops.flops / system.flops_per_second
    constants[:, MEMORY_TERM] = live.workspace_nbytes * (
        seconds_per_read_byte[0] + seconds_per_write_byte[0]
    )
    constants += system.kernel_overhead_seconds
    return SeparableCosts(
        n_pools=n_pools,
        kernel_ptr=live.kernel_ptr,
        constants=constants,
        coefficients=coefficients,
    )
