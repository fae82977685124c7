"""Memory systems: pools, copy links, and which pools each tensor may live in.

Plugin API: plugins may import the names of ``__all__``. The built-in systems
are :mod:`autotm_core.presets`.
"""

from autotm_core.memory.devices import capture_mismatch, device_kind
from autotm_core.memory.system import CopyLink, MemorySystem, Pool
from autotm_core.memory.tensor_pools import allowed_pools

__all__ = ["CopyLink", "MemorySystem", "Pool", "allowed_pools", "capture_mismatch",
           "device_kind"]
