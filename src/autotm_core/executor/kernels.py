"""What the executor's one run loop plugs in: the memory a plan runs in and the kernels it runs.

:func:`~autotm_core.executor.execute` runs every plan with one loop
(:class:`~autotm_core.executor.run.StepLoop`): the joins, synchronous and
asynchronous copies, time marks, repetitions and the whole
:class:`~autotm_core.executor.ExecutionReport` are its own. What a kernel *is*
comes from a :class:`KernelRunner`: autotm-core's replay kernels
(:class:`~autotm_core.executor.replay_kernels.ReplayKernels`, the default), or a
plugin's, e.g. the torch frontend's real ATen kernels. The runner makes the
:class:`Memory` the plan's arenas live in (NUMA-bound arenas,
:class:`~autotm_core.executor.memory.NumaMemory`; device and pinned host memory),
writes the values that exist before each step, runs kernel ``k`` when the loop
says so (and again, for a plan's reruns, where the program puts its inputs and outputs at
the rerun's boundary), and checks the results against a reference once the run is over.

A frontend plugin offers its kernels to ``run --kernels NAME:SPEC`` by being a
:class:`KernelSource` (a method ``kernel_runner``), checked with ``isinstance``
on the object its ``autotm_core.frontends`` entry point gives: no other entry
point group is involved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

if TYPE_CHECKING:
    from autotm_core.arrays import IntArray, U64Array
    from autotm_core.executor.layout import Layout
    from autotm_core.executor.program import Program
    from autotm_core.executor.records import PoolRun, ResultCheck
    from autotm_core.ir import Graph
    from autotm_core.memory import MemorySystem
    from autotm_core.plans.model import Plan


@attrs.frozen(slots=True)
class RunSetup:
    """What a :class:`KernelRunner` is handed when a run starts (nothing has run yet)."""

    plan: Plan
    """The plan, verified."""
    graph: Graph
    """The graph it was made for."""
    system: MemorySystem
    """The memory system it was made for."""
    layout: Layout
    """Where every arena, residency and workspace goes on this machine."""
    program: Program
    """The plan resolved to arenas and offsets: each kernel's rows, copies and joins."""


@attrs.frozen(slots=True)
class KernelsDone:
    """What a :class:`KernelRunner` says once every step has run."""

    check: ResultCheck | None
    """Its results compared with its reference (``None``: the caller asked for no check)."""
    notes: tuple[str, ...] = ()
    """What the run should be read with (which kernels ran how), for the report."""


class Memory(Protocol):
    """The arenas of a run (one per :class:`~autotm_core.executor.ArenaRequest` of the layout)
    and the copies between them. A *region* is whatever the kernels read and write (a NumPy
    ``uint8`` view, a torch tensor): the loop only hands regions back to :meth:`copy` and
    :meth:`submit`."""

    name: str
    """What the memory is, for reports (``numa``, ``cuda``, ``cpu-test``)."""

    def region(self, arena: int, offset: int, nbytes: int) -> Any:
        """The ``nbytes`` at ``offset`` of arena ``arena`` (shares its memory)."""
        ...

    def copy(self, source: Any, target: Any) -> None:
        """Copy region ``source`` into ``target`` before anything that follows (a synchronous
        move)."""
        ...

    def submit(self, source: Any, target: Any) -> int:
        """Start an asynchronous copy; returns a ticket for :meth:`wait` (1, 2, ... in order)."""
        ...

    def wait(self, ticket: int) -> None:
        """Make everything that follows see copy ``ticket`` (and earlier ones) done."""
        ...

    def mark(self) -> Any:
        """A time mark on the compute timeline."""
        ...

    def seconds(self, start: Any, end: Any) -> float:
        """Seconds between two marks (after :meth:`finish`)."""
        ...

    def finish(self) -> None:
        """Wait for every copy and kernel issued so far."""
        ...

    def copy_seconds(self) -> float:
        """Seconds the asynchronous copies have taken so far, in all (after :meth:`finish`)."""
        ...

    def digests(self, rows: IntArray) -> U64Array:
        """A 64-bit hash of the bytes of each row (arena, offset, nbytes, ...) of a
        :class:`~autotm_core.executor.Program`'s tables."""
        ...

    def arenas_made(self) -> tuple[PoolRun, ...]:
        """Each arena as it was made: pool, node, size, and its binding where it has one."""
        ...

    def close(self) -> None:
        """Release the memory (and any copy thread)."""
        ...


class KernelRunner(Protocol):
    """The kernels of a run: how a plugin runs a plan's kernels in the executor's loop.

    The loop calls :meth:`open` once, then for each step :meth:`begin_step` (untimed), and
    for each kernel, after its joins and copies, :meth:`run_rerun` for each rerun at the
    boundary before it (timed), then :meth:`run_kernel` (timed) and :meth:`after_kernel`
    (untimed but inside the step); :meth:`finish` after the last step, with the memory still
    open. A step is ``0`` (the untimed warm-up) to ``repeat``. A runner without
    :meth:`run_rerun` runs plans without reruns only (:func:`~autotm_core.executor.execute`
    refuses the others, naming it).
    """

    name: str
    """What the kernels are, for reports (``replay``, ``torch``)."""
    hashes_reads: bool
    """Whether :meth:`run_kernel` returns a hash of the bytes it read as it read them (the
    replay kernels do). Otherwise the loop hashes each kernel's reads itself, before the
    kernel, in the untimed warm-up step only."""

    def open(self, setup: RunSetup) -> Memory:
        """Make the memory of ``setup.layout.requests`` and resolve every kernel in it."""
        ...

    def begin_step(self, step: int) -> None:
        """Write what exists before step ``step`` (its inputs; everything before step 0)."""
        ...

    def run_kernel(self, k: int) -> int:
        """Run kernel ``k``; the hash of the bytes it read if :attr:`hashes_reads`, else 0."""
        ...

    def run_rerun(self, rerun: int) -> int:
        """Run rerun ``rerun`` (a position in ``setup.program.reruns``): its kernel again on
        the inputs and outputs of its rows (:class:`~autotm_core.executor.program.RerunOps`);
        the hash of the bytes it read if :attr:`hashes_reads`, else 0."""
        ...

    def after_kernel(self, k: int) -> None:
        """Keep what must be read right after kernel ``k`` (a returned value whose memory a
        later kernel reuses)."""
        ...

    def finish(self, *, digests: U64Array, final_digests: dict[str, int]) -> KernelsDone:
        """Check the run against the runner's reference: ``digests`` are the hashes of what
        each kernel read, ``(steps, n)``, ``final_digests`` those of every surviving tensor's
        final bytes."""
        ...


@runtime_checkable
class KernelSource(Protocol):
    """A frontend plugin whose captures can run plans with their own kernels
    (``run --kernels NAME:SPEC``)."""

    def kernel_runner(self, spec: str, **options: Any) -> KernelRunner:
        """The kernels of ``spec``, captured again with ``options`` as ``load(spec, **options)``
        would; the runner checks in :meth:`KernelRunner.open` that the capture is the plan's
        graph."""
        ...


__all__ = ["KernelRunner", "KernelSource", "KernelsDone", "Memory", "RunSetup"]
