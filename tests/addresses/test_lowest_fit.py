"""The compiled lowest-fit placement against its plain reference, and packing properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.addresses import ORDERS, lower_bound
from autotm_core.addresses import reference as ref
from autotm_core.addresses.lowest_fit import lowest_fit


def no_partners(n: int) -> np.ndarray:
    return np.full(n, -1, dtype=np.int64)


@st.composite
def items(draw):  # type: ignore[no-untyped-def]
    n_times = draw(st.integers(1, 24))
    n = draw(st.integers(0, 40))
    start = draw(st.lists(st.integers(0, n_times - 1), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(0, n_times), min_size=n, max_size=n))
    size = draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 8, 64]), min_size=n, max_size=n))
    order = draw(st.permutations(range(n)))
    end = [min(n_times - 1, s + d) for s, d in zip(start, length, strict=True)]
    # Partners: disjoint pairs of items with disjoint spans, given the same size.
    partner = [-1] * n
    for i, j in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
                     if n else st.just([])):
        apart = end[i] < start[j] or end[j] < start[i]
        if i != j and partner[i] < 0 and partner[j] < 0 and apart:
            partner[i], partner[j] = j, i
            size[j] = size[i]
    return [np.array(x, dtype=np.int64) for x in (start, end, size, order, partner)] + [n_times]


@pytest.mark.slow
@given(items())
@settings(max_examples=100, deadline=None)
def test_compiled_equals_reference(case):  # type: ignore[no-untyped-def]
    start, end, size, order, partner, n_times = case
    fast = lowest_fit(start, end, size, order, n_times, partner)
    assert fast.tolist() == ref.lowest_fit(start, end, size, order, partner)


@given(items())
@settings(max_examples=60, deadline=None)
def test_packing_is_disjoint_and_above_the_bound(case):  # type: ignore[no-untyped-def]
    start, end, size, order, partner, n_times = case
    offsets = lowest_fit(start, end, size, order, n_times, partner)
    height = int((offsets + size).max()) if len(size) else 0
    assert (offsets >= 0).all()
    paired = partner >= 0
    assert (offsets[paired] == offsets[partner[paired]]).all()
    for i in range(len(size)):
        for j in range(i):
            if size[i] and size[j] and start[i] <= end[j] and start[j] <= end[i]:
                assert offsets[i] + size[i] <= offsets[j] or offsets[j] + size[j] <= offsets[i]
    bound = lower_bound(start, end, size, n_times)
    assert bound == max(ref.live_profile(start, end, size, n_times), default=0)
    assert height >= bound
    assert max(ref.top_profile(start, end, size, offsets, n_times), default=0) == height


def test_a_pair_takes_the_lowest_address_free_in_both_spans():
    # Item 0 blocks [0, 4) early, item 1 blocks [0, 6) late: alone, 2 (early) goes to 4 and
    # 3 (late) to 6; as a pair of size 2 they take the lowest address free in both spans, 6.
    start, end, size = [0, 5, 0, 5], [2, 7, 2, 7], [4, 6, 2, 2]
    s, e, z = (np.array(x, dtype=np.int64) for x in (start, end, size))
    order = np.arange(4, dtype=np.int64)
    partner = np.array([-1, -1, 3, 2], dtype=np.int64)
    assert lowest_fit(s, e, z, order, 8, no_partners(4)).tolist() == [0, 0, 4, 6]
    assert lowest_fit(s, e, z, order, 8, partner).tolist() == [0, 0, 6, 6]
    assert ref.lowest_fit(s, e, z, order, partner) == [0, 0, 6, 6]
    # Placed when the first of the two comes: first in the order, the pair goes lowest.
    first = np.array([3, 0, 1, 2], dtype=np.int64)
    assert lowest_fit(s, e, z, first, 8, partner).tolist() == [2, 2, 0, 0]


def _height(start, end, size, order_name, n_times=5):  # type: ignore[no-untyped-def]
    s, e, z = (np.array(x, dtype=np.int64) for x in (start, end, size))
    order = ORDERS[order_name](s, e, z).astype(np.int64)
    return int((lowest_fit(s, e, z, order, n_times, no_partners(len(z))) + z).max())


def test_largest_first_reaches_the_bound_where_a_time_sweep_does_not():
    # Found by search: placing by start time leaves a hole of 2; largest first packs exactly.
    start, end, size = [3, 4, 2, 2, 3], [4, 4, 4, 3, 4], [1, 3, 3, 2, 3]
    bound = lower_bound(*(np.array(x, dtype=np.int64) for x in (start, end, size)), 5)
    assert bound == 10
    assert _height(start, end, size, "size") == 10
    assert _height(start, end, size, "start") == 12


def test_time_sweep_reaches_the_bound_where_largest_first_does_not():
    start, end, size = [0, 2, 1, 0, 0, 1], [0, 2, 2, 1, 1, 2], [3, 2, 2, 2, 2, 1]
    assert lower_bound(*(np.array(x, dtype=np.int64) for x in (start, end, size)), 3) == 7
    assert _height(start, end, size, "start", 3) == 7
    assert _height(start, end, size, "size", 3) == 8


def test_nested_lifetimes_pack_to_the_bound():
    # Last-in-first-out lifetimes, as forward activations freed by the backward pass.
    n = 50
    start = np.arange(n, dtype=np.int64)
    end = 2 * n - 1 - start
    size = (np.arange(n, dtype=np.int64) * 7919) % 13 + 1
    for name in ORDERS:
        order = ORDERS[name](start, end, size).astype(np.int64)
        height = int((lowest_fit(start, end, size, order, 2 * n, no_partners(n)) + size).max())
        assert height == lower_bound(start, end, size, 2 * n) == int(size.sum())
