"""Random valid plans whose asynchronous copies span kernels, for property tests.

``random_spanning_plan`` walks each tensor through its life as ``random_plan`` does, but an
asynchronous copy may stay in flight for up to ``max_span`` kernels: its destination is
reserved from issue, its source kept until it completes, no kernel of its flight writes the
tensor, and nothing reads its target before it completes (the tensor does not move again
meanwhile; its kernels use the source copy). Every choice follows the rules of
``autotm_core.plans.model``, so the verifier must accept the result.
"""

from __future__ import annotations

import numpy as np

from autotm_core import Graph, MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan

from .random_plans import _come_home, _keep_only_written_copy, _start_pools


def random_spanning_plan(graph: Graph, system: MemorySystem, seed: int, *,
                         move_rate: float = 0.35, max_span: int = 4) -> Plan:
    """A random plan following every rule whose async copies span 1..``max_span`` kernels
    (capacities: the system's, assumed roomy)."""
    rng = np.random.default_rng(seed)
    live = graph.liveness
    names = [pool.name for pool in system.pools]
    owner = np.repeat(np.arange(len(graph.kernels)), np.diff(live.kernel_ptr))
    writes = set(zip(live.kernel_tensors[live.kernel_writes].tolist(),
                     owner[live.kernel_writes].tolist(), strict=True))
    residencies: list[Residency] = []
    moves: list[Move] = []
    for t, tensor in enumerate(graph.tensors):
        first, last = int(live.first[t]), int(live.last[t])
        if last < first:
            continue
        allowed = [p for p in range(len(names))
                   if tensor.pools is None or names[p] in tensor.pools]
        starts = _start_pools(rng, allowed, tensor.kind,
                              several=last > 0 and (t, last) not in writes)
        open_: dict[int, int] = dict.fromkeys(starts, first)  # pool -> first kernel
        homes = starts if tensor.kind.exists_before_step and tensor.kind.survives_step else []
        # a tensor coming home before its last kernel has every copy landed by then
        latest = last if homes else last + 1
        busy_until = first  # no move while a copy of the tensor is in flight
        for k in range(first, last + 1):
            written = (t, k) in writes
            if homes and k == last and k > 0:
                _come_home(tensor.name, names, homes, open_, k, written, residencies, moves)
                continue
            if k < busy_until:
                continue  # the random walk issued no copy over a write
            if rng.random() >= move_rate:
                if written:
                    _keep_only_written_copy(tensor.name, names, open_, k, residencies, set())
                continue
            kind = MoveKind.ASYNC if rng.random() < 0.6 and not written else MoveKind.SYNC
            sources = [p for p, start in open_.items()
                       if (start <= k - 1 if kind is MoveKind.SYNC else start < k)]
            targets = [p for p in allowed if p not in open_]
            if not sources or not targets or (kind is MoveKind.ASYNC and k + 1 > latest):
                if written:
                    _keep_only_written_copy(tensor.name, names, open_, k, residencies, set())
                continue
            source, target = int(rng.choice(sources)), int(rng.choice(targets))
            until = k
            if kind is MoveKind.ASYNC:
                until = k + 1
                while (until - k < max_span and until < latest and (t, until) not in writes
                       and rng.random() < 0.7):
                    until += 1
                busy_until = until
            moves.append(Move(tensor.name, names[source], names[target], k, kind, until=until))
            open_[target] = k
            if rng.random() < 0.6:  # drop the source copy once the move is done
                end = k - 1 if kind is MoveKind.SYNC else until - 1
                residencies.append(Residency(tensor.name, names[source], open_.pop(source), end))
            if written:
                _keep_only_written_copy(tensor.name, names, open_, k, residencies, set())
        for p, start in open_.items():
            residencies.append(Residency(tensor.name, names[p], start, last))
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="random-spans")
