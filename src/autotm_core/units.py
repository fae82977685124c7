"""Parsing and printing of byte sizes, bandwidths, slow:fast ratios and named choices.

Conventions: sizes are integers in bytes (``nbytes``), times are floats in
seconds, bandwidths are floats in bytes per second. ``GiB``/``MiB``/``KiB`` are
powers of 1024, ``GB``/``MB``/``KB`` powers of 1000, as everywhere else.
"""

from __future__ import annotations

import enum
import math
import re
from fractions import Fraction
from typing import TypeVar

from autotm_core.errors import UsageError

Choice = TypeVar("Choice", bound=enum.Enum)

PAGE_NBYTES = 4096
"""The page size AutoTM rounded every tensor up to."""

_SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "k": 1024,
    "m": 1024**2,
    "g": 1024**3,
    "t": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


MAX_SIZE_NBYTES = 2**60
"""The largest size a command line or file value may give (byte sums must fit 64 bits)."""


def parse_size(text: str | int | float) -> int:
    """Parse ``"16GiB"``, ``"1.5 GB"``, ``"4096"`` or a number into bytes (rounded up)."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise UsageError(f"size {text!r} is not a number of bytes")
    if isinstance(text, float):
        if not math.isfinite(text):
            raise UsageError(f"size {text!r} is not a number of bytes")
        text = math.ceil(text)
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"size {text} is negative", hint="give a size of 0 bytes or more")
        if text > MAX_SIZE_NBYTES:
            raise UsageError(f"size of {text.bit_length()} bits is more than the 2^60 bytes "
                             "(1 EiB) autotm-core plans", hint="give a size in bytes")
        return text
    match = _SIZE_RE.match(text)
    if match is None or match.group(2).lower() not in _SIZE_UNITS:
        raise UsageError(
            f"cannot read {text!r} as a size",
            hint="write a number and a unit, e.g. 16GiB, 1.5GB, 512MiB or 4096",
        )
    number, unit = match.group(1), match.group(2).lower()
    value = Fraction(number) * _SIZE_UNITS[unit]  # exact: a float rounds 2^60 + 1 to 2^60
    if _SIZE_UNITS[unit] == 1 and value.denominator != 1:
        raise UsageError(f"size {text!r} is not a whole number of bytes",
                         hint=f"give bytes as a whole number, or a unit: e.g. {number}GiB")
    if not value <= MAX_SIZE_NBYTES:
        raise UsageError(f"size {text!r} is more than the 2^60 bytes (1 EiB) autotm-core "
                         "plans", hint="give a size in bytes or with a unit, e.g. 16GiB")
    return math.ceil(value)


def parse_ratio(text: str) -> Fraction:
    """Parse a slow:fast (PMM:DRAM) ratio ``"4:1"`` into slow/fast as a fraction (here 4).

    The paper writes ratios slow memory first: 1:1, 4:1, 8:1. ``"0:1"`` means
    all in fast memory.
    """
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        slow, fast = (Fraction(p.strip()) for p in parts)
    except (ValueError, ZeroDivisionError):
        raise UsageError(
            f"cannot read {text!r} as a ratio",
            hint="write slow:fast memory as the paper does, e.g. 4:1",
        ) from None
    if slow < 0 or fast <= 0:
        raise UsageError(
            f"ratio {text!r} needs a positive fast part and a non-negative slow part",
            hint="e.g. 1:1, 4:1 or 8:1",
        )
    return slow / fast


def fast_capacity_for_ratio(peak_nbytes: int, ratio: Fraction) -> int:
    """The fast-memory limit for slow:fast ``ratio``: peak / (ratio + 1), as AutoTM."""
    return int(Fraction(peak_nbytes) / (ratio + 1))


def round_up(nbytes: int, granule: int = PAGE_NBYTES) -> int:
    """Round ``nbytes`` up to a multiple of ``granule`` (no rounding when granule <= 1)."""
    if granule <= 1:
        return nbytes
    return -(-nbytes // granule) * granule


def format_bytes(nbytes: float) -> str:
    """``1536`` -> ``"1.50 KiB"``; binary units, three significant figures."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_seconds(seconds: float) -> str:
    """A duration with a unit a person reads at a glance."""
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.3f} us"


def format_bandwidth(bytes_per_second: float) -> str:
    """Bandwidth in decimal units, as datasheets print it: ``20.0 GB/s`` from 1 GB/s up,
    three significant figures in MB/s, kB/s or B/s below (``8.16 KiB`` copied in a
    millisecond is ``8.36 MB/s``, not ``0.0 GB/s``)."""
    if bytes_per_second >= 1e9 or not math.isfinite(bytes_per_second):
        return f"{bytes_per_second / 1e9:.1f} GB/s"
    for scale, unit in ((1e6, "MB/s"), (1e3, "kB/s")):
        if bytes_per_second >= scale:
            return f"{bytes_per_second / scale:.3g} {unit}"
    return f"{bytes_per_second:.3g} B/s"


def parse_choice(kind: type[Choice], value: Choice | str, *, what: str) -> Choice:
    """The member of enum ``kind`` whose value is ``value`` (any case); one
    :class:`UsageError` naming ``what`` and the choices when none is."""
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value).lower())
    except ValueError:
        raise UsageError(f"unknown {what} {value!r}",
                         hint=f"use one of {', '.join(m.value for m in kind)}") from None
