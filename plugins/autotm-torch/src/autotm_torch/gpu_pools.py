"""GPU pools: device memory as the fast pool, pinned host memory as the slower ones.

One zeroed (so pre-faulted) torch ``uint8`` tensor per arena of the plan's layout, each exactly its
size: the fastest pool's arena (and the workspace scratch arena) on the CUDA
device, every other arena in pinned host memory. A region is a slice of its
arena, so kernels write where the plan says.

- A **synchronous** move is ``target.copy_(source)`` on the compute stream:
  ordered after the kernels issued before it and before those after it.
- An **asynchronous** move runs on a side stream: an event recorded on the
  compute stream when it is submitted makes the side stream wait for the
  kernels that wrote its source; the copy is issued with ``non_blocking=True``
  (pinned memory makes it truly asynchronous); an event recorded after it is
  the ticket, and :meth:`TorchPools.wait` makes the compute stream wait for it
  (the host never blocks). Side-stream copies run in order, like the
  executor's copy thread.
- Time marks are CUDA events on the compute stream (read after :meth:`finish`);
  each asynchronous copy is timed by two events on the side stream.

Without CUDA (``device="cpu"``) every arena is an ordinary CPU tensor and the
asynchronous copies run on autotm-core's copy thread: the **CPU test mode**, in
which the mechanics (placements, copies, their order and joins) run for real but
both pools are the same memory. With CUDA present, the slow arenas are pinned
even in this mode.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import SCRATCH, ArenaRequest, CopyThread, PoolRun
from autotm_core.memory import MemorySystem


def cuda_available() -> bool:
    """Whether a CUDA device can be used here."""
    return bool(torch.cuda.is_available())


class TorchPools:
    """Arenas as torch tensors: device + pinned host memory, or CPU memory in test mode."""

    def __init__(
        self,
        requests: Sequence[ArenaRequest],
        system: MemorySystem | None = None,
        *,
        device: str | torch.device | None = None,
    ) -> None:
        """One arena per request; the first (the fastest pool) and the scratch arena on ``device``.

        ``device`` defaults to ``cuda`` when available, else ``cpu`` (test mode).
        """
        self.compute = torch.device(device if device is not None
                                    else ("cuda" if cuda_available() else "cpu"))
        if self.compute.type == "cuda" and not cuda_available():
            raise ExecutionError(
                "GPU pools were asked for on a CUDA device, but CUDA is not available here",
                hint="run on a machine with a GPU and a CUDA build of torch, or use device='cpu' "
                "(the CPU test mode)",
            )
        self.name = "cuda" if self.compute.type == "cuda" else "cpu-test"
        pin = cuda_available()
        self.arenas: list[torch.Tensor] = []
        self._requests = tuple(requests)
        for i, request in enumerate(requests):
            fast = i == 0 or request.name == SCRATCH
            try:
                if fast:
                    arena = torch.zeros(request.nbytes, dtype=torch.uint8, device=self.compute)
                else:
                    arena = torch.zeros(request.nbytes, dtype=torch.uint8, pin_memory=pin)
            except (RuntimeError, MemoryError) as exc:
                where = self.compute if fast else ("pinned host memory" if pin else "cpu")
                raise ExecutionError(
                    f"cannot allocate the {request.nbytes}-byte arena of pool {request.name!r} "
                    f"on {where}: {str(exc).splitlines()[0]}",
                    hint="plan for a smaller capacity of that pool",
                ) from None
            self.arenas.append(arena)
        self._copy_seconds = 0.0
        if self.name == "cuda":
            self._stream = torch.cuda.current_stream(self.compute)
            self._side = torch.cuda.Stream(self.compute)
            self._done: list[torch.cuda.Event] = []
            self._timed: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
        else:
            self._copier = CopyThread()

    def region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:
        """A slice of arena ``arena`` (shares its memory)."""
        memory = self.arenas[arena]
        if offset < 0 or nbytes < 0 or offset + nbytes > memory.numel():
            raise ExecutionError(
                f"bytes {offset}..{offset + nbytes} lie outside arena {arena} "
                f"({memory.numel()} bytes)",
                hint="the plan's offsets must fit the pool's capacity; re-run assign_offsets",
            )
        return memory[offset : offset + nbytes]

    def device(self, arena: int) -> torch.device:
        """The device arena ``arena`` is on."""
        return self.arenas[arena].device

    def copy(self, source: torch.Tensor, target: torch.Tensor) -> None:
        """A copy on the compute stream."""
        target.copy_(source)

    def submit(self, source: torch.Tensor, target: torch.Tensor) -> int:
        """A copy on the side stream (or the copy thread), after what was issued so far."""
        if self.name != "cuda":
            return self._copier.submit(source.numpy(), target.numpy())
        ready = torch.cuda.Event()
        ready.record(self._stream)
        self._side.wait_event(ready)
        begun, done = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begun.record(self._side)
        with torch.cuda.stream(self._side):
            target.copy_(source, non_blocking=True)
        done.record(self._side)
        self._done.append(done)
        self._timed.append((begun, done))
        return len(self._done)

    def wait(self, ticket: int) -> None:
        """Make the compute stream wait for copy ``ticket`` (the copy thread: block for it)."""
        if self.name != "cuda":
            self._copier.wait(ticket)
        else:
            self._stream.wait_event(self._done[ticket - 1])

    def mark(self) -> object:
        """An event on the compute stream (``perf_counter_ns`` in test mode)."""
        if self.name != "cuda":
            return time.perf_counter_ns()
        event = torch.cuda.Event(enable_timing=True)
        event.record(self._stream)
        return event

    def seconds(self, start: object, end: object) -> float:
        """Seconds between two marks."""
        if self.name != "cuda":
            return (end - start) * 1e-9  # type: ignore[operator]
        return start.elapsed_time(end) * 1e-3  # type: ignore[attr-defined]

    def finish(self) -> None:
        """Wait for every kernel and copy issued so far."""
        if self.name != "cuda":
            self._copier.drain()
        else:
            torch.cuda.synchronize(self.compute)
            self._copy_seconds += sum(a.elapsed_time(b) for a, b in self._timed) * 1e-3
            self._timed.clear()
            self._done.clear()

    def copy_seconds(self) -> float:
        """Seconds the asynchronous copies took so far: side-stream event time (the copy
        thread's CPU time in test mode)."""
        if self.name != "cuda":
            return self._copier.copy_ns * 1e-9
        return self._copy_seconds

    def digests(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """A hash (BLAKE2b, 8 bytes) of each row's bytes, read back to the host."""
        out = np.empty(len(rows), dtype=np.uint64)
        for i, (arena, offset, nbytes) in enumerate(rows[:, :3].tolist()):
            data = self.region(arena, offset, nbytes).cpu().numpy().tobytes()
            out[i] = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
        return out

    def arenas_made(self) -> tuple[PoolRun, ...]:
        """Each arena, with no NUMA binding to report (torch allocated it)."""
        return tuple(PoolRun(r.name, r.node, r.nbytes, (), 0, 0) for r in self._requests)

    def close(self) -> None:
        """Release the arenas (and stop the copy thread)."""
        if self.name != "cuda":
            self._copier.close()
        self.arenas = []
