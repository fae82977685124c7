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
    move_until,
    move_nbytes,
    sync_bytes_per_second,
    async_bytes_per_second,
    link_channel,
    channel_seconds,
):
    """Per-kernel move times, per-pool bytes per kernel, and bytes and counts per pool pair.

    ``link_channel[s, t]`` is the stream of the link's overlapping copies and
    ``channel_seconds[k, c]`` the kernel's own traffic on stream ``c`` (see
    :attr:`autotm_core.memory.MemorySystem.link_channels`). Each stream runs its work in
    issue order on the clock of running kernels (boundaries pause it): when kernel ``k``
    starts, its own traffic, then the copies issued at ``k`` in plan order, queue behind
    what the stream still has in flight. Kernel ``k`` ends when it has run and its traffic
    is done, and kernel ``k + 1`` (or the step's end) waits for every copy with
    ``until == k + 1``. Returns ``(sync_seconds, async_seconds, effective_seconds,
    pool_nbytes, pair_nbytes, pair_counts)``; see
    :class:`autotm_core.simulation.simulate.Simulation` for each.
    """
    n_kernels = kernel_seconds.shape[0]
    n_pools = sync_bytes_per_second.shape[0]
    n_channels = channel_seconds.shape[1]
    sync_seconds = np.zeros(n_kernels)
    async_seconds = np.zeros(n_kernels)
    pair_nbytes = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    pair_counts = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    for m in range(move_kernel.shape[0]):
        k, s, t, nbytes = move_kernel[m], move_source[m], move_target[m], move_nbytes[m]
        if move_async[m]:
            async_seconds[k] += nbytes / async_bytes_per_second[s, t]
            pair_nbytes[s, t, 1] += nbytes
            pair_counts[s, t, 1] += 1
        else:
            sync_seconds[k] += nbytes / sync_bytes_per_second[s, t]
            pair_nbytes[s, t, 0] += nbytes
            pair_counts[s, t, 0] += 1

    # Times are on the clock of running kernels. ``busy[c]``: when stream ``c`` is free,
    # from the start of the current kernel; ``due[u]``: when the copies with ``until == u``
    # issued before the current kernel are done.
    # the moves in issue order (by kernel, then plan order): a counting sort
    start = np.zeros(n_kernels + 1, dtype=np.int64)
    for m in range(move_kernel.shape[0]):
        start[move_kernel[m] + 1] += 1
    for k in range(n_kernels):
        start[k + 1] += start[k]
    order = np.empty(move_kernel.shape[0], dtype=np.int64)
    for m in range(move_kernel.shape[0]):
        order[start[move_kernel[m]]] = m
        start[move_kernel[m]] += 1
    free = np.zeros(n_channels)
    due = np.zeros(n_kernels + 1)
    busy = np.zeros(n_channels)
    effective_seconds = np.zeros(n_kernels)
    clock = 0.0
    p = 0
    for k in range(n_kernels):
        end = kernel_seconds[k]
        for c in range(n_channels):
            busy[c] = free[c] - clock if free[c] > clock else 0.0
            if channel_seconds[k, c] > 0:
                busy[c] += channel_seconds[k, c]
                end = max(end, busy[c])
        while p < order.shape[0] and move_kernel[order[p]] == k:
            m = order[p]
            p += 1
            if not move_async[m]:
                continue
            s, t = move_source[m], move_target[m]
            c = link_channel[s, t]
            busy[c] += move_nbytes[m] / async_bytes_per_second[s, t]
            if move_until[m] == k + 1:
                end = max(end, busy[c])
            else:
                due[move_until[m]] = max(due[move_until[m]], clock + busy[c])
        end = max(end, due[k + 1] - clock)
        for c in range(n_channels):
            free[c] = clock + busy[c]
        effective_seconds[k] = end
        clock += end

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
