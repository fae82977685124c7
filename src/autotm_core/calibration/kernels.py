"""The pointer-chasing kernel for calibration, compiled with numba.

It takes only NumPy arrays and releases the GIL; its plain-NumPy reference is
:mod:`autotm_core.calibration.reference`, tested equal. Read and write
bandwidth are measured with the replay kernels themselves
(:mod:`autotm_core.executor.replay`), so they are the rates replayed kernels get.

- :func:`chase`: ``steps`` loads, each at the index the previous one read
  (a random cycle defeats prefetchers: each step is one memory latency).
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def chase(following, start, steps):  # pragma: no cover - compiled
    """Index reached after ``steps`` hops ``i -> following[i]`` from ``start``."""
    i = start
    for _ in range(steps):
        i = following[i]
    return i
