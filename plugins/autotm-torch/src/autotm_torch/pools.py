"""Memory pools that real ATen kernels run in: the interface, and the executor's NUMA arenas.

:mod:`autotm_torch.real_kernels` asks a :class:`Pools` for the bytes of a
residency (a ``uint8`` tensor over ``nbytes`` at an arena's offset), copies
between residencies (synchronous, or asynchronous with a ticket to wait for),
and time marks. Two kinds exist:

- :class:`NumaPools`: autotm-core's executor arenas (one NUMA-bound,
  pre-faulted mapping per pool, :class:`autotm_core.executor.Space`),
  seen by torch through ``torch.from_numpy``; asynchronous copies on the
  executor's copy thread (:class:`~autotm_core.executor.CopyThread`);
- :class:`~autotm_torch.gpu_pools.TorchPools`: device memory and pinned host
  memory as torch tensors, with a side CUDA stream for asynchronous copies
  (or both pools in CPU memory to test the mechanics where there is no GPU).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import torch

from autotm_core.executor import ArenaRequest, CopyThread, PoolRun, Space
from autotm_core.memory import MemorySystem


class Pools(Protocol):
    """Arenas real kernels read and write, and the copies between them."""

    name: str
    """What the pools are, for reports (``numa``, ``cuda``, ``cpu-test``)."""

    def region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:
        """The ``nbytes`` at ``offset`` of arena ``arena`` as a 1-D ``uint8`` tensor."""
        ...

    def device(self, arena: int) -> torch.device:
        """The device arena ``arena``'s memory is on."""
        ...

    def copy(self, source: torch.Tensor, target: torch.Tensor) -> None:
        """Copy ``source`` into ``target`` before anything that follows (a synchronous move)."""
        ...

    def submit(self, source: torch.Tensor, target: torch.Tensor) -> int:
        """Start an asynchronous copy; returns a ticket for :meth:`wait`."""
        ...

    def wait(self, ticket: int) -> None:
        """Make everything that follows see copy ``ticket`` (and earlier ones) done."""
        ...

    def mark(self) -> object:
        """A time mark on the compute timeline."""
        ...

    def seconds(self, start: object, end: object) -> float:
        """Seconds between two marks (after :meth:`finish`)."""
        ...

    def finish(self) -> None:
        """Wait for every copy and kernel issued so far."""
        ...

    def arenas_made(self) -> tuple[PoolRun, ...]:
        """Each arena as it was made: pool, node, size, and its binding where it has one."""
        ...

    def close(self) -> None:
        """Release the memory."""
        ...


class NumaPools:
    """The executor's NUMA-bound arenas; kernels and copies on this CPU."""

    name = "numa"

    def __init__(
        self, requests: Sequence[ArenaRequest], system: MemorySystem | None = None
    ) -> None:
        """Make the arenas ``requests`` asks for (``system`` is not needed: the nodes are there)."""
        self.space = Space(requests)
        self._requests = tuple(requests)
        self._names = [r.name for r in requests]
        self._copier = CopyThread()

    def region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:
        """Bytes of an arena, shared with the mapping (no copy)."""
        view = self.space.arenas[self._names[arena]].view(offset, nbytes)
        return torch.from_numpy(view)

    def device(self, arena: int) -> torch.device:
        """Always the CPU."""
        return torch.device("cpu")

    def copy(self, source: torch.Tensor, target: torch.Tensor) -> None:
        """A memcpy now."""
        target.copy_(source)

    def submit(self, source: torch.Tensor, target: torch.Tensor) -> int:
        """A memcpy on the copy thread."""
        return self._copier.submit(source.numpy(), target.numpy())

    def wait(self, ticket: int) -> None:
        """Block until the copy thread did ``ticket``."""
        self._copier.wait(ticket)

    def mark(self) -> object:
        """``time.perf_counter_ns()``."""
        return time.perf_counter_ns()

    def seconds(self, start: object, end: object) -> float:
        """Wall seconds between the marks."""
        return (end - start) * 1e-9  # type: ignore[operator]

    def finish(self) -> None:
        """Wait for the copy thread."""
        self._copier.drain()

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
        self._copier.close()
        self.space.close()
