"""Memory systems of the evaluation: the built-in presets, and a three-pool system.

The three-pool system exists only here (the paper had nothing like it): HBM,
DRAM and a CXL expander on one socket, from published figures.
"""

from __future__ import annotations

from autotm_core.memory import MemorySystem
from autotm_core.memory.presets import PRESETS, preset
from autotm_core.memory.system import CopyLink, Pool

GB = 10**9

THREE_POOL = "hbm-dram-cxl"
"""Name of the evaluation's three-pool system."""


def hbm_dram_cxl() -> MemorySystem:
    """One Xeon-Max-class socket: on-package HBM2e, DDR5 DRAM and a CXL 2.0 expander."""
    return MemorySystem(
        name=THREE_POOL,
        flops_per_second=4.0e12,
        description=("one Xeon-Max-class socket: 64 GB HBM2e + 256 GB DDR5-4800 + "
                     "512 GB CXL 2.0 x16"),
        source=(
            "Intel Xeon CPU Max series: 64 GB HBM2e in 4 stacks, about 1 TB/s peak per socket; "
            "800 GB/s sustained is an assumption. DDR5-4800, 8 channels: about 250 GB/s, about "
            "90 ns. CXL 2.0 x16 expander: tens of GB/s, 170-250 ns (as the cxl-expander preset). "
            "Copies: synchronous at the slower side's speed, asynchronous at half of it (an "
            "assumption). Compute: 4 TFLOP/s fp32 sustained, as the cxl-expander preset."
        ),
        pools=(
            Pool("hbm", 64 * GB, 800e9, 800e9, 130e-9, numa_node=2),
            Pool("dram", 256 * GB, 250e9, 250e9, 90e-9, numa_node=0),
            Pool("cxl", 512 * GB, 50e9, 40e9, 210e-9, numa_node=1),
        ),
        links=(
            CopyLink("dram", "hbm", 250e9, 125e9),
            CopyLink("hbm", "dram", 250e9, 125e9),
            CopyLink("cxl", "hbm", 45e9, 22.5e9),
            CopyLink("hbm", "cxl", 38e9, 19e9),
            CopyLink("cxl", "dram", 45e9, 22.5e9),
            CopyLink("dram", "cxl", 38e9, 19e9),
        ),
    )


def evaluation_system(name: str) -> MemorySystem:
    """The preset called ``name``, or the evaluation's three-pool system."""
    if name == THREE_POOL:
        return hbm_dram_cxl()
    return preset(name)


SYSTEM_NAMES = (*PRESETS, THREE_POOL)
"""Every system name :func:`evaluation_system` knows."""
