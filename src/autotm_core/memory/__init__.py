"""Memory systems: pools, copy links and the built-in presets."""

from autotm_core.memory.presets import PRESETS, preset
from autotm_core.memory.system import CopyLink, MemorySystem, Pool

__all__ = ["PRESETS", "CopyLink", "MemorySystem", "Pool", "preset"]
