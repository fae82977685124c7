"""The compiled calibration kernels equal their NumPy reference; the chased cycle is one cycle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.calibration import kernels, reference

words = st.lists(st.integers(0, 2**64 - 1), max_size=67).map(lambda v: np.array(v, np.uint64))


@given(words)
def test_stream_read_equals_reference(values) -> None:
    assert kernels.stream_read(values) == reference.stream_read(values)


@given(words, st.integers(0, 2**64 - 1))
def test_stream_write_equals_reference(values, value) -> None:
    compiled, plain = values.copy(), values.copy()
    kernels.stream_write(compiled, np.uint64(value))
    reference.stream_write(plain, value)
    assert np.array_equal(compiled, plain)


@settings(max_examples=30)
@given(st.integers(1, 200), st.integers(1, 8), st.integers(0, 2**32), st.integers(0, 500))
def test_chase_walks_one_cycle_through_every_slot(slots, stride, seed, steps) -> None:
    following = np.full(slots * stride, -1, dtype=np.int64)
    start = reference.write_cycle(following, stride=stride, seed=seed)
    seen, i = set(), start
    for _ in range(slots):
        assert i % stride == 0 and i not in seen
        seen.add(i)
        i = int(following[i])
    assert i == start and len(seen) == slots  # back at the start after every slot, once each
    assert kernels.chase(following, start, steps) == reference.chase(following, start, steps)
