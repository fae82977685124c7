"""Timing one kernel's replay in one placement, on NUMA-bound, pre-faulted arenas.

A :class:`Bench` holds one arena per NUMA node the pools use (made with the
executor's :class:`~autotm_core.executor.arena.Space`: bound with ``mbind``,
every page touched, the binding verified), each large enough for any kernel to
put all its tensors there. For a measurement, each tensor is placed, 64-byte
aligned, in its node's arena; the kernel's replay
(:func:`~autotm_core.executor.replay.run_kernel`: reads, writes, workspace,
compute for its FLOPs, exactly what ``run`` executes) runs once untimed, then
``repeat`` times, each timed with ``time.perf_counter_ns``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from autotm_core.executor.arena import ArenaRequest, Space
from autotm_core.executor.program import seed_of
from autotm_core.executor.rows import FLOPS_PER_ITERATION, READ, SCRATCH, WRITE
from autotm_core.profiler.records import Measurement
from autotm_core.profiler.signature import KernelSignature

ALIGNMENT_NBYTES = 64
"""Alignment of every tensor placed in an arena (a cache line)."""


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT_NBYTES) * ALIGNMENT_NBYTES


def footprint(signature: KernelSignature, nodes: Sequence[int], workspace_node: int
              ) -> dict[int, int]:
    """Bytes each node's arena needs to hold the kernel in this placement."""
    need: dict[int, int] = {}
    for tensor, node in zip(signature.tensors, nodes, strict=True):
        need[node] = need.get(node, 0) + _aligned(tensor.nbytes)
    if signature.workspace_nbytes:
        need[workspace_node] = need.get(workspace_node, 0) + _aligned(signature.workspace_nbytes)
    return need


def summarize(samples_seconds: Sequence[float]) -> Measurement:
    """Median, minimum and interquartile range of the repetitions."""
    values = np.asarray(samples_seconds, dtype=np.float64)
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return Measurement(median_seconds=float(q50), min_seconds=float(values.min()),
                       iqr_seconds=float(q75 - q25), repeat=len(values))


class Bench:
    """Arenas for profiling: ``nbytes`` on each node of ``node_nbytes``; close it after use."""

    def __init__(self, node_nbytes: Mapping[int, int]) -> None:
        from autotm_core.executor import replay

        self._replay = replay
        self.nodes = sorted(node_nbytes)
        self.space = Space([ArenaRequest(f"node{n}", max(1, node_nbytes[n]), n)
                            for n in self.nodes])
        self.bases = {n: self.space.arenas[f"node{n}"].base for n in self.nodes}

    def rows(self, signature: KernelSignature, nodes: Sequence[int], workspace_node: int
             ) -> tuple[np.ndarray, np.ndarray]:
        """Replay rows of the kernel in this placement, and the rows of what it reads."""
        cursor = dict.fromkeys(self.nodes, 0)
        reads, writes = [], []
        for i, (tensor, node) in enumerate(zip(signature.tensors, nodes, strict=True)):
            address = self.bases[node] + cursor[node]
            cursor[node] += _aligned(tensor.nbytes)
            seed = seed_of(f"tensor{i}")
            if "r" in tensor.access:
                reads.append((address, tensor.nbytes, seed, READ))
            if "w" in tensor.access:
                writes.append((address, tensor.nbytes, seed, WRITE))
        if signature.workspace_nbytes:
            address = self.bases[workspace_node] + cursor[workspace_node]
            writes.append((address, signature.workspace_nbytes, seed_of("workspace"),
                           SCRATCH))
        table = np.asarray(reads + writes, dtype=np.int64).reshape(-1, 4)
        return table, table[: len(reads)]

    def measure(self, signature: KernelSignature, nodes: Sequence[int], workspace_node: int,
                *, repeat: int) -> list[float]:
        """Seconds of each of ``repeat`` timed runs, after one untimed warm-up."""
        replay = self._replay
        ops, inputs = self.rows(signature, nodes, workspace_node)
        memory, words = self.space.bytes, self.space.words
        iterations = int(np.rint(signature.flops / FLOPS_PER_ITERATION))
        replay.initialise(memory, words, inputs)
        run, clock, n = replay.run_kernel, time.perf_counter_ns, len(ops)
        run(memory, words, ops, 0, n, iterations)
        samples = []
        for _ in range(repeat):
            start = clock()
            run(memory, words, ops, 0, n, iterations)
            samples.append((clock() - start) * 1e-9)
        return samples

    def close(self) -> None:
        """Release the arenas."""
        self.space.close()

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
