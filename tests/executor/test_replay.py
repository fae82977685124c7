"""The numba replay kernels write exactly the bytes of the NumPy reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.executor import reference, replay
from autotm_core.executor.copy import copy_for, streaming_nbytes
from autotm_core.executor.stream import stream_copy

SPACE = 1 << 14

row = st.tuples(st.integers(0, SPACE // 2), st.integers(0, 700),
                st.integers(-(1 << 63), (1 << 63) - 1), st.sampled_from([0, 0, 1, 2]))


@settings(max_examples=80, deadline=None)
@given(st.lists(row, min_size=0, max_size=6), st.integers(0, 2**32 - 1),
       st.integers(0, 3000))
def test_run_kernel_equals_reference(rows, fill_seed, iterations):
    """Bytes, hashes and the compute result are the reference's, whatever the interleaving."""
    rows = sorted(rows, key=lambda r: r[3] != 0)  # reads first, as programs order them
    ops = np.asarray(rows, dtype=np.int64).reshape(-1, 4)
    space = np.random.default_rng(fill_seed).integers(0, 256, SPACE, dtype=np.uint8)
    expected = space.copy()
    h, scratch, rounds, result = replay.run_kernel(space, space.view(np.uint64), ops, 0,
                                                   len(ops), iterations)
    h_ref, scratch_ref = reference.run_kernel(expected, ops, 0, len(ops))
    assert (h, scratch) == (int(h_ref), int(scratch_ref))
    assert np.array_equal(space, expected)
    assert rounds == iterations  # every round run, exactly once
    assert result == reference.compute_result(iterations)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 500), st.integers(0, 5), st.data())
def test_dose_spreads_the_extra_rounds_evenly(chunks, share, data):
    """After c chunks, floor(c * extra / chunks) extra rounds: never two extras bunched up."""
    extra = data.draw(st.integers(0, chunks - 1))
    carry, total, x = 0, 0, 1.0
    for c in range(1, chunks + 1):
        carry, count, x = replay._dose(carry, share, extra, chunks, x)
        total += count
        assert count in (share, share + 1)
        assert total == c * share + c * extra // chunks
    assert total == share * chunks + extra and carry == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 64), st.integers(0, 300), st.integers(-(1 << 63), (1 << 63) - 1))
def test_initialise_and_digest_equal_reference(addr, n, seed):
    space = np.zeros(1024, dtype=np.uint8)
    ops = np.array([[addr, n, seed, 1]], dtype=np.int64)
    replay.initialise(space, space.view(np.uint64), ops)
    assert np.array_equal(space[addr:addr + n], reference.initial_bytes(n, seed))
    found = replay.digests(space, space.view(np.uint64), ops)[0]
    assert found == reference.digest(space[addr:addr + n])


def test_digest_sees_a_single_flipped_bit():
    space = np.zeros(4096, dtype=np.uint8)
    words = space.view(np.uint64)
    before = replay.digest(space, words, 8, 1000)
    space[500] ^= 4
    assert replay.digest(space, words, 8, 1000) != before


def test_outputs_depend_on_inputs_and_names_not_on_compute():
    space = np.zeros(4096, dtype=np.uint8)
    words = space.view(np.uint64)
    ops = np.array([[0, 64, 0, 0], [64, 64, 11, 1], [128, 64, 12, 1]], dtype=np.int64)
    replay.run_kernel(space, words, ops, 0, 3, 0)
    first = space[64:192].copy()
    assert not np.array_equal(first[:64], first[64:])  # two outputs, two streams
    replay.run_kernel(space, words, ops, 0, 3, 10_000)
    assert np.array_equal(space[64:192], first)
    space[0] = 1
    replay.run_kernel(space, words, ops, 0, 3, 0)
    assert not np.array_equal(space[64:192], first)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 127), st.integers(0, 127), st.integers(0, 2**32 - 1))
def test_stream_copy_equals_copyto(n, source_at, target_at, seed):
    """Any size, any alignment of source and target: the bytes of numpy.copyto, nothing else."""
    space = np.random.default_rng(seed).integers(0, 256, 8192, dtype=np.uint8)
    expected = space.copy()
    source, target = slice(source_at, source_at + n), slice(4096 + target_at,
                                                           4096 + target_at + n)
    np.copyto(expected[target], expected[source])
    stream_copy(space[target], space[source])
    assert np.array_equal(space, expected)


def test_large_moves_stream_and_small_ones_use_copyto():
    assert copy_for(streaming_nbytes() - 1) is np.copyto
    assert copy_for(streaming_nbytes()) is stream_copy
