"""Memory pools that real ATen kernels run in: the interface, and the executor's NUMA arenas.

:mod:`autotm_torch.real_kernels` runs in the executor's one loop, whose
:class:`autotm_core.executor.Memory` a :class:`Pools` is, with torch tensors for
regions (a ``uint8`` tensor over ``nbytes`` at an arena's offset) and the device
of each arena. Two kinds exist:

- :class:`NumaPools`: autotm-core's NUMA arenas (:class:`autotm_core.executor.NumaMemory`:
  one NUMA-bound, pre-faulted mapping per pool), seen by torch through
  ``torch.from_numpy``; asynchronous copies on the executor's copy thread;
- :class:`~autotm_torch.gpu_pools.TorchPools`: device memory and pinned host
  memory as torch tensors, with a side CUDA stream for asynchronous copies
  (or both pools in CPU memory to test the mechanics where there is no GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

from autotm_core.executor import ArenaRequest, Memory, NumaMemory
from autotm_core.memory import MemorySystem


class Pools(Memory, Protocol):
    """The executor's :class:`~autotm_core.executor.Memory` with torch tensors as regions."""

    def region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:
        """The ``nbytes`` at ``offset`` of arena ``arena`` as a 1-D ``uint8`` tensor."""
        ...

    def device(self, arena: int) -> torch.device:
        """The device arena ``arena``'s memory is on."""
        ...


class NumaPools(NumaMemory):
    """The executor's NUMA-bound arenas, regions as torch tensors; kernels and copies on
    this CPU."""

    def __init__(
        self, requests: Sequence[ArenaRequest], system: MemorySystem | None = None
    ) -> None:
        """Make the arenas ``requests`` asks for (``system`` is not needed: the nodes are there)."""
        super().__init__(requests)

    def region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:  # type: ignore[override]
        """Bytes of an arena, shared with the mapping (no copy)."""
        return torch.from_numpy(super().region(arena, offset, nbytes))

    def device(self, arena: int) -> torch.device:
        """Always the CPU."""
        return torch.device("cpu")

    def copy(self, source: torch.Tensor, target: torch.Tensor) -> None:  # type: ignore[override]
        """A memcpy or a streaming copy now (as the replay kernels' moves)."""
        super().copy(source.numpy(), target.numpy())

    def submit(self, source: torch.Tensor, target: torch.Tensor) -> int:  # type: ignore[override]
        """A copy on the copy thread."""
        return super().submit(source.numpy(), target.numpy())
