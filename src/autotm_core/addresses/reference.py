"""Plain-Python references of the packing kernels: obviously right, quadratic, for tests."""

from __future__ import annotations

from collections.abc import Sequence


def lowest_fit(
    start: Sequence[int],
    end: Sequence[int],
    size: Sequence[int],
    order: Sequence[int],
    partner: Sequence[int] | None = None,
) -> list[int]:
    """Offsets of items placed in ``order``, each at its lowest fitting address.

    Same contract as :func:`autotm_core.addresses.lowest_fit.lowest_fit`:
    inclusive time spans, items of size 0 get offset 0 and block nothing, an
    item and its partner (``partner[i]``, -1 for none) get one offset, free
    during both spans, when the first of them comes in ``order``.
    """
    offsets = [0] * len(start)
    placed: list[int] = []
    for i in order:
        i = int(i)
        if size[i] == 0 or i in placed:
            continue
        group = [i] if partner is None or partner[i] < 0 else [i, int(partner[i])]
        blocking = sorted(
            (offsets[j], offsets[j] + size[j])
            for j in placed
            if any(start[j] <= end[g] and start[g] <= end[j] for g in group)
        )
        y = 0
        for low, high in blocking:
            if low >= y + size[i]:
                break
            y = max(y, high)
        for g in group:
            offsets[g] = y
            placed.append(g)
    return offsets


def live_profile(
    start: Sequence[int], end: Sequence[int], size: Sequence[int], n_times: int
) -> list[int]:
    """Bytes present at each time ``0 .. n_times-1``."""
    used = [0] * n_times
    for a, b, s in zip(start, end, size, strict=True):
        for t in range(a, b + 1):
            used[t] += s
    return used


def top_profile(
    start: Sequence[int],
    end: Sequence[int],
    size: Sequence[int],
    offsets: Sequence[int],
    n_times: int,
) -> list[int]:
    """Highest end address of the items present at each time (0 where none is)."""
    top = [0] * n_times
    for a, b, s, o in zip(start, end, size, offsets, strict=True):
        for t in range(a, b + 1):
            top[t] = max(top[t], o + s)
    return top
