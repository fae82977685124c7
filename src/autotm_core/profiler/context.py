"""The machine and thread context a measurement belongs to, without the host's name.

Two machines with the same processor model, the same number of usable
threads, the same instruction set and the same numba/numpy/Python versions
share measurements (a cluster of identical nodes shares one cache); a different
processor, thread count or library version does not. :data:`METHOD` names the
measuring method (the replay kernels and how they are timed): bump it when
either changes, and every older entry stops matching.
"""

from __future__ import annotations

import functools
import os
import platform
from importlib import metadata
from typing import Any

import attrs

from autotm_core.profiler.signature import stable_digest

METHOD = "replay-v1"
"""Version of the measuring method; part of every cache key."""


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "absent"


@attrs.frozen(slots=True)
class MachineContext:
    """What, besides the kernel and its placement, a measured time depends on."""

    cpu_model: str
    """Processor model name (``/proc/cpuinfo``)."""
    threads: int
    """CPUs this process may run on (its affinity mask)."""
    arch: str
    """Instruction set, e.g. ``x86_64``."""
    numpy: str
    """numpy version."""
    numba: str
    """numba version (it compiles the replay kernels)."""
    python: str
    """Python version (major.minor)."""
    method: str = METHOD
    """Version of the measuring method."""

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON object."""
        return attrs.asdict(self)

    @property
    def machine_id(self) -> str:
        """A stable hash of every field (32 hex digits)."""
        return stable_digest(self.to_json())

    @property
    def description(self) -> str:
        """One line for a cost file's ``machine`` field."""
        return f"{self.cpu_model}, {self.threads} threads, {self.arch}"

    @property
    def summary(self) -> str:
        """One line for a cost file's ``context`` field."""
        return (f"measured with {self.method} replay kernels; numpy {self.numpy}, numba "
                f"{self.numba}, python {self.python}; machine id {self.machine_id}")


@functools.cache
def current_context() -> MachineContext:
    """The context of this process."""
    try:
        threads = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        threads = os.cpu_count() or 1
    return MachineContext(
        cpu_model=_cpu_model(), threads=threads, arch=platform.machine(),
        numpy=_version("numpy"), numba=_version("numba"),
        python=".".join(platform.python_version_tuple()[:2]),
    )
