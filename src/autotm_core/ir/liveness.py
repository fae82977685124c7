"""Liveness of a verified graph, computed in one linear pass.

Lifetimes are closed intervals of kernel positions ``[first, last]``:

- a tensor produced by kernel ``p`` is live from ``p``; a tensor that exists
  before the step (parameter, optimizer state, input, constant) from kernel 0;
- it stays live until its last use, or to the last kernel when it survives the
  step (parameter, optimizer state, constant, output).

A kernel's workspace counts towards the live bytes of that kernel only.
"""

from __future__ import annotations

from operator import attrgetter

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.ir.graph import Graph


@attrs.frozen(slots=True, eq=False)
class Liveness:
    """Derived facts about a graph, as NumPy arrays indexed by tensor or kernel position."""

    n_kernels: int
    """Number of kernels."""
    nbytes: IntArray
    """Size of each tensor in bytes."""
    producer: IntArray
    """Kernel that first writes each tensor, or -1 when it exists before the step."""
    first: IntArray
    """First kernel at which each tensor is live."""
    last: IntArray
    """Last kernel at which each tensor is live."""
    use_ptr: IntArray
    """CSR row pointers into :attr:`use_kernels`, one row per tensor."""
    use_kernels: IntArray
    """Kernels touching each tensor (reading or writing), ascending."""
    kernel_ptr: IntArray
    """CSR row pointers into :attr:`kernel_tensors`, one row per kernel."""
    kernel_tensors: IntArray
    """Tensors each kernel touches, inputs first, each once."""
    kernel_reads: BoolArray
    """For each entry of :attr:`kernel_tensors`: the kernel reads it."""
    kernel_writes: BoolArray
    """For each entry of :attr:`kernel_tensors`: the kernel writes it."""
    workspace_nbytes: IntArray
    """Workspace of each kernel."""
    live_nbytes: IntArray
    """Bytes live at each kernel: live tensors plus that kernel's workspace."""

    @property
    def peak_nbytes(self) -> int:
        """Largest :attr:`live_nbytes` over the program (0 for an empty program)."""
        return int(self.live_nbytes.max()) if self.n_kernels else 0

    @property
    def peak_kernel(self) -> int:
        """Position of the first kernel where :attr:`peak_nbytes` is reached."""
        return int(self.live_nbytes.argmax()) if self.n_kernels else -1

    def users(self, tensor: int) -> IntArray:
        """Kernels that read or write tensor position ``tensor``, ascending."""
        return self.use_kernels[self.use_ptr[tensor] : self.use_ptr[tensor + 1]]

    def last_use(self, tensor: int) -> int:
        """Last kernel that touches the tensor, or -1 when none does."""
        users = self.users(tensor)
        return int(users[-1]) if len(users) else -1

    def entry_kernels(self) -> IntArray:
        """Kernel of each entry of :attr:`kernel_tensors`."""
        return np.repeat(np.arange(self.n_kernels, dtype=np.int64), np.diff(self.kernel_ptr))

    def kernel_tensor_slice(self, kernel: int) -> slice:
        """Slice of :attr:`kernel_tensors` for kernel position ``kernel``."""
        return slice(int(self.kernel_ptr[kernel]), int(self.kernel_ptr[kernel + 1]))

    def live_at(self, kernel: int) -> IntArray:
        """Positions of the tensors live at ``kernel``, ascending."""
        return np.flatnonzero((self.first <= kernel) & (self.last >= kernel))

    def is_live(self, tensor: int, kernel: int) -> bool:
        """Whether the tensor is live at the kernel."""
        return bool(self.first[tensor] <= kernel <= self.last[tensor])


def analyse(graph: Graph) -> Liveness:
    """Compute :class:`Liveness`; raises :class:`GraphError` naming every problem first."""
    from autotm_core.ir.verify import check_graph

    check_graph(graph)

    index = graph.tensor_index
    tensors, kernels = graph.tensors, graph.kernels
    n_tensors, n_kernels = len(tensors), len(kernels)
    nbytes = np.fromiter(map(attrgetter("nbytes"), tensors), dtype=np.int64, count=n_tensors)

    # Plain lists in the loop: indexing NumPy arrays one scalar at a time is slow. A verified
    # graph lists no tensor twice among a kernel's inputs or among its outputs, so a kernel's
    # tensors are its inputs, then the outputs that are not also inputs.
    ptr = [0] * (n_kernels + 1)
    entries: list[int] = []
    reads: list[bool] = []
    writes: list[bool] = []
    producer_list = [-1] * n_tensors
    for k, kernel in enumerate(kernels):
        inputs, outputs = kernel.inputs, kernel.outputs
        for name in inputs:
            entries.append(index[name])
            reads.append(True)
            writes.append(name in outputs)
        for name in outputs:
            if name not in inputs:
                t = index[name]
                entries.append(t)
                reads.append(False)
                writes.append(True)
                if producer_list[t] < 0:
                    producer_list[t] = k
        ptr[k + 1] = len(entries)
    kernel_ptr = np.asarray(ptr, dtype=np.int64)
    producer = np.asarray(producer_list, dtype=np.int64)
    kernel_tensors = np.asarray(entries, dtype=np.int64)
    kernel_kernels = np.repeat(np.arange(n_kernels, dtype=np.int64), np.diff(kernel_ptr))

    # Users as CSR, by a stable sort of (tensor, kernel) pairs: kernel order is kept.
    order = np.argsort(kernel_tensors, kind="stable")
    use_kernels = kernel_kernels[order]
    counts = np.bincount(kernel_tensors, minlength=n_tensors)
    use_ptr = np.zeros(n_tensors + 1, dtype=np.int64)
    np.cumsum(counts, out=use_ptr[1:])

    first = np.where(producer >= 0, producer, 0)
    last_use = np.full(n_tensors, -1, dtype=np.int64)
    has_use = counts > 0
    last_use[has_use] = use_kernels[use_ptr[1:][has_use] - 1]
    kinds = list(map(attrgetter("kind"), tensors))
    survives = np.fromiter((k.survives_step for k in kinds), dtype=np.bool_, count=n_tensors)
    pre_existing = np.fromiter(
        (k.exists_before_step for k in kinds), dtype=np.bool_, count=n_tensors
    )
    last = np.maximum(last_use, first)
    if n_kernels:
        last[survives] = n_kernels - 1
    # A tensor nobody produces and that does not pre-exist never exists: empty life.
    last[(producer < 0) & ~pre_existing] = -1

    workspace = np.fromiter(
        map(attrgetter("workspace_nbytes"), kernels), dtype=np.int64, count=n_kernels
    )
    delta = np.zeros(n_kernels + 1, dtype=np.int64)
    if n_kernels:
        np.add.at(delta, first, nbytes)
        np.add.at(delta, last + 1, -nbytes)
    live_nbytes = np.cumsum(delta[:n_kernels]) + workspace

    return Liveness(
        n_kernels=n_kernels,
        nbytes=nbytes,
        producer=producer,
        first=first,
        last=last,
        use_ptr=use_ptr,
        use_kernels=use_kernels,
        kernel_ptr=kernel_ptr,
        kernel_tensors=kernel_tensors,
        kernel_reads=np.asarray(reads, dtype=np.bool_),
        kernel_writes=np.asarray(writes, dtype=np.bool_),
        workspace_nbytes=workspace,
        live_nbytes=live_nbytes,
    )
