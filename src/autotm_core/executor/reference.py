"""Plain-NumPy reference of the replay kernels (:mod:`autotm_core.executor.replay`).

Same definitions, vectorised over words instead of looped: the tests hold the
compiled kernels byte-equal to these. Slow for large tensors; for tests only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from autotm_core.executor.replay import _C, HASH_START, INIT_SEED, K1, K2, K3

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]


def mix(x: np.uint64) -> np.uint64:
    """splitmix64's finaliser."""
    with np.errstate(over="ignore"):
        x = np.uint64((x ^ (x >> np.uint64(30))) * K2)
        x = np.uint64((x ^ (x >> np.uint64(27))) * K3)
        return np.uint64(x ^ (x >> np.uint64(31)))


def _index(count: int) -> U64:
    return np.arange(1, count + 1, dtype=np.uint64) * K1


def digest(data: U8) -> np.uint64:
    """Digest of ``data``: its zero-padded little-endian words, mixed and summed."""
    n = len(data)
    padded = np.zeros(-(-n // 8) * 8, dtype=np.uint8)
    padded[:n] = data
    with np.errstate(over="ignore"):
        x = padded.view("<u8") + _index(len(padded) // 8)
        terms = (x ^ (x >> np.uint64(31))) * K2
        return np.uint64(np.uint64(n) * K3 + np.sum(terms, dtype=np.uint64))


def stream(n: int, base: np.uint64) -> U8:
    """The ``n`` bytes :func:`~autotm_core.executor.replay.fill` writes for ``base``."""
    x = np.uint64(base) + _index(-(-n // 8))
    return (x ^ (x >> np.uint64(29))).astype("<u8").view(np.uint8)[:n].copy()


def initial_bytes(n: int, seed: int) -> U8:
    """Contents of a tensor of ``n`` bytes before the step."""
    return stream(n, mix(INIT_SEED ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))


def run_kernel(
    space: U8, ops: npt.NDArray[np.int64], lo: int, hi: int
) -> tuple[np.uint64, np.uint64]:
    """Rows ``lo..hi-1`` of ``ops`` on ``space``; returns (hash, scratch digest), no compute."""
    h = HASH_START
    scratch = np.uint64(0)
    for addr, n, seed, kind in ops[lo:hi].tolist():
        if kind == 0:
            h = mix(h ^ digest(space[addr : addr + n]))
            continue
        space[addr : addr + n] = stream(n, mix(h ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
        if kind == 2:
            scratch ^= digest(space[addr : addr + n])
    return h, scratch


def compute_result(iterations: int) -> float:
    """What the replay kernel's ``iterations`` compute rounds return, however interleaved."""
    x = 1.0
    for _ in range(iterations):
        x = _C / x
    return x
