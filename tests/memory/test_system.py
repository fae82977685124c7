"""Memory systems: validation of pools and copy links, lookups and derived links."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from autotm_core.errors import MemorySystemError
from autotm_core.memory import CopyLink, MemorySystem, Pool

GB = 10**9


def _pools() -> tuple[Pool, Pool, Pool]:
    return (
        Pool("hbm", 80 * GB, 3e12, 3e12, 5e-7, device="cuda:0"),
        Pool("dram", 512 * GB, 200e9, 150e9, 90e-9, numa_node=0),
        Pool("cxl", None, 40e9, 30e9, 2.5e-7, numa_node=1),
    )


def test_three_pools_fastest_first_with_lookups() -> None:
    system = MemorySystem("tiered", _pools(), [CopyLink("cxl", "hbm", 20e9, 10e9)])
    assert (system.fast.name, system.slow.name) == ("hbm", "cxl")
    assert system.pool_index("dram") == 1 and system.pool("cxl").capacity_nbytes is None
    assert system.pool("hbm").bounded and not system.pool("cxl").bounded
    with pytest.raises(MemorySystemError, match="has no pool 'pmm'") as caught:
        system.pool("pmm")
    assert "hbm, dram, cxl" in caught.value.hint


def test_links_given_or_derived() -> None:
    system = MemorySystem("tiered", _pools(), [CopyLink("cxl", "hbm", 20e9, 10e9)])
    given = system.link(2, 0)
    assert (given.sync_bytes_per_second, given.async_bytes_per_second) == (20e9, 10e9)
    derived = system.link(0, 2)  # hbm -> cxl: read hbm at 3e12, write cxl at 30e9
    assert derived == CopyLink("hbm", "cxl", 30e9, 30e9)
    assert system.link(1, 2).sync_bytes_per_second == 30e9
    assert system.copy_seconds(20 * GB, 2, 0, asynchronous=False) == pytest.approx(1.0)
    assert system.copy_seconds(20 * GB, 2, 0, asynchronous=True) == pytest.approx(2.0)


def test_with_capacity_changes_one_pool_only() -> None:
    system = MemorySystem("tiered", _pools())
    smaller = system.with_capacity("hbm", 1 * GB)
    assert smaller.fast.capacity_nbytes == 1 * GB
    assert smaller.pools[1:] == system.pools[1:]
    assert system.fast.capacity_nbytes == 80 * GB  # the original is unchanged
    assert system.with_capacity("dram", None).pool("dram").capacity_nbytes is None
    with pytest.raises(MemorySystemError, match="no pool 'ssd'"):
        system.with_capacity("ssd", 1)


@pytest.mark.parametrize("field", ["read_bytes_per_second", "write_bytes_per_second"])
@pytest.mark.parametrize("bad", [0, 0.0, -1e9, math.nan, math.inf, "fast", True, None])
def test_pool_bandwidth_must_be_positive_and_finite(field: str, bad: Any) -> None:
    with pytest.raises(MemorySystemError, match=f"pool 'dram': {field}") as caught:
        attrs.evolve(_pools()[1], **{field: bad})
    if isinstance(bad, int | float) and not isinstance(bad, bool) and bad <= 0:
        assert "greater than zero" in caught.value.message
        assert "bytes per second" in caught.value.hint


@pytest.mark.parametrize("field", ["sync_bytes_per_second", "async_bytes_per_second"])
@pytest.mark.parametrize("bad", [0, -5.0, math.nan])
def test_link_bandwidth_must_be_positive(field: str, bad: float) -> None:
    good = {"sync_bytes_per_second": 1e9, "async_bytes_per_second": 1e9}
    with pytest.raises(MemorySystemError, match=f"copy 'a' -> 'b': {field}"):
        CopyLink("a", "b", **{**good, field: bad})


@pytest.mark.parametrize("bad", [-1, 1.5, "1GiB", True])
def test_pool_capacity_is_whole_bytes_or_unbounded(bad: Any) -> None:
    with pytest.raises(MemorySystemError, match="pool 'dram': capacity"):
        attrs.evolve(_pools()[1], capacity_nbytes=bad)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("latency_seconds", -1e-9), ("latency_seconds", math.nan), ("numa_node", -1),
     ("numa_node", 0.5)],
)
def test_pool_latency_and_numa_node(field: str, bad: Any) -> None:
    with pytest.raises(MemorySystemError, match=f"pool 'dram': {field}"):
        attrs.evolve(_pools()[1], **{field: bad})


@pytest.mark.parametrize("count", [0, 1])
def test_fewer_than_two_pools(count: int) -> None:
    with pytest.raises(MemorySystemError, match=f"has {count} pool\\(s\\); it needs at least two"):
        MemorySystem("lonely", _pools()[:count])


def test_duplicate_pool() -> None:
    hbm, dram, _ = _pools()
    with pytest.raises(MemorySystemError, match="names pool 'dram' twice"):
        MemorySystem("twice", [hbm, dram, dram])


@pytest.mark.parametrize(("source", "target", "unknown"), [("pmm", "hbm", "pmm"),
                                                            ("hbm", "nvme", "nvme")])
def test_link_to_unknown_pool(source: str, target: str, unknown: str) -> None:
    with pytest.raises(MemorySystemError, match=f"names unknown pool '{unknown}'") as caught:
        MemorySystem("x", _pools(), [CopyLink(source, target, 1e9, 1e9)])
    assert caught.value.hint == "the pools are hbm, dram, cxl"


def test_link_to_itself_and_link_twice() -> None:
    with pytest.raises(MemorySystemError, match="goes nowhere"):
        MemorySystem("x", _pools(), [CopyLink("dram", "dram", 1e9, 1e9)])
    twice = [CopyLink("dram", "hbm", 1e9, 1e9), CopyLink("dram", "hbm", 2e9, 2e9)]
    with pytest.raises(MemorySystemError, match="is given twice"):
        MemorySystem("x", _pools(), twice)


def test_flops_per_second_must_be_positive() -> None:
    with pytest.raises(MemorySystemError, match="flops_per_second"):
        MemorySystem("x", _pools(), flops_per_second=0)
