"""Random valid plans for property tests, and small hand-made fixtures.

``random_plan`` walks each tensor through its life, choosing at random when it
moves, to which pool, synchronously or not, and whether it keeps a clean copy
where it was; every choice respects the rules of ``autotm_core.plans.model``,
so the verifier must accept the result.
"""

from __future__ import annotations

import numpy as np

from autotm_core import Graph, GraphBuilder, MemorySystem
from autotm_core.ir import TensorKind
from autotm_core.memory import CopyLink, Pool
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan


def tiny_system(fast_nbytes: int | None = 1000) -> MemorySystem:
    """Two pools: a small fast one and an unbounded slow one, 10x slower to reach."""
    return MemorySystem(
        name="tiny-system",
        pools=(Pool("fast", fast_nbytes, 100e9, 100e9), Pool("slow", None, 10e9, 5e9)),
        links=(CopyLink("slow", "fast", 8e9, 4e9), CopyLink("fast", "slow", 6e9, 3e9)),
    )


def three_pools() -> MemorySystem:
    """HBM, DRAM and PMM, all bounded but roomy."""
    return MemorySystem(
        name="three-pools",
        pools=(
            Pool("hbm", 1 << 30, 1e12, 1e12),
            Pool("dram", 1 << 32, 1e11, 1e11),
            Pool("pmm", 1 << 34, 3e10, 1e10),
        ),
    )


def tiny_graph() -> Graph:
    """Four kernels; ``loss`` may only live in ``fast``.

    Lives: x 0..0, w 0..3, a 0..3, b 1..2, c 2..3, loss 3..3; k1 has 16 bytes of workspace.
    """
    g = GraphBuilder("tiny")
    x = g.tensor("x", nbytes=100, kind="input")
    w = g.tensor("w", nbytes=50, kind="parameter")
    a = g.tensor("a", nbytes=200)
    b = g.tensor("b", nbytes=300)
    c = g.tensor("c", nbytes=100)
    loss = g.tensor("loss", nbytes=8, kind="output", pools=["fast"])
    g.kernel("k0", op="layer", inputs=[x, w], outputs=[a])
    g.kernel("k1", op="relu", inputs=[a], outputs=[b], workspace_nbytes=16)
    g.kernel("k2", op="layer", inputs=[w, b], outputs=[c])
    g.kernel("k3", op="loss", inputs=[a, c], outputs=[loss])
    return g.build()


def tiny_plan(*, a_move: str = "async", offsets: bool = False) -> Plan:
    """A valid plan for :func:`tiny_graph` on :func:`tiny_system`.

    ``w`` starts in slow and is copied to fast before k2; ``a`` goes to slow either during
    k1 (``a_move="async"``) or just before k2 (``"sync"``).
    """
    graph, system = tiny_graph(), tiny_system()
    if a_move == "async":
        a_spans = [Residency("a", "fast", 0, 1), Residency("a", "slow", 1, 3)]
        a_moves = [Move("a", "fast", "slow", 1, MoveKind.ASYNC)]
    else:
        a_spans = [Residency("a", "fast", 0, 1), Residency("a", "slow", 2, 3)]
        a_moves = [Move("a", "fast", "slow", 2, MoveKind.SYNC)]
    residencies = [
        Residency("x", "fast", 0, 0, 0 if offsets else None),
        Residency("w", "slow", 0, 3),
        Residency("w", "fast", 2, 2, 800 if offsets else None),
        *a_spans,
        Residency("b", "fast", 1, 2, 300 if offsets else None),
        Residency("c", "fast", 2, 3, 600 if offsets else None),
        Residency("loss", "fast", 3, 3, 0 if offsets else None),
    ]
    if offsets:
        residencies[3] = Residency("a", "fast", 0, 1, 100)
    return make_plan(
        graph,
        system,
        residencies=residencies,
        moves=[Move("w", "slow", "fast", 2), *a_moves],
        planner="hand",
    )


def random_plan(graph: Graph, system: MemorySystem, seed: int, *, move_rate: float = 0.3) -> Plan:
    """A random plan that follows every rule (capacities: the system's, assumed roomy).

    A tensor that exists before the step and survives it begins in one or more "home" pools
    and is copied back into each before the last kernel; an input begins in one pool.
    """
    rng = np.random.default_rng(seed)
    live = graph.liveness
    n_pools = len(system.pools)
    names = [pool.name for pool in system.pools]
    residencies: list[Residency] = []
    moves: list[Move] = []
    owner = np.repeat(np.arange(len(graph.kernels)), np.diff(live.kernel_ptr))
    writes = set(zip(live.kernel_tensors[live.kernel_writes].tolist(),
                     owner[live.kernel_writes].tolist(), strict=True))
    for t, tensor in enumerate(graph.tensors):
        first, last = int(live.first[t]), int(live.last[t])
        if last < first:
            continue
        allowed = [p for p in range(n_pools) if tensor.pools is None or names[p] in tensor.pools]
        starts = _start_pools(rng, allowed, tensor.kind,
                              several=last > 0 and (t, last) not in writes)
        open_: dict[int, int] = dict.fromkeys(starts, first)  # pool -> first kernel
        surviving = tensor.kind.exists_before_step and tensor.kind.survives_step
        homes = starts if surviving else []
        for k in range(first, last + 1):
            written = (t, k) in writes
            if homes and k == last and k > 0:
                _come_home(tensor.name, names, homes, open_, k, written, residencies, moves)
                continue
            if rng.random() >= move_rate:
                if written:
                    _keep_only_written_copy(tensor.name, names, open_, k, residencies, set())
                continue
            kind = MoveKind.ASYNC if rng.random() < 0.5 and not written else MoveKind.SYNC
            # Sync moves copy from a residency that covers k-1; async ones from one that covers
            # k and is not itself still arriving during k.
            sources = [
                p
                for p, start in open_.items()
                if (start <= k - 1 if kind is MoveKind.SYNC else start < k)
            ]
            targets = [p for p in allowed if p not in open_]
            if not sources or not targets:
                if written:
                    _keep_only_written_copy(tensor.name, names, open_, k, residencies, set())
                continue
            source, target = int(rng.choice(sources)), int(rng.choice(targets))
            moves.append(Move(tensor.name, names[source], names[target], k, kind))
            open_[target] = k
            if rng.random() < 0.6:  # drop the source copy once the move is done
                end = k - 1 if kind is MoveKind.SYNC else k
                residencies.append(Residency(tensor.name, names[source], open_.pop(source), end))
            if written:
                in_flight = {target} if kind is MoveKind.ASYNC else set()
                _keep_only_written_copy(tensor.name, names, open_, k, residencies, in_flight)
        for p, start in open_.items():
            residencies.append(Residency(tensor.name, names[p], start, last))
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="random")


def _start_pools(rng: np.random.Generator, allowed: list[int], kind: TensorKind,
                 *, several: bool) -> list[int]:
    """The pools a tensor begins in: one, or maybe two for one existing before and after."""
    if kind.exists_before_step and kind.survives_step and several and len(allowed) > 1 \
            and rng.random() < 0.3:
        return sorted(int(p) for p in rng.choice(allowed, size=2, replace=False))
    return [int(rng.choice(allowed))]


def _come_home(tensor: str, names: list[str], homes: list[int], open_: dict[int, int], k: int,
               written: bool, residencies: list[Residency], moves: list[Move]) -> None:
    """At the last kernel ``k``, copy the tensor back into each home pool (sync, before ``k``).

    Every open copy holds the current value here. When ``k`` writes the tensor it has one
    home, and every other copy ends at ``k - 1`` so that ``k`` writes into the home.
    """
    source = min(open_)
    for home in homes:
        if home not in open_:
            moves.append(Move(tensor, names[source], names[home], k))
            open_[home] = k
    if written:
        for p in [p for p in open_ if p not in homes]:
            residencies.append(Residency(tensor, names[p], open_.pop(p), k - 1))


def _keep_only_written_copy(tensor: str, names: list[str], open_: dict[int, int], k: int,
                            residencies: list[Residency], in_flight: set[int]) -> None:
    """Kernel ``k`` writes the tensor in its fastest usable copy: every other copy ends at ``k``."""
    usable = [p for p, start in open_.items() if start <= k and p not in in_flight]
    written = min(usable)
    for p in [p for p in open_ if p != written]:
        residencies.append(Residency(tensor, names[p], open_.pop(p), k))
