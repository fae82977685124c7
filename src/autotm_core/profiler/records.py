"""Records of the profiler: one measurement, and what a profiling run did."""

from __future__ import annotations

import math
from typing import Any

import attrs

from autotm_core.costs.model import TableCosts


def _seconds(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and value >= 0
    ):
        raise ValueError(f"{attribute.name} {value!r} must be a finite number of seconds >= 0")


@attrs.frozen(slots=True)
class Measurement:
    """The timed repetitions of one kernel in one placement, and their statistics."""

    median_seconds: float = attrs.field(validator=_seconds)
    """Median of the repetitions: the time the cost table gets."""
    min_seconds: float = attrs.field(validator=_seconds)
    """Fastest repetition."""
    iqr_seconds: float = attrs.field(validator=_seconds)
    """Interquartile range (75th minus 25th percentile) of the repetitions: their spread."""
    repeat: int = attrs.field(validator=attrs.validators.ge(1))
    """Number of timed repetitions (after one untimed warm-up)."""

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON object."""
        return attrs.asdict(self)


@attrs.frozen(slots=True, eq=False)
class ProfileResult:
    """What :func:`~autotm_core.profiler.profile.profile_graph` measured and built."""

    costs: TableCosts
    """The cost table: every kernel, every configuration profiled."""
    kernels: int
    """Kernels of the graph."""
    distinct_kernels: int
    """Distinct kernel signatures among them."""
    configurations: int
    """Rows of the cost table (kernel configurations), over all kernels."""
    restricted_kernels: tuple[str, ...]
    """Kernels whose configurations were restricted (too many to enumerate)."""
    placements: int
    """Distinct (signature, NUMA placement) measurements the table needed."""
    cache_hits: int
    """How many of them the cache held."""
    measured: int
    """How many were measured in this run."""
    measured_seconds: float
    """Wall time spent measuring (arena set-up included)."""
    total_seconds: float
    """Wall time of the whole profiling run."""
    nodes: tuple[int, ...]
    """NUMA node of each pool, in system order."""
    notes: tuple[str, ...]
    """What the numbers should be read with (default bindings, one node for every pool)."""
    slowest: tuple[tuple[str, float, float], ...]
    """The slowest kernels: (name, median seconds in the fastest-pool configuration, IQR)."""
