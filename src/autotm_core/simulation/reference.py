"""The simulator's loop in plain Python: the reference :mod:`.kernels` is tested against.

Slow and plainly right: one pass over the moves for their times and traffic, one over the
kernels with each copy stream's queue, one over the residencies, nothing vectorised or
compiled. Same arguments and results as
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

    # Each copy stream runs its work in issue order, on the clock of running kernels: a
    # kernel's own traffic on it, then the copies issued when the kernel starts. A kernel
    # ends once it has run and its traffic is done; the next one starts once every copy it
    # must see complete (until == its position) is done.
    traffic = channel_seconds.tolist()
    free = [0.0] * len(traffic[0]) if traffic else []  # when each stream is free
    done: dict[int, list[float]] = {}  # until -> when each copy due then completes
    effective_seconds = []
    clock = 0.0
    for k in range(n_kernels):
        queued = [f - clock if f > clock else 0.0 for f in free]  # from the kernel's start
        ends = [kernel_seconds[k]]
        for c, seconds in enumerate(traffic[k]):
            if seconds > 0:
                queued[c] += seconds
                ends.append(queued[c])
        for c, seconds, until in issued[k]:
            queued[c] += seconds
            if until == k + 1:
                ends.append(queued[c])
            else:
                done.setdefault(until, []).append(clock + queued[c])
        ends += [when - clock for when in done.pop(k + 1, [])]
        effective_seconds.append(max(ends))
        free = [clock + q for q in queued]
        clock += effective_seconds[-1]

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
