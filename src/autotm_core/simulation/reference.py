"""The simulator's loop in plain Python: the reference :mod:`.kernels` is tested against.

Slow and plainly right: one pass over the moves for their times and traffic, one over the
kernels with each copy stream's queue (a list, sorted by until), one over the residencies,
nothing vectorised or compiled. Same arguments and results as
:func:`autotm_core.simulation.kernels.simulate_arrays`.
"""

from __future__ import annotations

import numpy as np


def simulate_arrays(kernel_seconds, workspace_nbytes,
                    res_pool, res_first, res_last, res_nbytes,
                    move_kernel, move_source, move_target, move_async, move_until, move_nbytes,
                    sync_bytes_per_second, async_bytes_per_second, link_channel,
                    channel_seconds):
    """See :func:`autotm_core.simulation.kernels.simulate_arrays`."""
    n_kernels = len(kernel_seconds)
    n_pools = len(sync_bytes_per_second)
    sync_seconds = [0.0] * n_kernels
    async_seconds = [0.0] * n_kernels
    pair_nbytes = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    pair_counts = np.zeros((n_pools, n_pools, 2), dtype=np.int64)
    issued: list[list[tuple[int, float, int]]] = [[] for _ in range(n_kernels)]
    for k, s, t, asynchronous, until, nbytes in zip(
        move_kernel.tolist(), move_source.tolist(), move_target.tolist(), move_async.tolist(),
        move_until.tolist(), move_nbytes.tolist(), strict=True,
    ):
        if asynchronous:
            seconds = nbytes / async_bytes_per_second[s][t]
            async_seconds[k] += seconds
            issued[k].append((int(link_channel[s][t]), seconds, until))  # in plan order
        else:
            sync_seconds[k] += nbytes / sync_bytes_per_second[s][t]
        pair_nbytes[s, t, int(asynchronous)] += nbytes
        pair_counts[s, t, int(asynchronous)] += 1

    # Each copy stream runs its copies in flight earliest ``until`` first (ties in issue order),
    # only while kernels run, a running kernel's own traffic on it first. A kernel lasts
    # until it has run, its traffic is done and every copy the next kernel must see complete
    # is done; then the stream spends what is left of the kernel's time on its other copies.
    traffic = channel_seconds.tolist()
    streams: list[list[list[float]]] = [[] for _ in range(channel_seconds.shape[1])]
    effective_seconds = []
    order = 0
    for k in range(n_kernels):
        for c, seconds, until in issued[k]:
            streams[c].append([seconds, until, order])  # [what is left of it, until, order]
            order += 1
        lasts = [kernel_seconds[k]]
        for c, queue in enumerate(streams):
            queue.sort(key=lambda copy: (copy[1], copy[2]))
            lasts.append(traffic[k][c] + sum(left for left, until, _ in queue if until <= k + 1))
        effective_seconds.append(max(lasts))
        for c, queue in enumerate(streams):
            spare = effective_seconds[-1] - traffic[k][c]
            while queue and (queue[0][1] <= k + 1 or queue[0][0] <= spare):
                spare -= queue.pop(0)[0]
            if queue and spare > 0:
                queue[0][0] -= spare

    # Each residency adds its bytes where it begins and takes them back after it ends; a
    # running sum over kernels gives what each pool holds.
    change = [[0] * (n_kernels + 1) for _ in range(n_pools)]
    for p, first, last, nbytes in zip(
        res_pool.tolist(), res_first.tolist(), res_last.tolist(), res_nbytes.tolist(), strict=True
    ):
        change[p][first] += nbytes
        change[p][last + 1] -= nbytes
    pool_nbytes = [[0] * n_kernels for _ in range(n_pools)]
    for p in range(n_pools):
        held = 0
        for k in range(n_kernels):
            held += change[p][k]
            pool_nbytes[p][k] = held
    for k, nbytes in enumerate(workspace_nbytes.tolist()):
        pool_nbytes[0][k] += nbytes
    return (
        np.array(sync_seconds, dtype=np.float64),
        np.array(async_seconds, dtype=np.float64),
        np.array(effective_seconds, dtype=np.float64),
        np.array(pool_nbytes, dtype=np.int64).reshape(n_pools, n_kernels),
        pair_nbytes,
        pair_counts,
    )
