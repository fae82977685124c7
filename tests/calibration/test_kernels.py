"""The compiled chase equals its NumPy reference; the chased cycle is one cycle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.calibration import kernels, reference


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
