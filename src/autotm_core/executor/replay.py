"""Replay kernels, compiled with numba: read inputs, write outputs, compute for the FLOPs.

Memory is one byte array ``space`` (every arena, see
:mod:`autotm_core.executor.arena`) and ``words``, the same memory as
little-endian ``uint64``. A kernel is a run of rows of ``ops`` (``int64``,
columns and kinds of :mod:`~autotm_core.executor.rows`, re-exported here), reads first:

- a read row folds the *digest* of its bytes into the kernel's hash ``h``;
- a write row fills its bytes with the stream of ``mix(h ^ seed)``, so every
  output is a deterministic function of the bytes the kernel read and of the
  output's name: a skipped copy or a wrong address changes the bytes
  downstream;
- a scratch row (the kernel's workspace) is filled then read back; what it read
  is returned apart, never folded into ``h`` (a workspace holds no data);
- ``iterations`` *rounds*, each one dependent double-precision division
  (``x = C / x``), stand for the kernel's compute. They are spread evenly over
  the traffic: after each cache line read or written (a *chunk*; a row with no
  aligned whole word is one chunk) run ``iterations // chunks`` rounds, and one
  more after a chunk whenever the running remainder reaches a whole round
  (Bresenham), so that no stretch of the kernel is all compute or all traffic.
  A chain of divisions keeps the divider busy but issues one instruction per
  round: the loads, stores and integer work of the traffic run alongside it, so
  a kernel takes about ``max(compute, memory)``, as the roofline predicts, not
  their sum. The bytes do not depend on the rounds.

Whole cache lines are digested and filled as rows of a 2-D view of ``words``:
the indices are known non-negative, so no word pays numba's negative-index test
and each line compiles to straight-line code (about twice the traffic rate
of indexing ``words`` directly).

The digest of ``n`` bytes, taken as zero-padded little-endian words ``w_i``, is
``n * K3 + sum_i mixd(w_i + (i + 1) * K1)`` modulo ``2**64``; the fill stream
is ``s_i = f(base + (i + 1) * K1)``, its last word cut to the tail bytes. A
plain-NumPy reference of all of it is :mod:`autotm_core.executor.reference`,
tested byte-equal.
"""

from __future__ import annotations

import numba
import numpy as np

from autotm_core.executor.rows import ADDR, KIND, NBYTES, READ, SCRATCH, SEED
from autotm_core.executor.rows import WRITE as WRITE  # the third row kind, named with the others

LINE_WORDS = 8
"""Words of a 64-byte cache line."""

K1 = np.uint64(0x9E3779B97F4A7C15)
K2 = np.uint64(0xBF58476D1CE4E5B9)
K3 = np.uint64(0x94D049BB133111EB)
HASH_START = np.uint64(0x6A09E667F3BCC908)
INIT_SEED = np.uint64(0x510E527FADE682D1)
_S27, _S29, _S30, _S31 = np.uint64(27), np.uint64(29), np.uint64(30), np.uint64(31)
_SEVEN, _EIGHT, _ONE, _ZERO = np.uint64(7), np.uint64(8), np.uint64(1), np.uint64(0)
_BYTE = np.uint64(0xFF)
_C = 1.0000001
"""Dividend of the compute rounds: ``x`` alternates between 1 and ``_C``, always normal (the
functions running rounds use numba's ``error_model="numpy"``: no zero test per division)."""


@numba.njit(cache=True, nogil=True, inline="always")
def mix(x):  # pragma: no cover - compiled
    """splitmix64's finaliser."""
    x = (x ^ (x >> _S30)) * K2
    x = (x ^ (x >> _S27)) * K3
    return x ^ (x >> _S31)


@numba.njit(cache=True, nogil=True)
def _load(space, words, addr, i, n):  # pragma: no cover - compiled
    """Word ``i`` of the ``n`` bytes at ``addr``, zero-padded past the end."""
    start = addr + 8 * i
    if addr % 8 == 0 and 8 * (i + 1) <= n:
        return words[start // 8]
    w = _ZERO
    for b in range(min(8, n - 8 * i)):
        w |= np.uint64(space[start + b]) << (_EIGHT * np.uint64(b))
    return w


@numba.njit(cache=True, nogil=True)
def digest(space, words, addr, n):  # pragma: no cover - compiled
    """Digest of the ``n`` bytes at byte address ``addr`` (see the module doc)."""
    total = np.uint64(n) * K3
    full = n // 8
    if addr % 8 == 0:
        w0 = addr // 8
        for i in range(full):
            x = words[w0 + i] + np.uint64(i + 1) * K1
            total += (x ^ (x >> _S31)) * K2
        start = full
    else:
        start = 0
    for i in range(start, (n + 7) // 8):
        x = _load(space, words, addr, i, n) + np.uint64(i + 1) * K1
        total += (x ^ (x >> _S31)) * K2
    return total


@numba.njit(cache=True, nogil=True)
def fill(space, words, addr, n, base):  # pragma: no cover - compiled
    """Write the stream of ``base`` over the ``n`` bytes at ``addr``."""
    full = n // 8
    if addr % 8 == 0:
        w0 = addr // 8
        for i in range(full):
            x = base + np.uint64(i + 1) * K1
            words[w0 + i] = x ^ (x >> _S29)
        start = full
    else:
        start = 0
    for i in range(start, (n + 7) // 8):
        x = base + np.uint64(i + 1) * K1
        x = x ^ (x >> _S29)
        for b in range(min(8, n - 8 * i)):
            space[addr + 8 * i + b] = np.uint8((x >> (_EIGHT * np.uint64(b))) & _BYTE)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _rounds(count, x):  # pragma: no cover - compiled
    """``count`` compute rounds: one dependent division each."""
    for _ in range(count):
        x = _C / x
    return x


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _dose(carry, share, extra, chunks, x):  # pragma: no cover - compiled
    """The rounds after one chunk: ``share``, one more when ``carry + extra`` reaches ``chunks``.

    Over ``chunks`` calls from ``carry = 0`` that is ``share * chunks + extra`` rounds,
    the extra ones evenly spaced. Returns the new carry, the rounds run and ``x``.
    """
    carry += extra
    more = 1 if carry >= chunks else 0
    carry -= more * chunks
    return carry, share + more, _rounds(share + more, x)


@numba.njit(cache=True, nogil=True, inline="always")
def _chunks(addr, n):  # pragma: no cover - compiled
    """Chunks of a row: its aligned whole words, a line at a time; at least one."""
    full = n // 8 if addr % 8 == 0 else 0
    return (full + LINE_WORDS - 1) // LINE_WORDS if full > 0 else 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _digest_computing(space, words, addr, n, dose, x):  # pragma: no cover - compiled
    """:func:`digest` of the ``n`` bytes at ``addr``, each chunk followed by its rounds.

    ``dose`` is ``(carry, share, extra, chunks, rounds run)`` (see :func:`_dose`).
    Returns the digest, the new ``dose`` and ``x``.
    """
    carry, share, extra, chunks, done = dose
    total = np.uint64(n) * K3
    full = n // 8 if addr % 8 == 0 else 0
    lines = full // LINE_WORDS
    grid = words[addr // 8 : addr // 8 + lines * LINE_WORDS].reshape(lines, LINE_WORDS)
    for c in range(lines):
        index = np.uint64(c * LINE_WORDS + 1) * K1  # (i + 1) * K1 for the line's first word
        line = _ZERO
        for j in range(LINE_WORDS):
            x_j = grid[c, j] + index + np.uint64(j) * K1
            line += (x_j ^ (x_j >> _S31)) * K2
        total += line
        carry, count, x = _dose(carry, share, extra, chunks, x)
        done += count
    for i in range(lines * LINE_WORDS, (n + 7) // 8):
        w = _load(space, words, addr, i, n) + np.uint64(i + 1) * K1
        total += (w ^ (w >> _S31)) * K2
    if lines * LINE_WORDS < full or full == 0:
        carry, count, x = _dose(carry, share, extra, chunks, x)
        done += count
    return total, (carry, share, extra, chunks, done), x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fill_computing(space, words, addr, n, base, dose, x):  # pragma: no cover - compiled
    """:func:`fill` of the ``n`` bytes at ``addr``, each chunk followed by its rounds.

    Returns the new ``dose`` and ``x`` (see :func:`_digest_computing`).
    """
    carry, share, extra, chunks, done = dose
    full = n // 8 if addr % 8 == 0 else 0
    lines = full // LINE_WORDS
    grid = words[addr // 8 : addr // 8 + lines * LINE_WORDS].reshape(lines, LINE_WORDS)
    for c in range(lines):
        start = base + np.uint64(c * LINE_WORDS + 1) * K1
        for j in range(LINE_WORDS):
            w = start + np.uint64(j) * K1
            grid[c, j] = w ^ (w >> _S29)
        carry, count, x = _dose(carry, share, extra, chunks, x)
        done += count
    w0 = addr // 8
    for i in range(lines * LINE_WORDS, full):
        w = base + np.uint64(i + 1) * K1
        words[w0 + i] = w ^ (w >> _S29)
    for i in range(full, (n + 7) // 8):
        w = base + np.uint64(i + 1) * K1
        w = w ^ (w >> _S29)
        for b in range(min(8, n - 8 * i)):
            space[addr + 8 * i + b] = np.uint8((w >> (_EIGHT * np.uint64(b))) & _BYTE)
    if lines * LINE_WORDS < full or full == 0:
        carry, count, x = _dose(carry, share, extra, chunks, x)
        done += count
    return (carry, share, extra, chunks, done), x


@numba.njit(cache=True, nogil=True, error_model="numpy")
def run_kernel(space, words, ops, lo, hi, iterations):  # pragma: no cover - compiled
    """Run rows ``lo..hi-1`` of ``ops`` and ``iterations`` compute rounds, interleaved.

    After each chunk (a line) of traffic run its share of the rounds (see the
    module doc), so the compute overlaps the memory traffic. Returns the kernel's
    hash (of what it read), the digest of its scratch memory, the number of
    rounds run and the compute result (returned so that the compute is not elided).
    """
    chunks = 0
    for r in range(lo, hi):
        count = _chunks(ops[r, ADDR], ops[r, NBYTES])
        chunks += 2 * count if ops[r, KIND] == SCRATCH else count
    share = iterations // chunks if chunks > 0 else 0
    extra = iterations - share * chunks if chunks > 0 else 0
    dose = (0, share, extra, chunks, 0)
    x = 1.0
    h = HASH_START
    scratch = _ZERO
    for r in range(lo, hi):
        kind = ops[r, KIND]
        addr = ops[r, ADDR]
        n = ops[r, NBYTES]
        if kind == READ:
            d, dose, x = _digest_computing(space, words, addr, n, dose, x)
            h = mix(h ^ d)
        else:
            base = mix(h ^ np.uint64(ops[r, SEED]))
            dose, x = _fill_computing(space, words, addr, n, base, dose, x)
            if kind == SCRATCH:
                d, dose, x = _digest_computing(space, words, addr, n, dose, x)
                scratch ^= d
    done = dose[4]
    if chunks == 0:
        x = _rounds(iterations, x)
        done = iterations
    return h, scratch, done, x


@numba.njit(cache=True, nogil=True)
def initialise(space, words, ops):  # pragma: no cover - compiled
    """Fill each row's bytes with the stream of ``mix(INIT_SEED ^ seed)`` (data before the step)."""
    for r in range(ops.shape[0]):
        fill(space, words, ops[r, ADDR], ops[r, NBYTES], mix(INIT_SEED ^ np.uint64(ops[r, SEED])))


@numba.njit(cache=True, nogil=True)
def digests(space, words, ops):  # pragma: no cover - compiled
    """Digest of each row's bytes."""
    out = np.empty(ops.shape[0], dtype=np.uint64)
    for r in range(ops.shape[0]):
        out[r] = digest(space, words, ops[r, ADDR], ops[r, NBYTES])
    return out
