"""The rates of one kind of kernels: what a calibration measures with that kind's own code.

``calibrate`` measures latency and copies the same way for every kind of kernels
(they are the executor's, whatever runs the kernels). The compute rate, the read
and write bandwidth and the fixed time of a kernel are the kernels' own, so they
come from a :class:`KernelRates` of the kind the system is to predict
(``calibrate --kernels KIND``):

- ``replay`` (the default, :class:`ReplayRates`): autotm-core's replay kernels,
  their compute rounds (about 1 GFLOP/s) and their read and write loops; no fixed
  time per kernel is measured (their compute dwarfs it);
- a frontend plugin's real kernels: a frontend that is a :class:`RatesSource`
  (the torch plugin: ``calibrate --kernels torch``) measures with its kernels: a
  BLAS matrix multiply for the compute rate, its own reads and writes over the
  same NUMA-bound buffers, and a small step of its kernels that
  :mod:`autotm_core.calibration.overhead` runs through the executor's loop for the
  fixed time per kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from autotm_core.errors import UsageError

if TYPE_CHECKING:
    from autotm_core.executor import KernelRunner
    from autotm_core.ir import Graph

Bytes = npt.NDArray[np.uint8]

REPLAY = "replay"
"""The kind of the replay kernels (``calibrate``'s default)."""


class KernelRates(Protocol):
    """How one kind of kernels is measured (see the module doc)."""

    name: str
    """The kind, as ``--kernels`` names it (``replay``, ``torch``)."""
    method: str
    """How the compute rate, the bandwidths and the fixed time per kernel are measured, in
    words (the memory-system file's ``source`` quotes it)."""

    def compute_rate(self, *, quick: bool, repeat: int) -> float:
        """Floating-point operations per second these kernels compute at."""
        ...

    def read_rate(self, buffer: Bytes, *, repeat: int) -> float:
        """Bytes per second these kernels read all of ``buffer`` at (NUMA-bound, beyond the
        last-level cache)."""
        ...

    def write_rate(self, buffer: Bytes, *, repeat: int) -> float:
        """Bytes per second these kernels write all of ``buffer`` at."""
        ...

    def overhead_step(self) -> tuple[Graph, KernelRunner] | None:
        """A small step of these kernels (its graph and a runner of it) whose run through the
        executor's loop gives the fixed time per kernel; ``None``: no fixed time."""
        ...


@runtime_checkable
class RatesSource(Protocol):
    """A frontend plugin whose real kernels ``calibrate --kernels NAME`` can measure: the
    object its ``autotm_core.frontends`` entry point gives has this method."""

    def kernel_rates(self) -> Any:
        """The :class:`KernelRates` of its kernels on this machine."""
        ...


class ReplayRates:
    """The replay kernels' rates, measured with the replay kernels themselves
    (:mod:`autotm_core.calibration.measure`)."""

    name = REPLAY
    method = ("read and write by the replay kernels' own loops; compute rate of the replay "
              "kernels' compute rounds (a chain of divisions, 4 FLOPs each); times are the "
              "measuring thread's CPU time")

    def compute_rate(self, *, quick: bool, repeat: int) -> float:
        """The replay compute rounds' rate (one thread)."""
        from autotm_core.calibration import measure
        from autotm_core.calibration.calibrate import FULL, QUICK

        iterations = int((QUICK if quick else FULL)["iterations"])
        return measure.compute_rate(iterations=iterations, repeat=repeat)

    def read_rate(self, buffer: Bytes, *, repeat: int) -> float:
        """A replay kernel digesting ``buffer``."""
        from autotm_core.calibration import measure

        return measure.read_rate(buffer, repeat=repeat)

    def write_rate(self, buffer: Bytes, *, repeat: int) -> float:
        """A replay kernel filling ``buffer``."""
        from autotm_core.calibration import measure

        return measure.write_rate(buffer, repeat=repeat)

    def overhead_step(self) -> None:
        """None: a replay kernel computes for milliseconds, its loop takes microseconds."""
        return None


def kernel_rates(kind: str) -> KernelRates:
    """The rates of ``kind``: ``replay``, or the name of a frontend plugin that is a
    :class:`RatesSource` (one :class:`UsageError` otherwise, naming the kinds there are)."""
    if kind == REPLAY:
        return ReplayRates()
    from autotm_core.plugins import get_frontend

    frontend = get_frontend(kind)
    if not isinstance(frontend, RatesSource):
        raise UsageError(f"frontend {kind!r} cannot measure its kernels for a calibration (it "
                         "has no kernel_rates())",
                         hint="give --kernels replay, or the name of a frontend that runs its "
                         "own kernels, e.g. torch")
    rates: KernelRates = frontend.kernel_rates()
    return rates


__all__ = ["REPLAY", "KernelRates", "RatesSource", "ReplayRates", "kernel_rates"]
