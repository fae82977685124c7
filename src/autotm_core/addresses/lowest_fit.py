"""Lowest-fit placement of rectangles (time span x bytes), compiled with numba.

Items are placed one after another in a given order, each at the lowest
address where it overlaps no already placed item that is present at the same
time. :func:`autotm_core.addresses.reference.lowest_fit` computes the same
offsets by checking every pair; this version must stay equal to it.

Finding the placed items that overlap ``[start, end]`` in time without checking
every pair: a segment tree over time. Each placed item is stored at the
``O(log T)`` canonical nodes that tile its span. Two spans intersect exactly
when a canonical node of one is an ancestor-or-self of a canonical node of the
other, so for each node two unions of address ranges are kept, merged into
sorted disjoint runs:

- ``cover(v)``: items having ``v`` as a canonical node (they cover all of v);
- ``below(v)``: items having a canonical node in the subtree of ``v``.

The address ranges forbidden to a query are the union, over its canonical
nodes ``v``, of ``below(v)`` and of ``cover(u)`` for every strict ancestor
``u`` of ``v``. The lowest free address is found by jumping over blocking runs
of these lists until none blocks. Merged runs stay few when the packing is
tight, so a query costs a few binary searches per list.

Storage is preallocated: a node's union never has more runs than items
inserted into it, which is counted before placing anything.

Partners: an item may have a partner (``partner[i] = j`` and ``partner[j] = i``)
of the same size with a disjoint time span, which must get the same offset: a
tensor that exists before the step and survives it, held in a pool at the
step's start and again (in another residency) at its end, where the next step
finds it. The pair is placed when the first of the two comes in the order, at
the lowest address free during both spans: the blocking lists of both spans'
canonical nodes go into one query, so the jumps over them alternate between
the spans until none blocks.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _count_node(v, i, cover_n, below_n, stamp):  # pragma: no cover - compiled
    """Count item ``i`` at canonical node ``v``: in its cover, and once below each ancestor."""
    cover_n[v] += 1
    while v >= 1 and stamp[v] != i:
        stamp[v] = i
        below_n[v] += 1
        v >>= 1


@numba.njit(cache=True)
def _canonical(first, last, leaves, canon, n_canon):  # pragma: no cover - compiled
    """Append the canonical nodes tiling ``[first, last]`` to ``canon``; return the new count."""
    lo = first + leaves
    hi = last + leaves + 1
    while lo < hi:
        if lo & 1:
            canon[n_canon] = lo
            n_canon += 1
            lo += 1
        if hi & 1:
            hi -= 1
            canon[n_canon] = hi
            n_canon += 1
        lo >>= 1
        hi >>= 1
    return n_canon


@numba.njit(cache=True)
def _count(start, end, size, leaves, cover_n, below_n, stamp, canon):  # pragma: no cover
    for i in range(len(start)):
        if size[i] == 0:
            continue
        for c in range(_canonical(start[i], end[i], leaves, canon, 0)):
            _count_node(canon[c], i, cover_n, below_n, stamp)


@numba.njit(cache=True)
def _insert(run_lo, run_hi, base, n, a, b):  # pragma: no cover - compiled
    """Add ``[a, b)`` to the sorted disjoint runs ``base .. base+n``; return the new count."""
    # first run ending at or after a (touching runs merge)
    left, right = 0, n
    while left < right:
        mid = (left + right) >> 1
        if run_hi[base + mid] < a:
            left = mid + 1
        else:
            right = mid
    first = left
    # last run starting at or before b
    left, right = 0, n
    while left < right:
        mid = (left + right) >> 1
        if run_lo[base + mid] <= b:
            left = mid + 1
        else:
            right = mid
    last = left - 1
    if first > last:
        for j in range(base + n, base + first, -1):
            run_lo[j] = run_lo[j - 1]
            run_hi[j] = run_hi[j - 1]
        run_lo[base + first] = a
        run_hi[base + first] = b
        return n + 1
    run_lo[base + first] = min(a, run_lo[base + first])
    run_hi[base + first] = max(b, run_hi[base + last])
    gone = last - first
    if gone:
        for j in range(base + first + 1, base + n - gone):
            run_lo[j] = run_lo[j + gone]
            run_hi[j] = run_hi[j + gone]
    return n - gone


@numba.njit(cache=True)
def _advance(run_lo, run_hi, base, n, y, s):  # pragma: no cover - compiled
    """Lowest ``y' >= y`` where ``[y', y'+s)`` misses every run of one list."""
    while True:
        left, right = 0, n
        while left < right:
            mid = (left + right) >> 1
            if run_lo[base + mid] < y + s:
                left = mid + 1
            else:
                right = mid
        k = left - 1
        if k >= 0 and run_hi[base + k] > y:
            y = run_hi[base + k]
        else:
            return y


@numba.njit(cache=True)
def lowest_fit(start, end, size, order, n_times, partner):  # pragma: no cover - compiled
    """Offsets of items placed in ``order``, each at its lowest fitting address.

    ``start``/``end``: inclusive time spans in ``0 .. n_times-1``; ``size``:
    bytes (items of size 0 get offset 0 and block nothing); ``partner``: the
    item that must share each item's offset (same size, disjoint span), or -1.
    A pair is placed when the first of the two comes in ``order``. All int64 arrays.
    """
    n = len(start)
    leaves = 1
    levels = 1
    while leaves < max(n_times, 1):
        leaves <<= 1
        levels += 1
    nodes = 2 * leaves
    # A span has at most 2 canonical nodes per level, and as many distinct strict ancestors.
    canon = np.empty(4 * levels, np.int64)
    list_node = np.empty(8 * levels, np.int64)
    list_cover = np.empty(8 * levels, np.bool_)
    cover_n = np.zeros(nodes, np.int64)
    below_n = np.zeros(nodes, np.int64)
    stamp = np.full(nodes, -1, np.int64)
    _count(start, end, size, leaves, cover_n, below_n, stamp, canon)
    cover_base = np.zeros(nodes + 1, np.int64)
    below_base = np.zeros(nodes + 1, np.int64)
    cover_base[1:] = np.cumsum(cover_n)
    below_base[1:] = np.cumsum(below_n)
    cover_lo = np.empty(cover_base[nodes], np.int64)
    cover_hi = np.empty(cover_base[nodes], np.int64)
    below_lo = np.empty(below_base[nodes], np.int64)
    below_hi = np.empty(below_base[nodes], np.int64)
    cover_len = np.zeros(nodes, np.int64)
    below_len = np.zeros(nodes, np.int64)
    stamp[:] = -1
    seen = np.full(nodes, -1, np.int64)
    placed = np.zeros(n, np.bool_)
    offsets = np.zeros(n, np.int64)
    for i in order:
        s = size[i]
        if s == 0 or placed[i]:
            continue
        j = partner[i]
        n_canon = _canonical(start[i], end[i], leaves, canon, 0)
        if j >= 0:
            n_canon = _canonical(start[j], end[j], leaves, canon, n_canon)
        # The blocking lists of every canonical node (of both spans, for a pair) and of each
        # distinct strict ancestor; ``seen`` (stamped with i for both spans) keeps them unique.
        m = 0
        for c in range(n_canon):
            v = canon[c]
            if below_len[v]:
                list_node[m] = v
                list_cover[m] = False
                m += 1
            u = v >> 1
            while u >= 1 and seen[u] != i:
                seen[u] = i
                if cover_len[u]:
                    list_node[m] = u
                    list_cover[m] = True
                    m += 1
                u >>= 1
        y = 0
        stable = 0
        k = 0
        while stable < m:
            v = list_node[k]
            if list_cover[k]:
                moved = _advance(cover_lo, cover_hi, cover_base[v], cover_len[v], y, s)
            else:
                moved = _advance(below_lo, below_hi, below_base[v], below_len[v], y, s)
            if moved != y:
                y = moved
                stable = 1
            else:
                stable += 1
            k += 1
            if k == m:
                k = 0
        offsets[i] = y
        placed[i] = True
        if j >= 0:
            offsets[j] = y
            placed[j] = True
        for c in range(n_canon):
            v = canon[c]
            cover_len[v] = _insert(cover_lo, cover_hi, cover_base[v], cover_len[v], y, y + s)
            while v >= 1 and stamp[v] != i:
                stamp[v] = i
                below_len[v] = _insert(below_lo, below_hi, below_base[v], below_len[v], y, y + s)
                v >>= 1
    return offsets
