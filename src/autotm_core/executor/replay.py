"""Replay kernels, compiled with numba: read inputs, write outputs, compute for the FLOPs.

Memory is one byte array ``space`` (every arena, see
:mod:`autotm_core.executor.arena`) and ``words``, the same memory as
little-endian ``uint64``. A kernel is a run of rows of ``ops`` (``int64``,
columns :data:`ADDR`, :data:`NBYTES`, :data:`SEED`, :data:`KIND`), reads first:

- a read row folds the *digest* of its bytes into the kernel's hash ``h``;
- a write row fills its bytes with the stream of ``mix(h ^ seed)``, so every
  output is a deterministic function of the bytes the kernel read and of the
  output's name: a skipped copy or a wrong address changes the bytes
  downstream;
- a scratch row (the kernel's workspace) is filled then read back; what it read
  is returned apart, never folded into ``h`` (a workspace holds no data);
- ``iterations`` rounds of four dependent multiply-adds (8 floating-point
  operations a round) stand for the kernel's compute. They are spread over the
  traffic: after each cache line read or written (a *chunk*; a row with no
  aligned whole word is one chunk) run ``iterations // chunks`` rounds, one
  more for the first ``iterations % chunks`` chunks. The core overlaps the
  rounds' dependent multiply-adds with the loads and stores around them, so a
  kernel takes about ``max(compute, memory)``, as the roofline predicts, not
  their sum. The bytes do not depend on the rounds.

The digest of ``n`` bytes, taken as zero-padded little-endian words ``w_i``, is
``n * K3 + sum_i mixd(w_i + (i + 1) * K1)`` modulo ``2**64``; the fill stream
is ``s_i = f(base + (i + 1) * K1)``, its last word cut to the tail bytes. A
plain-NumPy reference of all of it is :mod:`autotm_core.executor.reference`,
tested byte-equal.
"""

from __future__ import annotations

import numba
import numpy as np

ADDR, NBYTES, SEED, KIND = 0, 1, 2, 3
"""Columns of an ``ops`` row."""
READ, WRITE, SCRATCH = 0, 1, 2
"""Kinds of an ``ops`` row."""
FLOPS_PER_ITERATION = 8
"""Floating-point operations of one compute round."""
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
_A, _B = 0.999999, 1e-7


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


@numba.njit(cache=True, nogil=True, inline="always")
def _rounds(count, x0, x1, x2, x3):  # pragma: no cover - compiled
    """``count`` compute rounds: four dependent multiply-adds each."""
    for _ in range(count):
        x0 = x0 * _A + _B
        x1 = x1 * _A + _B
        x2 = x2 * _A + _B
        x3 = x3 * _A + _B
    return x0, x1, x2, x3


@numba.njit(cache=True, nogil=True, inline="always")
def _dose(chunk, share, extra, x0, x1, x2, x3):  # pragma: no cover - compiled
    """The rounds of chunk number ``chunk``: ``share``, one more for the first ``extra`` chunks."""
    count = share + 1 if chunk < extra else share
    return _rounds(count, x0, x1, x2, x3)


@numba.njit(cache=True, nogil=True, inline="always")
def _chunks(addr, n):  # pragma: no cover - compiled
    """Chunks of a row: its aligned whole words, a line at a time; at least one."""
    full = n // 8 if addr % 8 == 0 else 0
    return (full + LINE_WORDS - 1) // LINE_WORDS if full > 0 else 1


@numba.njit(cache=True, nogil=True)
def _digest_computing(space, words, addr, n, share, extra, chunk,
                      x0, x1, x2, x3):  # pragma: no cover - compiled
    """:func:`digest` of the ``n`` bytes at ``addr``, each chunk followed by its rounds.

    Returns the digest, the next chunk's number and the compute state.
    """
    total = np.uint64(n) * K3
    full = n // 8 if addr % 8 == 0 else 0
    w0 = addr // 8
    index = K1  # (i + 1) * K1, kept as a running sum: no multiply per word
    for start in range(0, full, LINE_WORDS):
        end = min(start + LINE_WORDS, full)
        if end - start == LINE_WORDS:
            for i in range(start, start + LINE_WORDS):
                x = words[w0 + i] + index
                total += (x ^ (x >> _S31)) * K2
                index += K1
        else:
            for i in range(start, end):
                x = words[w0 + i] + index
                total += (x ^ (x >> _S31)) * K2
                index += K1
        x0, x1, x2, x3 = _dose(chunk, share, extra, x0, x1, x2, x3)
        chunk += 1
    for i in range(full, (n + 7) // 8):
        x = _load(space, words, addr, i, n) + np.uint64(i + 1) * K1
        total += (x ^ (x >> _S31)) * K2
    if full == 0:
        x0, x1, x2, x3 = _dose(chunk, share, extra, x0, x1, x2, x3)
        chunk += 1
    return total, chunk, x0, x1, x2, x3


@numba.njit(cache=True, nogil=True)
def _fill_computing(space, words, addr, n, base, share, extra, chunk,
                    x0, x1, x2, x3):  # pragma: no cover - compiled
    """:func:`fill` of the ``n`` bytes at ``addr``, each chunk followed by its rounds."""
    full = n // 8 if addr % 8 == 0 else 0
    w0 = addr // 8
    x = base
    for start in range(0, full, LINE_WORDS):
        end = min(start + LINE_WORDS, full)
        if end - start == LINE_WORDS:
            for i in range(start, start + LINE_WORDS):
                x += K1  # base + (i + 1) * K1, no multiply per word
                words[w0 + i] = x ^ (x >> _S29)
        else:
            for i in range(start, end):
                x += K1
                words[w0 + i] = x ^ (x >> _S29)
        x0, x1, x2, x3 = _dose(chunk, share, extra, x0, x1, x2, x3)
        chunk += 1
    for i in range(full, (n + 7) // 8):
        x = base + np.uint64(i + 1) * K1
        x = x ^ (x >> _S29)
        for b in range(min(8, n - 8 * i)):
            space[addr + 8 * i + b] = np.uint8((x >> (_EIGHT * np.uint64(b))) & _BYTE)
    if full == 0:
        x0, x1, x2, x3 = _dose(chunk, share, extra, x0, x1, x2, x3)
        chunk += 1
    return chunk, x0, x1, x2, x3


@numba.njit(cache=True, nogil=True)
def run_kernel(space, words, ops, lo, hi, iterations):  # pragma: no cover - compiled
    """Run rows ``lo..hi-1`` of ``ops`` and ``iterations`` compute rounds, interleaved.

    After each chunk (a line) of traffic run its share of the rounds (see the
    module doc), so the compute overlaps the memory traffic. Returns the kernel's
    hash (of what it read), the digest of its scratch memory and the compute
    result (returned so that the compute is not elided).
    """
    chunks = 0
    for r in range(lo, hi):
        count = _chunks(ops[r, 0], ops[r, 1])
        chunks += 2 * count if ops[r, 3] == 2 else count
    share = iterations // chunks if chunks > 0 else 0
    extra = iterations - share * chunks if chunks > 0 else 0
    chunk = 0
    x0, x1, x2, x3 = 1.0, 2.0, 3.0, 4.0
    h = HASH_START
    scratch = _ZERO
    for r in range(lo, hi):
        kind = ops[r, 3]
        addr = ops[r, 0]
        n = ops[r, 1]
        if kind == 0:
            d, chunk, x0, x1, x2, x3 = _digest_computing(
                space, words, addr, n, share, extra, chunk, x0, x1, x2, x3)
            h = mix(h ^ d)
        else:
            base = mix(h ^ np.uint64(ops[r, 2]))
            chunk, x0, x1, x2, x3 = _fill_computing(
                space, words, addr, n, base, share, extra, chunk, x0, x1, x2, x3)
            if kind == 2:
                d, chunk, x0, x1, x2, x3 = _digest_computing(
                    space, words, addr, n, share, extra, chunk, x0, x1, x2, x3)
                scratch ^= d
    if chunks == 0:
        x0, x1, x2, x3 = _rounds(iterations, x0, x1, x2, x3)
    return h, scratch, x0 + x1 + x2 + x3


@numba.njit(cache=True, nogil=True)
def initialise(space, words, ops):  # pragma: no cover - compiled
    """Fill each row's bytes with the stream of ``mix(INIT_SEED ^ seed)`` (data before the step)."""
    for r in range(ops.shape[0]):
        fill(space, words, ops[r, 0], ops[r, 1], mix(INIT_SEED ^ np.uint64(ops[r, 2])))


@numba.njit(cache=True, nogil=True)
def digests(space, words, ops):  # pragma: no cover - compiled
    """Digest of each row's bytes."""
    out = np.empty(ops.shape[0], dtype=np.uint64)
    for r in range(ops.shape[0]):
        out[r] = digest(space, words, ops[r, 0], ops[r, 1])
    return out


@numba.njit(cache=True, nogil=True)
def copy_bytes(space, source, target, n):  # pragma: no cover - compiled
    """Copy ``n`` bytes from byte address ``source`` to ``target`` (ranges do not overlap)."""
    space[target : target + n] = space[source : source + n]
