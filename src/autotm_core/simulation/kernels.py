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
    :attr:`autotm_core.memory.MemorySystem.link_channels`). Each stream runs its copies in
    flight earliest ``until`` first (ties in issue order: by kernel, then plan order), a copy
    issued at a kernel's start taking over from one due later, only while kernels run
    (boundaries pause it), and a running kernel's own traffic on it goes first: during
    kernel ``k`` it carries ``k``'s traffic, then its copies. Kernel ``k + 1`` (or the end
    of the step) starts once kernel ``k`` has run, its traffic is done, and every copy with
    ``until == k + 1`` is done. Returns
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
    # by kernel, then (stably) by stream. Stream ``c``'s copies are ``queue[head[c]:ends[c]]``;
    # ``queue[head[c]:issue[c]]`` were issued; the ``count[c]`` in flight sit at
    # ``flying[head[c]:head[c] + count[c]]``, ``left[m]`` what remains of copy ``m``.
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
    position = np.zeros(n_moves, dtype=np.int64)  # in issue order, over all streams
    fill = head[:n_channels].copy()
    for i in range(issued.shape[0]):
        m = issued[i]
        position[m] = i
        queue[fill[channel[m]]] = m
        fill[channel[m]] += 1
    issue = head[:n_channels].copy()
    flying = np.empty(issued.shape[0], dtype=np.int64)
    count = np.zeros(n_channels, dtype=np.int64)
    left = seconds.copy()
    rank = n_moves + 1

    effective_seconds = np.zeros(n_kernels)
    for k in range(n_kernels):
        end = kernel_seconds[k]
        for c in range(n_channels):
            arrived = issue[c]
            while issue[c] < ends[c] and move_kernel[queue[issue[c]]] == k:
                flying[head[c] + count[c]] = queue[issue[c]]
                count[c] += 1
                issue[c] += 1
            # earliest until first (then issue order): the copies due before the next kernel
            # lead, after the kernel's own traffic (the order holds until a copy is issued)
            lo, hi = head[c], head[c] + count[c]
            if issue[c] > arrived and hi - lo > 1:
                now = flying[lo:hi].copy()
                keys = move_until[now] * rank + position[now]
                flying[lo:hi] = now[np.argsort(keys)]
            busy = channel_seconds[k, c]
            for i in range(lo, hi):
                if move_until[flying[i]] > k + 1:
                    break
                busy += left[flying[i]]
            end = max(end, busy)
        for c in range(n_channels):  # what the stream does once the kernel's traffic is done
            spare = end - channel_seconds[k, c]
            lo, hi = head[c], head[c] + count[c]
            kept = lo
            for i in range(lo, hi):
                m = flying[i]
                if move_until[m] <= k + 1 or left[m] <= spare:
                    spare -= left[m]
                    left[m] = 0.0
                else:
                    if spare > 0:
                        left[m] -= spare
                        spare = 0.0
                    flying[kept] = m
                    kept += 1
            count[c] = kept - lo
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
