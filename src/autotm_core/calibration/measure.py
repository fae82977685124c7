"""The measurements of a calibration, each on buffers bound to one NUMA node.

Buffers come from the executor's :class:`~autotm_core.executor.arena.Space`:
bound with ``mbind``, pre-faulted and verified, so page faults stay out of
every timing. Each measurement runs once untimed, then ``repeat`` times; the
median is kept. Times are the measuring thread's own CPU time
(``time.thread_time_ns``: on a core, stalls on memory included), so other
processes taking the core away do not lower the figures.

- read / write: the replay kernels' own memory loops
  (:func:`~autotm_core.executor.replay.run_kernel` with one read row, or one
  write row, over a whole buffer and no compute), so the rates are the ones
  replayed kernels read and write at (the roofline predicts them with these);
- synchronous copy: from one buffer to another with the copy the executor's
  synchronous moves of that size use
  (:func:`~autotm_core.executor.copy.copy_now`: streaming, for buffers beyond
  half the last-level cache);
- asynchronous copy: the same copy on the executor's
  :class:`~autotm_core.executor.copy.CopyThread` while this thread runs the
  replay kernels' compute loop for longer than the copy takes; the rate is the
  bytes over the copy thread's own time;
- latency: :func:`~autotm_core.calibration.kernels.chase` over a random cycle
  through every cache line of a buffer;
- compute: the replay kernels' compute rounds (a chain of divisions)
  (:func:`~autotm_core.executor.replay.run_kernel` with no memory rows), so
  the rate is the one replayed kernels compute at.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from autotm_core.executor.rows import FLOPS_PER_ITERATION, READ, WRITE

Bytes = npt.NDArray[np.uint8]

LINE_WORDS = 8
"""Words of a 64-byte cache line: the chase visits one slot per line."""


def _median_seconds(action: Callable[[], object], repeat: int) -> float:
    action()  # untimed: code loaded, TLB warm
    samples = []
    for _ in range(repeat):
        start = time.thread_time_ns()
        action()
        samples.append((time.thread_time_ns() - start) * 1e-9)
    return float(np.median(samples))


def _replay_rate(buffer: Bytes, kind: int, repeat: int) -> float:
    from autotm_core.executor import replay

    ops = np.array([[0, buffer.nbytes, 1, kind]], dtype=np.int64)
    words = buffer.view(np.uint64)
    return buffer.nbytes / _median_seconds(
        lambda: replay.run_kernel(buffer, words, ops, 0, 1, 0), repeat)


def read_rate(buffer: Bytes, *, repeat: int) -> float:
    """Bytes per second a replay kernel reads (digests) ``buffer`` at."""
    return _replay_rate(buffer, READ, repeat)


def write_rate(buffer: Bytes, *, repeat: int) -> float:
    """Bytes per second a replay kernel writes (fills) ``buffer`` at."""
    return _replay_rate(buffer, WRITE, repeat)


def sync_copy_rate(source: Bytes, target: Bytes, *, repeat: int) -> float:
    """Bytes per second of a synchronous move from ``source`` to ``target``."""
    from autotm_core.executor.copy import copy_now

    return source.nbytes / _median_seconds(lambda: copy_now(source, target), repeat)


def async_copy_rate(source: Bytes, target: Bytes, *, repeat: int, flops_per_second: float,
                    sync_bytes_per_second: float) -> float:
    """Bytes per second of the copy thread copying while this thread computes."""
    from autotm_core.executor import replay
    from autotm_core.executor.copy import CopyThread

    empty = np.zeros((0, 4), dtype=np.int64)
    memory, words = source, source.view(np.uint64)
    # compute for about three times the copy's unhindered time, so it overlaps the whole copy
    iterations = int(3 * source.nbytes / sync_bytes_per_second * flops_per_second
                     / FLOPS_PER_ITERATION) + 1
    rates = []
    with CopyThread() as copier:
        for rep in range(repeat + 1):
            before = copier.copy_ns
            ticket = copier.submit(source, target)
            replay.run_kernel(memory, words, empty, 0, 0, iterations)
            copier.wait(ticket)
            if rep:  # the first is the untimed warm-up
                rates.append(source.nbytes / ((copier.copy_ns - before) * 1e-9))
    return float(np.median(rates))


def latency(buffer: Bytes, *, steps: int, repeat: int) -> float:
    """Seconds of one dependent load over a random cycle through every cache line of ``buffer``."""
    from autotm_core.calibration.kernels import chase
    from autotm_core.calibration.reference import write_cycle

    following = buffer.view(np.int64)
    start = write_cycle(following, stride=LINE_WORDS)
    return _median_seconds(lambda: chase(following, start, steps), repeat) / steps


def compute_rate(*, iterations: int, repeat: int) -> float:
    """Floating-point operations per second of the replay kernels' compute loop."""
    from autotm_core.executor import replay

    empty = np.zeros((0, 4), dtype=np.int64)
    memory = np.zeros(8, dtype=np.uint8)
    words = memory.view(np.uint64)
    seconds = _median_seconds(
        lambda: replay.run_kernel(memory, words, empty, 0, 0, iterations), repeat)
    return iterations * FLOPS_PER_ITERATION / seconds
