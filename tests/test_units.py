"""Parsing and printing of sizes and ratios."""

from __future__ import annotations

from fractions import Fraction

import pytest

from autotm_core.errors import UsageError
from autotm_core.units import (
    fast_capacity_for_ratio,
    format_bytes,
    parse_ratio,
    parse_size,
    round_up,
)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("16GiB", 16 * 1024**3),
        ("16 GiB", 16 * 1024**3),
        ("16gib", 16 * 1024**3),
        ("1.5 GB", 1_500_000_000),
        ("2GB", 2 * 10**9),
        ("512MiB", 512 * 1024**2),
        ("512MB", 512 * 10**6),
        ("4KiB", 4096),
        ("1TiB", 1024**4),
        ("4096", 4096),
        ("4096B", 4096),
        ("0", 0),
        (".5KiB", 512),
        ("1.0001KB", 1001),  # rounded up to whole bytes
        ("2G", 2 * 1024**3),
        (4096, 4096),
        (0, 0),
    ],
)
def test_parse_size(text: str | int, nbytes: int) -> None:
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["", "GiB", "abc", "-5", "-5GiB", "5 XB", "1e9", "5 G iB",
                                  "1,5GB", "nan", -1, True])
def test_parse_size_rejects_bad_input(text: str | int) -> None:
    with pytest.raises(UsageError) as caught:
        parse_size(text)
    assert repr(text) in caught.value.message or str(text) in caught.value.message


@pytest.mark.parametrize(
    ("text", "ratio"),
    [("4:1", 4), ("1:1", 1), ("8:1", 8), ("0:1", 0), ("1:2", Fraction(1, 2)),
     (" 3 : 2 ", Fraction(3, 2)), ("1.5:1", Fraction(3, 2))],
)
def test_parse_ratio(text: str, ratio: Fraction) -> None:
    assert parse_ratio(text) == ratio


@pytest.mark.parametrize(
    "text", ["4", "4:", ":1", "a:b", "1:0", "-1:1", "1:-1", "1:2:3", "4/1", ""]
)
def test_parse_ratio_rejects_bad_input(text: str) -> None:
    with pytest.raises(UsageError, match="ratio") as caught:
        parse_ratio(text)
    assert caught.value.hint


def test_fast_capacity_for_ratio_as_in_the_paper() -> None:
    assert fast_capacity_for_ratio(100, parse_ratio("4:1")) == 20
    assert fast_capacity_for_ratio(100, parse_ratio("1:1")) == 50
    assert fast_capacity_for_ratio(100, parse_ratio("0:1")) == 100


def test_round_up_and_format() -> None:
    assert round_up(1) == 4096 and round_up(4096) == 4096 and round_up(0) == 0
    assert round_up(5, 1) == 5
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(100) == "100 B"
    assert format_bytes(3 * 1024**5) == "3072.00 TiB"


def test_sizes_near_the_limit_are_compared_exactly() -> None:
    # a float rounds 2^60 + 1 down to 2^60 (accepted, and planned as 2^60 bytes), while
    # 2^60 + 256 rounds up and was refused
    assert parse_size(str(2**60)) == 2**60
    for text in (str(2**60 + 1), str(2**60 + 256), "1048576.0000001TiB"):
        with pytest.raises(UsageError, match="more than the 2"):
            parse_size(text)
    assert parse_size("1048576TiB") == 2**60
    assert parse_size("9007199254740993") == 9007199254740993  # 2^53 + 1, kept whole


@pytest.mark.parametrize(("rate", "text"), [
    (2e10, "20.0 GB/s"), (1e9, "1.0 GB/s"), (8.36e6, "8.36 MB/s"), (8160.0, "8.16 kB/s"),
    (12.0, "12 B/s"), (0.0, "0 B/s")])
def test_small_rates_keep_their_digits(rate: float, text: str) -> None:
    from autotm_core.units import format_bandwidth

    assert format_bandwidth(rate) == text
