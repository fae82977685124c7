"""Built-in memory systems, each with the source of its numbers.

Capacities are the machine's; planners usually override the fast pool's with
``--fast-capacity`` or ``--ratio``.
"""

from __future__ import annotations

from collections.abc import Callable

from autotm_core.errors import MemorySystemError
from autotm_core.memory.system import CopyLink, MemorySystem, Pool

GB = 10**9


def optane_2019() -> MemorySystem:
    """AutoTM's machine: one Cascade Lake socket with DDR4 DRAM and Optane DC PMM."""
    return MemorySystem(
        name="optane-2019",
        flops_per_second=2.0e12,
        description=(
            "one Cascade Lake socket: 192 GB DDR4-2666 DRAM + 768 GB Optane DC PMM (App Direct)"
        ),
        source=(
            "Hildebrand et al., AutoTM, ASPLOS 2020 (move bandwidths of its model, in MB/s: "
            "PMM->DRAM 29,000 sync / 2,000 async, DRAM->PMM 12,000 sync / 2,500 async; "
            "DRAM limit 185 GB of 192 GB); Izraelevitz et al. 2019 (Optane: about 39 GB/s read, "
            "14 GB/s write per socket of 6 DIMMs, about 300 ns read latency; DDR4 about 100 GB/s, "
            "about 90 ns). PMM capacity (6 x 128 GB) is an assumption. Compute: a 28-core Xeon "
            "Platinum 8280 peaks near 4.3 TFLOP/s fp32 with AVX-512; 2 TFLOP/s sustained is an "
            "assumption."
        ),
        pools=(
            Pool("dram", 192 * GB, 100e9, 100e9, 90e-9, numa_node=0),
            Pool("pmm", 768 * GB, 39e9, 14e9, 300e-9, numa_node=2),
        ),
        links=(
            CopyLink("pmm", "dram", 29_000e6, 2_000e6),
            CopyLink("dram", "pmm", 12_000e6, 2_500e6),
        ),
    )


def cxl_expander() -> MemorySystem:
    """A DDR5 server socket with a CXL 2.0 x16 memory expander."""
    return MemorySystem(
        name="cxl-expander",
        flops_per_second=4.0e12,
        description="one DDR5-4800 socket (256 GB) + one CXL 2.0 x16 memory expander (512 GB)",
        source=(
            "DDR5-4800, 8 channels: about 250 GB/s measured, about 90 ns; CXL expanders "
            "(CXL 1.1/2.0 x16): tens of GB/s per device, about 170-250 ns load latency "
            "(published vendor and academic measurements, see REFERENCE). Copy bandwidths: "
            "synchronous at the expander's speed, asynchronous at half of it (one copy thread "
            "sharing the link with compute) - an assumption, calibrate the machine at hand. "
            "Compute: 4 TFLOP/s fp32 sustained for a current 48-64-core server socket, an "
            "assumption."
        ),
        pools=(
            Pool("dram", 256 * GB, 250e9, 250e9, 90e-9, numa_node=0),
            Pool("cxl", 512 * GB, 50e9, 40e9, 210e-9, numa_node=1),
        ),
        links=(
            CopyLink("cxl", "dram", 45e9, 22.5e9),
            CopyLink("dram", "cxl", 38e9, 19e9),
        ),
    )


def gpu_h200() -> MemorySystem:
    """An H200-class GPU: HBM3e on the device, pinned host memory across PCIe Gen5 x16."""
    return MemorySystem(
        name="gpu-h200",
        flops_per_second=200e12,
        description="NVIDIA H200: 141 GB HBM3e + 1 TB pinned host memory over PCIe Gen5 x16",
        source=(
            "NVIDIA H200 datasheet: 141 GB HBM3e at 4.8 TB/s; PCIe Gen5 x16 about 50-55 GB/s "
            "each way with pinned buffers; copy engines overlap kernels, so asynchronous copies "
            "run at the same rate (AutoTM's GPU model used one rate both ways too). Host "
            "capacity is an assumption. Compute: 67 TFLOP/s fp32, 495 TFLOP/s dense TF32 on tensor "
            "cores; 200 TFLOP/s sustained for mixed training kernels is an assumption."
        ),
        pools=(
            Pool("hbm", 141 * GB, 4.8e12, 4.8e12, 500e-9, device="cuda:0"),
            Pool("host", 1000 * GB, 50e9, 50e9, 1.5e-6, device="host-pinned"),
        ),
        links=(
            CopyLink("host", "hbm", 50e9, 50e9),
            CopyLink("hbm", "host", 50e9, 50e9),
        ),
    )


PRESETS: dict[str, Callable[[], MemorySystem]] = {
    "optane-2019": optane_2019,
    "cxl-expander": cxl_expander,
    "gpu-h200": gpu_h200,
}
"""Preset name -> factory."""


def preset(name: str) -> MemorySystem:
    """The built-in memory system called ``name``."""
    try:
        return PRESETS[name]()
    except KeyError:
        raise MemorySystemError(
            f"no memory-system preset called {name!r}",
            hint=f"use one of {', '.join(PRESETS)}, or give a memory-system JSON file",
        ) from None
