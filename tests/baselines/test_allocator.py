"""The best-fit allocator: choice of block, alignment, merging, and no overlap ever."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.baselines.allocator import BestFitAllocator


def test_best_fit_takes_the_smallest_block_that_holds_it() -> None:
    a = BestFitAllocator(10 * 4096)
    blocks = [a.allocate(4096 * n) for n in (3, 1, 2, 1, 3)]
    assert blocks == [0, 3 * 4096, 4 * 4096, 6 * 4096, 7 * 4096]
    a.free(0, 3 * 4096)  # hole of 3 pages at 0
    a.free(4 * 4096, 2 * 4096)  # hole of 2 pages at 4
    assert a.allocate(4096) == 4 * 4096  # the 2-page hole is the best fit
    assert a.allocate(3 * 4096) == 0
    assert a.allocate(2 * 4096) is None  # one page left, at 5


def test_sizes_round_up_to_pages_and_neighbours_merge() -> None:
    a = BestFitAllocator(4 * 4096)
    assert (a.allocate(1), a.allocate(4097), a.allocate(4096)) == (0, 4096, 3 * 4096)
    a.free(0, 1)
    a.free(3 * 4096, 4096)
    a.free(4096, 4097)
    assert a.allocate(4 * 4096) == 0  # the three freed blocks merged back into one


def test_zero_bytes_take_no_room_and_unbounded_pools_grow() -> None:
    a = BestFitAllocator(None, alignment=1)
    assert a.allocate(0) == 0
    assert a.allocate(5) == 0
    assert a.allocate(7) == 5
    a.free(5, 7)
    assert a.allocate(10) == 5  # grows the free tail block
    assert a.high_water_nbytes == 15


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5 * 4096)), max_size=60),
       st.sampled_from([None, 16 * 4096]))
def test_live_blocks_never_overlap_and_stay_inside(
    ops: list[tuple[bool, int]], capacity: int | None
) -> None:
    a = BestFitAllocator(capacity)
    live: dict[int, int] = {}
    for free_one, nbytes in ops:
        if free_one and live:
            offset = sorted(live)[nbytes % len(live)]
            a.free(offset, live.pop(offset))
            continue
        given = a.allocate(nbytes)
        if nbytes == 0:
            continue
        if given is None:  # then no gap between the live blocks holds it
            assert capacity is not None
            ends = sorted((o, o + -(-n // 4096) * 4096) for o, n in live.items())
            edges = [0, *(x for pair in ends for x in pair), capacity]
            gaps = [edges[i + 1] - edges[i] for i in range(0, len(edges), 2)]
            assert max(gaps) < -(-nbytes // 4096) * 4096
            continue
        assert given % 4096 == 0
        assert capacity is None or given + nbytes <= capacity
        for other, size in live.items():
            assert given + nbytes <= other or other + size <= given
        live[given] = nbytes


def test_free_bytes_and_the_largest_block() -> None:
    a = BestFitAllocator(10 * 4096)
    assert (a.free_nbytes, a.largest_free_nbytes) == (10 * 4096, 10 * 4096)
    for n in (3, 1, 2, 1, 3):
        a.allocate(4096 * n)  # at 0, 3, 4, 6 and 7 pages
    a.free(0, 3 * 4096)
    a.free(4 * 4096, 2 * 4096)
    assert (a.free_nbytes, a.largest_free_nbytes) == (5 * 4096, 3 * 4096)
    assert BestFitAllocator(None).largest_free_nbytes == 0
