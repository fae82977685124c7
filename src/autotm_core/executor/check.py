"""The bytes a graph's replay must produce: the same kernels with every tensor in one pool.

Every tensor gets its own address in one ordinary buffer (no reuse, no moves),
so nothing a plan decides can change what the kernels read. Steps of the loop
follow one another in that buffer as in a run: the tensors existing before the
step get their initial bytes before the first, the inputs each step's data
before every later one, and everything else is where the previous step left it.
A run of a plan that skipped a copy, copied the wrong bytes, used a wrong
offset or lost a tensor between steps reads different bytes somewhere:
:func:`compare` names the first step and kernel that did.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from autotm_core.executor.program import arrival, seed_of
from autotm_core.executor.records import ResultCheck
from autotm_core.executor.rows import READ, SCRATCH, WRITE
from autotm_core.ir import Graph

REFERENCE = "the one-pool replay"
"""What :func:`compare` compares a run with (:attr:`ResultCheck.reference`)."""
ALIGNMENT_NBYTES = 64
"""Alignment of each tensor in the one-pool buffer."""


def replay_one_pool(
    graph: Graph, *, steps: int = 1
) -> tuple[npt.NDArray[np.uint64], dict[str, int]]:
    """Hash of what each kernel reads in each of ``steps`` steps (``(steps, n)``), and the
    final digest of each surviving tensor, in one pool."""
    from autotm_core.executor import replay

    offsets, cursor = {}, 0
    for tensor in graph.tensors:
        offsets[tensor.name] = cursor
        cursor += -(-max(tensor.nbytes, 1) // ALIGNMENT_NBYTES) * ALIGNMENT_NBYTES
    scratch = cursor
    cursor += max((k.workspace_nbytes for k in graph.kernels), default=0)
    space = np.zeros(-(-max(cursor, 8) // 8) * 8, dtype=np.uint8)
    words = space.view(np.uint64)
    live = graph.liveness
    existing = [t for i, t in enumerate(graph.tensors)
                if live.producer[i] < 0 and live.last[i] >= 0]
    initial = _rows([(offsets[t.name], t.nbytes, seed_of(t.name), WRITE) for t in existing])
    arriving = initial[np.array([not t.kind.survives_step for t in existing], dtype=np.bool_)]
    kernel_ops = []
    for kernel in graph.kernels:
        rows = [(offsets[name], graph.tensor(name).nbytes, 0, READ)
                for name in dict.fromkeys(kernel.inputs)]
        rows += [(offsets[name], graph.tensor(name).nbytes, seed_of(name), WRITE)
                 for name in dict.fromkeys(kernel.outputs)]
        if kernel.workspace_nbytes:
            rows.append((scratch, kernel.workspace_nbytes, seed_of(f"workspace:{kernel.name}"),
                         SCRATCH))
        kernel_ops.append(_rows(rows))
    digests = np.zeros((steps, len(graph.kernels)), dtype=np.uint64)
    for step in range(steps):
        replay.initialise(space, words, initial if step == 0 else arrival(arriving, step))
        for k, ops in enumerate(kernel_ops):
            digests[step, k] = replay.run_kernel(space, words, ops, 0, len(ops), 0)[0]
    existed = {t.name for t in existing} | {name for k in graph.kernels for name in k.outputs}
    final = [t for t in graph.tensors if t.kind.survives_step and t.name in existed]
    values = replay.digests(space, words, _rows([(offsets[t.name], t.nbytes, 0, READ)
                                                  for t in final]))
    return digests, {t.name: int(v) for t, v in zip(final, values, strict=True)}


def compare(
    digests: npt.NDArray[np.uint64],
    final: dict[str, int],
    expected_digests: npt.NDArray[np.uint64],
    expected_final: dict[str, int],
) -> ResultCheck:
    """How a run's digests (``(steps, n)``, or ``(n,)`` for one step) compare with the
    one-pool replay's."""
    differ = np.argwhere(np.atleast_2d(digests) != np.atleast_2d(expected_digests))
    tensors = tuple(sorted(name for name in final.keys() | expected_final.keys()
                           if final.get(name) != expected_final.get(name)))
    step, first = (int(differ[0, 0]), int(differ[0, 1])) if len(differ) else (-1, -1)
    return ResultCheck(reference=REFERENCE, matches=first < 0 and not tensors, first_kernel=first,
                       tensors=tensors, step=step)


def _rows(rows: list[tuple[int, int, int, int]]) -> npt.NDArray[np.int64]:
    return np.asarray(rows, dtype=np.int64).reshape(-1, 4)
