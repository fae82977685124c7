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
    :attr:`autotm_core.memory.MemorySystem.link_channels`). Each stream runs its copies one
    after the other in issue order (by kernel, then plan order), only while kernels run
    (boundaries pause it), and a running kernel's own traffic on it goes first: during
    kernel ``k`` it carries ``k``'s traffic, then its copies. Kernel ``k + 1`` (or the end
    of the step) starts once kernel ``k`` has run, its traffic is done, and every copy with
    ``until == k + 1`` is done (with the copies issued before it on its stream). Returns
    ``(sync_seconds, async_seconds, effective_seconds, pool_nbytes, pair_nbytes,
    pair_counts)``; see :class:`autotm_core.simulation.simulate.Simulation` for each.
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

    # Each stream's copies in issue order (by kernel, then plan order): two counting sorts,
    # by kernel, then (stably) by stream. ``queue[head[c]:tail[c]]`` are the copies issued
    # on stream ``c`` and not done; ``left[c]`` what remains of the first of them.
    n_moves = move_kernel.shape[0]
    seconds = np.zeros(n_moves)
    channel = np.full(n_moves, -1, dtype=np.int64)
    at = np.zeros(n_kernels + 1, dtype=np.int64)
    for m in range(n_moves):
        if move_async[m]:
            s, t = move_source[m], move_target[m]
            seconds[m] = move_nbytes[m] / async_bytes_per_second[s, t]
            channel[m] = link_channel[s, t]
            at[move_kernel[m] + 1] += 1
    for k in range(n_kernels):
        at[k + 1] += at[k]
    issued = np.empty(at[n_kernels], dtype=np.int64)
    for m in range(n_moves):
        if move_async[m]:
            issued[at[move_kernel[m]]] = m
            at[move_kernel[m]] += 1
    head = np.zeros(n_channels + 1, dtype=np.int64)
    for m in issued:
        head[channel[m] + 1] += 1
    for c in range(n_channels):
        head[c + 1] += head[c]
    ends = head[1:].copy()
    queue = np.empty(issued.shape[0], dtype=np.int64)
    fill = head[:n_channels].copy()
    for m in issued:
        queue[fill[channel[m]]] = m
        fill[channel[m]] += 1
    tail = head[:n_channels].copy()
    left = np.zeros(n_channels)
    for c in range(n_channels):
        if head[c] < ends[c]:
            left[c] = seconds[queue[head[c]]]
    last_due = np.zeros(n_channels, dtype=np.int64)

    effective_seconds = np.zeros(n_kernels)
    for k in range(n_kernels):
        end = kernel_seconds[k]
        for c in range(n_channels):
            while tail[c] < ends[c] and move_kernel[queue[tail[c]]] == k:
                tail[c] += 1
            # the kernel's own traffic first, then the stream's copies up to the last one
            # due before the next kernel
            last_due[c] = -1
            for i in range(head[c], tail[c]):
                if move_until[queue[i]] <= k + 1:
                    last_due[c] = i
            busy = channel_seconds[k, c]
            if last_due[c] >= 0:
                busy += left[c]
                for i in range(head[c] + 1, last_due[c] + 1):
                    busy += seconds[queue[i]]
            end = max(end, busy)
        for c in range(n_channels):  # what the stream does once the kernel's traffic is done
            spare = end - channel_seconds[k, c]
            while head[c] < tail[c] and (head[c] <= last_due[c] or left[c] <= spare):
                spare -= left[c]
                head[c] += 1
                if head[c] < ends[c]:
                    left[c] = seconds[queue[head[c]]]
            if head[c] < tail[c] and spare > 0:
                left[c] -= spare
        effective_seconds[k] = end

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
