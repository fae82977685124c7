"""Addresses that fit: an offset for every residency of every capacity-limited pool.

Plugin API: plugins may import the names of ``__all__`` (see docs/writing-a-frontend.md).

``assign_offsets`` packs a plan's residencies into each bounded pool; numba is
imported only when it runs. See docs/addresses.md.
"""

from autotm_core.addresses.packing import DEFAULT_ORDERS, ORDERS, assign_offsets, lower_bound
from autotm_core.addresses.records import OffsetAssignment, Overflow, PoolPacking

__all__ = [
    "DEFAULT_ORDERS",
    "ORDERS",
    "OffsetAssignment",
    "Overflow",
    "PoolPacking",
    "assign_offsets",
    "lower_bound",
]
