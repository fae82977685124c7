"""Streaming and pointer-chasing kernels for calibration, compiled with numba.

Each takes only NumPy arrays and releases the GIL; a plain-NumPy reference of
each is :mod:`autotm_core.calibration.reference`, tested equal.

- :func:`stream_read`: the sum of every word, modulo ``2**64`` (four
  independent accumulators, so the loop is bound by memory, not by the adds);
- :func:`stream_write`: every word set to ``value``;
- :func:`chase`: ``steps`` loads, each at the index the previous one read
  (a random cycle defeats prefetchers: each step is one memory latency).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def stream_read(words):  # pragma: no cover - compiled
    """Sum of ``words`` (``uint64``) modulo ``2**64``."""
    n = words.shape[0]
    s0 = s1 = s2 = s3 = np.uint64(0)
    quads = n // 4
    for i in range(quads):
        j = 4 * i
        s0 += words[j]
        s1 += words[j + 1]
        s2 += words[j + 2]
        s3 += words[j + 3]
    for j in range(4 * quads, n):
        s0 += words[j]
    return s0 + s1 + s2 + s3


@numba.njit(cache=True, nogil=True)
def stream_write(words, value):  # pragma: no cover - compiled
    """Set every word of ``words`` to ``value``."""
    for j in range(words.shape[0]):
        words[j] = value


@numba.njit(cache=True, nogil=True)
def chase(following, start, steps):  # pragma: no cover - compiled
    """Index reached after ``steps`` hops ``i -> following[i]`` from ``start``."""
    i = start
    for _ in range(steps):
        i = following[i]
    return i
