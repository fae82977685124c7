"""Plain-NumPy reference of the calibration kernel (:mod:`autotm_core.calibration.kernels`).

Also builds the random cycle the latency measurement chases, in NumPy (no loop).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]


def chase(following: I64, start: int, steps: int) -> int:
    """Index reached after ``steps`` hops ``i -> following[i]`` from ``start``."""
    i = start
    for _ in range(steps):
        i = int(following[i])
    return i


def write_cycle(following: I64, *, stride: int, seed: int = 0) -> int:
    """Make one random cycle through every ``stride``-th slot of ``following``; return its start.

    Slot ``i * stride`` holds the slot that follows it: with ``stride`` words to a
    cache line, every hop lands on another line, in an order no prefetcher guesses.
    """
    slots = len(following) // stride
    order = np.random.default_rng(seed).permutation(slots).astype(np.int64) * stride
    following[order] = np.roll(order, -1)
    return int(order[0])
