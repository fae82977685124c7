"""The simulator's hot loop, compiled by numba; it takes and returns NumPy arrays only.

:mod:`autotm_core.simulation.reference` holds the same computation in plain
Python; tests check that both agree. Import this module lazily: importing numba
costs a few tenths of a second.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def simulate_arrays(
    kernel_seconds,
    workspace_nbytes,
    res_pool,
    res_first,
    res_last,
    res_nbytes,
    move_kernel,
    move_source,
    move_target,
    move_async,
    move_nbytes,
    sync_bytes_per_second,
    async_bytes_per_second,
    link_channel,
    channel_seconds,
):
    """Per-kernel move times, per-pool bytes per kernel, and bytes and counts per pool pair.

    ``link_channel[s, t]`` is the channel of the link's overlapping copies and
    ``channel_seconds[k, c]`` the kernel's own traffic on channel ``c`` (see
    :attr:`autotm_core.memory.MemorySystem.link_channels`); the array is filled in with
    the copies' times. Returns ``(sync_seconds, async_seconds, effective_seconds,
    pool_nbytes, pair_nbytes, pair_counts)``; see
    :class:`autotm_core.simulation.simulate.Simulation` for each.
    """
    n_kernels = kernel_seconds.shape[0]
    n_pools = sync_bytes_per_second.shape[0]
    sync_seconds = np.zeros(n_kernels)
    async_seconds = np.zeros(n_kernels)
    pair_nbytes = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    pair_counts = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    for m in range(move_kernel.shape[0]):
        k, s, t, nbytes = move_kernel[m], move_source[m], move_target[m], move_nbytes[m]
        if move_async[m]:
            seconds = nbytes / async_bytes_per_second[s, t]
            async_seconds[k] += seconds
            channel_seconds[k, link_channel[s, t]] += seconds
            pair_nbytes[s, t, 1] += nbytes
            pair_counts[s, t, 1] += 1
        else:
            sync_seconds[k] += nbytes / sync_bytes_per_second[s, t]
            pair_nbytes[s, t, 0] += nbytes
            pair_counts[s, t, 0] += 1
    effective_seconds = kernel_seconds.copy()
    for k in range(n_kernels):
        for c in range(channel_seconds.shape[1]):
            effective_seconds[k] = max(effective_seconds[k], channel_seconds[k, c])

    delta = np.zeros((n_pools, n_kernels + 1), dtype=np.int64)
    for r in range(res_pool.shape[0]):
        delta[res_pool[r], res_first[r]] += res_nbytes[r]
        delta[res_pool[r], res_last[r] + 1] -= res_nbytes[r]
    pool_nbytes = np.zeros((n_pools, n_kernels), dtype=np.int64)
    for p in range(n_pools):
        running = 0
        for k in range(n_kernels):
            running += delta[p, k]
            pool_nbytes[p, k] = running
    for k in range(n_kernels):
        pool_nbytes[0, k] += workspace_nbytes[k]
    return sync_seconds, async_seconds, effective_seconds, pool_nbytes, pair_nbytes, pair_counts
