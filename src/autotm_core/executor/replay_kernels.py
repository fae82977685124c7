"""autotm-core's own kernels: synthetic replays of each kernel's traffic and compute.

The default :class:`~autotm_core.executor.kernels.KernelRunner`. Its memory is
:class:`~autotm_core.executor.memory.NumaMemory`; a kernel is one call of the
numba kernel :func:`~autotm_core.executor.replay.run_kernel` over the program's
rows (docs/executor.md, "Replay kernels"), which returns the hash of the bytes
it read; a rerun is the same call over the rerun's rows. The steps form a
training loop: before step 0 every tensor existing before the step gets its
initial bytes, before each later step only the inputs get that step's data.
The check replays the graph for as many steps with every tensor in one pool
(:mod:`~autotm_core.executor.check`).
"""

from __future__ import annotations

import numpy as np

from autotm_core.arrays import U64Array
from autotm_core.executor.kernels import KernelsDone, RunSetup
from autotm_core.executor.memory import NumaMemory
from autotm_core.executor.program import arrival, link
from autotm_core.ir import Graph


class ReplayKernels:
    """Replay kernels in NUMA-bound arenas; ``check`` compares with the one-pool replay."""

    name = "replay"
    hashes_reads = True

    def __init__(self, *, check: bool = True) -> None:
        self._check = check
        self._graph: Graph | None = None

    def open(self, setup: RunSetup) -> NumaMemory:
        """Make the arenas and link the program's rows to their addresses."""
        from autotm_core.executor import replay

        memory = NumaMemory(setup.layout.requests)
        program = setup.program
        self._replay = replay
        self._graph = setup.graph
        self._bytes, self._words = memory.space.bytes, memory.space.words
        self._ops = link(program.rows, memory.bases)
        self._initial = link(program.initial, memory.bases)
        self._arriving = link(program.arriving, memory.bases)
        self._ptr = program.kernel_ptr.tolist()
        self._iterations = program.iterations.tolist()
        reruns = program.reruns
        self._rerun_ops = link(np.concatenate([np.zeros((0, 5), dtype=np.int64),
                                               *(r.rows for r in reruns)]), memory.bases)
        self._rerun_ptr = np.cumsum([0, *(len(r.rows) for r in reruns)]).tolist()
        self._rerun_iterations = [self._iterations[r.kernel] for r in reruns]
        return memory

    def begin_step(self, step: int) -> None:
        """Initial bytes before step 0, the inputs' data of the step before a later one."""
        self._replay.initialise(self._bytes, self._words, self._initial if step == 0
                                else arrival(self._arriving, step))

    def run_kernel(self, k: int) -> int:
        """The replay of kernel ``k``: the hash of what it read."""
        return int(self._replay.run_kernel(self._bytes, self._words, self._ops, self._ptr[k],
                                           self._ptr[k + 1], self._iterations[k])[0])

    def run_rerun(self, rerun: int) -> int:
        """Kernel ``program.reruns[rerun].kernel`` replayed again on the rerun's rows: the
        same bytes read give the same bytes written."""
        return int(self._replay.run_kernel(self._bytes, self._words, self._rerun_ops,
                                           self._rerun_ptr[rerun], self._rerun_ptr[rerun + 1],
                                           self._rerun_iterations[rerun])[0])

    def after_kernel(self, k: int) -> None:
        """Nothing to keep: every value stays in the arenas."""

    def finish(self, *, digests: U64Array, final_digests: dict[str, int]) -> KernelsDone:
        """Every step's reads and the final bytes against the one-pool replay's."""
        if not self._check or self._graph is None:
            return KernelsDone(check=None)
        from autotm_core.executor.check import compare, replay_one_pool

        expected, expected_final = replay_one_pool(self._graph, steps=len(digests))
        return KernelsDone(check=compare(digests, final_digests, expected, expected_final))


__all__ = ["ReplayKernels"]
