"""What a memory configuration costs, and the cheapest one within a slowdown budget.

A configuration for a graph of peak live bytes ``P`` with fast capacity ``C``
buys ``C`` bytes of fast memory and ``P - C`` of slow memory (AutoTM's PMM:DRAM
ratios split the peak this way). Its cost is given relative to holding
everything in fast memory: ``(C * r + (P - C)) / (P * r)`` where ``r`` is the
fast/slow price per byte (2.1 for DRAM against Optane PMM in the AutoTM paper).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from autotm_core.sweep.point import PointResult

PAPER_PRICE_RATIO = 2.1
"""DRAM/PMM price per byte used by the AutoTM paper."""


@attrs.frozen(kw_only=True)
class PriceModel:
    """Prices of the two kinds of memory, as a ratio."""

    fast_per_slow: float = attrs.field(default=PAPER_PRICE_RATIO,
                                       validator=attrs.validators.gt(0.0))
    """Price per byte of fast memory over that of slow memory."""

    def relative_cost(self, *, fast_nbytes: int, peak_nbytes: int) -> float:
        """Memory cost of the configuration over the cost of all-fast memory (1.0)."""
        if peak_nbytes <= 0:
            return 1.0
        fast = min(fast_nbytes, peak_nbytes)
        return (fast * self.fast_per_slow + (peak_nbytes - fast)) / (
            peak_nbytes * self.fast_per_slow)

    def cost_of(self, result: PointResult) -> float:
        """:meth:`relative_cost` of a sweep point."""
        return self.relative_cost(fast_nbytes=result.fast_capacity_nbytes,
                                  peak_nbytes=result.peak_nbytes)

    def cheapest_within(self, results: Iterable[PointResult],
                        budget: float) -> PointResult | None:
        """The cheapest planned point whose slowdown is at most ``budget`` (ties: faster wins)."""
        fits = [r for r in results if r.slowdown is not None and r.slowdown <= budget]
        if not fits:
            return None
        return min(fits, key=lambda r: (self.cost_of(r), r.slowdown, r.point.key))
