"""The hot loop of the 2LM model: a set-associative LRU cache over a stream of line accesses.

The stream is a sequence of *entries*, one per (kernel, tensor) access: lines
``first_line[e] .. first_line[e] + n_lines[e] - 1``, read and/or written. For
each entry the loop counts hits, read misses (the line is filled from slow
memory), write misses (a write-only access allocates the line without a fill:
the kernel overwrites it) and write-backs (a dirty line evicted to make room).
Sets are ``line % n_sets`` with ``ways`` lines each; ``ways == 1`` is the
direct-mapped cache of Intel's Memory Mode.

:func:`run_cache` is compiled by numba (``cache=True``) and keeps its state in
arrays so a warm-up pass can precede the measured one; :func:`reference_cache`
is a plain-Python statement of the same model (an LRU ordered dict per set),
tested equal to it. This module imports numba: import it lazily.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numba
import numpy as np

from autotm_core.arrays import BoolArray, IntArray


def new_state(n_sets: int, ways: int) -> tuple[IntArray, BoolArray, IntArray]:
    """An empty cache: tags (-1 = empty), dirty bits and LRU stamps, ``n_sets * ways`` each."""
    size = n_sets * ways
    tags = np.full(size, -1, dtype=np.int64)
    return tags, np.zeros(size, dtype=np.bool_), np.zeros(size, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def run_cache(  # pragma: no cover - compiled
    first_line, n_lines, reads, writes, n_sets, ways, tags, dirty, stamps, clock
):
    """Run the stream through the cache state (mutated); per-entry counts and the new clock.

    Returns ``(hits, read_misses, write_misses, writebacks, clock)``.
    """
    n = len(first_line)
    hits = np.zeros(n, dtype=np.int64)
    read_misses = np.zeros(n, dtype=np.int64)
    write_misses = np.zeros(n, dtype=np.int64)
    writebacks = np.zeros(n, dtype=np.int64)
    for e in range(n):
        read = reads[e]
        write = writes[e]
        h = 0
        rm = 0
        wm = 0
        wb = 0
        start = first_line[e]
        for line in range(start, start + n_lines[e]):
            base = (line % n_sets) * ways
            clock += 1
            found = -1
            for j in range(base, base + ways):
                if tags[j] == line:
                    found = j
                    break
            if found >= 0:
                h += 1
                stamps[found] = clock
                if write:
                    dirty[found] = True
                continue
            victim = base
            for j in range(base + 1, base + ways):
                if stamps[j] < stamps[victim]:
                    victim = j
            if tags[victim] >= 0 and dirty[victim]:
                wb += 1
            tags[victim] = line
            stamps[victim] = clock
            dirty[victim] = write
            if read:
                rm += 1
            else:
                wm += 1
        hits[e] = h
        read_misses[e] = rm
        write_misses[e] = wm
        writebacks[e] = wb
    return hits, read_misses, write_misses, writebacks, clock


def reference_cache(
    first_line: Sequence[int],
    n_lines: Sequence[int],
    reads: Sequence[bool],
    writes: Sequence[bool],
    n_sets: int,
    ways: int,
    sets: list[OrderedDict[int, bool]] | None = None,
) -> tuple[list[int], list[int], list[int], list[int], list[OrderedDict[int, bool]]]:
    """The same model in plain Python; ``sets`` (line -> dirty, least recent first) is the state.

    Returns per-entry ``(hits, read_misses, write_misses, writebacks)`` and the state.
    """
    if sets is None:
        sets = [OrderedDict() for _ in range(n_sets)]
    hits, read_misses, write_misses, writebacks = [], [], [], []
    for start, count, read, write in zip(first_line, n_lines, reads, writes, strict=True):
        h = rm = wm = wb = 0
        for line in range(int(start), int(start) + int(count)):
            lines = sets[line % n_sets]
            if line in lines:
                h += 1
                lines.move_to_end(line)
                lines[line] = lines[line] or bool(write)
                continue
            if len(lines) == ways:
                _, was_dirty = lines.popitem(last=False)
                wb += was_dirty
            lines[line] = bool(write)
            if read:
                rm += 1
            else:
                wm += 1
        hits.append(h)
        read_misses.append(rm)
        write_misses.append(wm)
        writebacks.append(wb)
    return hits, read_misses, write_misses, writebacks, sets
