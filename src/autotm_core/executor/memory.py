"""The executor's NUMA-bound arenas as a run's :class:`~autotm_core.executor.kernels.Memory`.

One :class:`~autotm_core.executor.Space` (every arena of the layout, bound and
pre-faulted) and one :class:`~autotm_core.executor.CopyThread`. Regions are
NumPy ``uint8`` views of the arenas; a synchronous copy is ``np.copyto`` or the
streaming copy (:func:`~autotm_core.executor.copy.copy_for`), an asynchronous
one goes to the copy thread; time marks are ``time.perf_counter_ns``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from autotm_core.arrays import IntArray, U64Array
from autotm_core.executor.arena import ArenaRequest, Space
from autotm_core.executor.copy import CopyThread, copy_for
from autotm_core.executor.program import link
from autotm_core.executor.records import PoolRun


class NumaMemory:
    """NUMA-bound arenas on this CPU, with a copy thread."""

    name = "numa"

    def __init__(self, requests: Sequence[ArenaRequest]) -> None:
        """Make, bind and pre-fault the arenas ``requests`` asks for."""
        self.space = Space(requests)
        """The arenas (one mapping); the replay kernels address it by byte."""
        try:
            self.copier = CopyThread()
        except BaseException:
            self.space.close()
            raise
        self._requests = tuple(requests)
        self.bases = np.array([self.space.arenas[r.name].base for r in requests], dtype=np.int64)
        """Byte address in :attr:`space` of each arena (for :func:`~.program.link`)."""

    def region(self, arena: int, offset: int, nbytes: int) -> npt.NDArray[np.uint8]:
        """A view of the arena's bytes (no copy)."""
        return self.space.arenas[self._requests[arena].name].view(offset, nbytes)

    def copy(self, source: npt.NDArray[np.uint8], target: npt.NDArray[np.uint8]) -> None:
        """A ``memcpy`` or a streaming copy, now."""
        copy_for(target.nbytes)(target, source)

    def submit(self, source: npt.NDArray[np.uint8], target: npt.NDArray[np.uint8]) -> int:
        """A copy on the copy thread."""
        return self.copier.submit(source, target)

    def wait(self, ticket: int) -> None:
        """Block until the copy thread did ``ticket``."""
        self.copier.wait(ticket)

    def mark(self) -> int:
        """``time.perf_counter_ns()``."""
        return time.perf_counter_ns()

    def seconds(self, start: int, end: int) -> float:
        """Wall seconds between the marks."""
        return (end - start) * 1e-9

    def finish(self) -> None:
        """Wait for the copy thread."""
        self.copier.drain()

    def copy_seconds(self) -> float:
        """The copy thread's CPU time spent copying so far."""
        return self.copier.copy_ns * 1e-9

    def digests(self, rows: IntArray) -> U64Array:
        """The replay kernels' digest of each row's bytes."""
        from autotm_core.executor import replay

        return replay.digests(self.space.bytes, self.space.words, link(rows, self.bases))

    def arenas_made(self) -> tuple[PoolRun, ...]:
        """Each arena with its binding as verified after pre-faulting."""
        made = []
        for request in self._requests:
            binding = self.space.arenas[request.name].binding
            made.append(PoolRun(request.name, request.node, request.nbytes,
                                binding.policy_nodes, binding.sampled_pages,
                                binding.pages_on_node))
        return tuple(made)

    def close(self) -> None:
        """Stop the copy thread and unmap the arenas."""
        self.copier.close()
        self.space.close()
