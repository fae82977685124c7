"""What an execution of a plan reports: measured against predicted time, bindings, checksums."""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import FloatArray, U64Array


@attrs.frozen(slots=True)
class PoolRun:
    """One pool's arena as it was made and verified."""

    pool: str
    """Pool name (or the scratch arena's)."""
    node: int
    """NUMA node it was bound to."""
    arena_nbytes: int
    """Size of its arena."""
    policy_nodes: tuple[int, ...]
    """Nodes of its memory policy, as the kernel reports them."""
    sampled_pages: int
    """Pages whose node was queried after pre-faulting."""
    pages_on_node: int
    """How many of those were on :attr:`node`."""


@attrs.frozen(slots=True)
class RerunRun:
    """One rerun of the plan as it ran: which kernel, at which boundary, measured against
    predicted time."""

    kernel: int
    """Position of the kernel run again."""
    before: int
    """Position of the kernel it ran just before."""
    measured_seconds: float
    """Median time it took over the repetitions."""
    predicted_seconds: float
    """Its time as the simulator prices it: its kernel's with every tensor in the fastest
    pool (:func:`~autotm_core.costs.model.rerun_seconds`)."""


@attrs.frozen(slots=True, kw_only=True)
class ResultCheck:
    """A run's results compared with a reference: the replay kernels' bytes with a replay of
    the graph with every tensor in one pool, a framework's kernels with its own eager step."""

    reference: str
    """What the results were compared with (``the one-pool replay``, ``one eager PyTorch
    step``)."""
    matches: bool
    """The results equal the reference's (every kernel read the same bytes and every
    surviving tensor ended the same; or every value within the framework's tolerance)."""
    first_kernel: int = -1
    """First kernel that read different bytes (-1 when none did, or when the check compares
    only the step's results)."""
    tensors: tuple[str, ...] = ()
    """Surviving tensors (or returned values) that differ."""
    step: int = -1
    """Step of the loop in which :attr:`first_kernel` read different bytes (0: the untimed
    first step, then each timed repetition); -1 when none did."""
    detail: str = ""
    """What else the comparison found, for people (the largest difference, a likely cause)."""


@attrs.frozen(slots=True, eq=False)
class ExecutionReport:
    """Measured (median over repetitions) and predicted time of a plan, per kernel and in total."""

    graph: str
    """Graph executed."""
    system: str
    """Memory system the plan was made for (and predicted on)."""
    predicted_for: str
    """Which machine the prediction describes: a preset's published one, or the system file's
    (not necessarily this one)."""
    kernels: str
    """What ran the kernels (:attr:`~autotm_core.executor.kernels.KernelRunner.name`)."""
    planner: str
    """Who made the plan."""
    repeat: int
    """Timed repetitions of the step (medians are over these)."""
    kernel_names: tuple[str, ...]
    """Kernels in order."""
    pools: tuple[PoolRun, ...]
    """Arenas made, pools in system order, then the scratch arena if any."""
    notes: tuple[str, ...]
    """What the measurement should be read with."""
    same_memory: bool
    """Every pool was bound to the same NUMA node: speed differences between pools cannot show."""
    kernel_seconds: FloatArray
    """``(n,)`` median time of each kernel itself."""
    sync_seconds: FloatArray
    """``(n,)`` median time of the synchronous copies before each kernel (reruns apart)."""
    wait_seconds: FloatArray
    """``(n,)`` median time spent waiting for asynchronous copies before each kernel."""
    measured_seconds: FloatArray
    """``(n,)`` median of wait + sync copies + reruns before it + submitting its asynchronous
    copies + kernel, per kernel."""
    step_seconds: FloatArray
    """``(repeat,)`` wall time of each repetition of the whole step."""
    step_on_cpu_seconds: FloatArray
    """``(repeat,)`` on-CPU time of each repetition: the main thread's CPU time plus the wall
    time it spent blocked on asynchronous copies. Time other processes took the core away
    is not in it; on an idle machine it equals :attr:`step_seconds`."""
    predicted_seconds: FloatArray
    """``(n,)`` simulated synchronous copies + reruns before it + effective kernel time, per
    kernel."""
    predicted_step_seconds: float
    """Simulated step time."""
    sync_nbytes: int
    """Bytes copied synchronously per step."""
    async_nbytes: int
    """Bytes copied asynchronously per step."""
    async_copy_seconds: float
    """Median time per step the asynchronous copies took (the copy thread's, or the copy
    stream's)."""
    digests: U64Array
    """``(n,)`` hash of the bytes each kernel read: in the last step when the kernels hash
    what they read (replay), else in the untimed first step (the loop hashes the reads then)."""
    final_digests: dict[str, int]
    """Digest of each surviving tensor's final bytes."""
    check: ResultCheck | None
    """Comparison of the results with the kernels' reference, when it was run; it fails,
    named in its detail, when a rerun read other bytes than its kernel first did."""
    rerun_seconds: FloatArray = attrs.field(factory=lambda: np.zeros(0))
    """``(n,)`` median time of the reruns at the boundary before each kernel (empty: made
    without)."""
    predicted_rerun_seconds: FloatArray = attrs.field(factory=lambda: np.zeros(0))
    """``(n,)`` simulated time of the reruns at the boundary before each kernel."""
    reruns: tuple[RerunRun, ...] = ()
    """Each rerun of the plan, in its order, measured against predicted."""

    @property
    def measured_step_seconds(self) -> float:
        """Median wall time of the step."""
        return float(np.median(self.step_seconds))

    @property
    def on_cpu_step_seconds(self) -> float:
        """Median on-CPU time of the step (see :attr:`step_on_cpu_seconds`)."""
        return float(np.median(self.step_on_cpu_seconds))

    @property
    def on_cpu_fraction(self) -> float:
        """On-CPU over wall time of the step (median): below 1 when other processes ran."""
        measured = self.measured_step_seconds
        return self.on_cpu_step_seconds / measured if measured > 0 else 1.0

    @property
    def error(self) -> float:
        """Relative error of the predicted step time: (predicted - measured) / measured."""
        return _relative(self.predicted_step_seconds, self.measured_step_seconds)

    @property
    def on_cpu_error(self) -> float:
        """Relative error of the predicted step time against the on-CPU step time."""
        return _relative(self.predicted_step_seconds, self.on_cpu_step_seconds)

    @property
    def kernel_errors(self) -> FloatArray:
        """``(n,)`` relative error of each kernel's prediction (0 where nothing was measured)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (self.predicted_seconds - self.measured_seconds) / self.measured_seconds
        return np.where(self.measured_seconds > 0, out, 0.0)

    @property
    def overhead_seconds(self) -> float:
        """Median step time not spent in kernels, reruns, copies or waits: the executor's own
    cost."""
        return self.measured_step_seconds - float(
            self.kernel_seconds.sum() + self.sync_seconds.sum() + self.wait_seconds.sum()
            + self.rerun_seconds.sum()
        )

    @property
    def sync_bytes_per_second(self) -> float:
        """Achieved bandwidth of the synchronous copies (0 without any)."""
        seconds = float(self.sync_seconds.sum())
        return self.sync_nbytes / seconds if seconds > 0 and self.sync_nbytes else 0.0

    @property
    def checksum(self) -> int:
        """One number for every surviving tensor's final bytes."""
        total = 0
        for name in sorted(self.final_digests):
            total = (total * 0x100000001B3 ^ self.final_digests[name]) & 0xFFFFFFFFFFFFFFFF
        return total


def _relative(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured if measured > 0 else 0.0
