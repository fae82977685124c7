"""Offload saved activations: what torchtune's ``OffloadActivations`` (Hugging Face TRL's
``get_act_offloading_ctx_manager``) does.

Every saved activation (:mod:`.saved`) of at least :data:`MIN_OFFLOAD_NBYTES` with a gap
between its last forward and first backward use, that may live in the fastest pool and in a
slower one, is copied to the slowest pool it may live in after its last forward use, by
an asynchronous move, and copied back by a synchronous move just before its first backward
use (on demand, as torchtune reloads it when autograd unpacks it); the copy in the fastest
pool is freed once the copy out is done. Everything else stays in the fastest pool it may
live in for its whole life, with no moves.

The copies out go over one copy stream, in the order their activations were last used, each
after its activation's last forward use and after the copies before it, while the kernels
run (each in the least time its costs give it: with every tensor in the fastest pool, by the
roofline). The program waits for the oldest copy when more than :data:`MAX_IN_FLIGHT` are in
flight (torchtune's ``max_fwd_stash_size``), and for a copy the next kernel reloads. A
plan's asynchronous move overlaps one kernel: each copy is placed on the kernel during which
it completes (or, when the program waits for it, the kernel before the wait; a copy issued
just before the wait becomes a synchronous move there), so the fastest pool holds each
activation as long as the copy stream keeps it there; the simulator charges that kernel the
whole copy (:mod:`autotm_core.simulation`: a kernel costs at least its copies), where a copy
stream hides a copy behind every kernel it overlaps, so the step time is torchtune's or more
when copies outlast kernels.

Raises :class:`CapacityError` when what stays in the fastest pool, the copies in flight and
the reloaded values do not fit (torchtune would run out of memory there too), or when a
bounded slow pool cannot hold the copies.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from autotm_core.arrays import IntArray
from autotm_core.baselines.common import Setting, setting
from autotm_core.baselines.rerun_plan import costs_of
from autotm_core.baselines.saved import saved_activations
from autotm_core.costs.model import KernelCosts, least_kernel_seconds
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, MoveKind, Plan, Residency, make_plan
from autotm_core.units import format_bytes

PLANNER = "baseline/offload-activations"

MIN_OFFLOAD_NBYTES = 1024
"""Smaller activations stay in the fastest pool (torchtune's ``min_offload_size``)."""
MAX_IN_FLIGHT = 5
"""Copies out waiting for the copy stream before the program waits for the oldest
(torchtune's ``max_fwd_stash_size``)."""


def offload_activations(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """The plan of offloading every saved activation (see the module docstring)."""
    s = setting(graph, system, fast_capacity_nbytes, costs)
    saved = saved_activations(graph)
    live = graph.liveness
    rows = [i for i, t in enumerate(saved.tensors.tolist())
            if live.nbytes[t] >= MIN_OFFLOAD_NBYTES and saved.gap_kernels[i] >= 1
            and s.may_be_fast[t] and s.positions(t)[-1] != 0]
    issued, kinds, waits = _schedule(s, costs_of(s, costs), saved.tensors[rows],
                                     saved.last_forward[rows], saved.first_backward[rows])
    names = [pool.name for pool in s.system.pools]
    fast = names[0]
    fastest = s.fastest().tolist()
    first, last = live.first.tolist(), live.last.tolist()
    offloaded = dict(zip(saved.tensors[rows].tolist(),
                         zip(issued, kinds, saved.first_backward[rows].tolist(), strict=True),
                         strict=True))
    residencies: list[Residency] = []
    moves: list[Move] = []
    for t, tensor in enumerate(graph.tensors):
        if first[t] > last[t]:
            continue
        if t not in offloaded:
            residencies.append(Residency(tensor.name, names[fastest[t]], first[t], last[t]))
            continue
        copy, kind, reload = offloaded[t]
        slow = names[s.positions(t)[-1]]
        # an asynchronous copy overlaps kernel ``copy``; a synchronous one runs before it
        residencies += [Residency(tensor.name, fast, first[t],
                                  copy if kind is MoveKind.ASYNC else copy - 1),
                        Residency(tensor.name, slow, copy, reload - 1),
                        Residency(tensor.name, fast, reload, last[t])]
        moves += [Move(tensor.name, fast, slow, copy, kind),
                  Move(tensor.name, slow, fast, reload, MoveKind.SYNC)]
    plan = make_plan(graph, s.system, residencies=residencies, moves=moves, planner=PLANNER,
                     capacities=s.capacities(), attributes={
                         "offloaded_tensors": len(offloaded),
                         "offloaded_nbytes": int(sum(int(live.nbytes[t]) for t in offloaded)),
                         "waits": waits,
                     })
    _check_fits(s, plan)
    if s.allowed is not None:
        s.allowed.check_configs(PLANNER, plan.configs)
    return plan


def _schedule(s: Setting, costs: KernelCosts, tensors: IntArray, last_forward: IntArray,
              first_backward: IntArray) -> tuple[list[int], list[MoveKind], int]:
    """The kernel of each copy out and whether it overlaps that kernel or runs before it
    (see the module doc), and how many times the program waits for one: the copy stream run
    on a clock, each kernel taking the least time its costs give it."""
    live = s.graph.liveness
    kernel_seconds = least_kernel_seconds(costs, live.n_kernels).tolist()
    order = np.lexsort((tensors, last_forward)).tolist()
    last, reload = last_forward.tolist(), first_backward.tolist()
    copy_seconds = [s.system.copy_seconds(int(live.nbytes[t]), 0, s.positions(int(t))[-1],
                                          asynchronous=True) for t in tensors.tolist()]
    placed = [-1] * len(order)
    kinds = [MoveKind.ASYNC] * len(order)
    flying: deque[tuple[int, float]] = deque()  # (copy, when it is done), in issue order
    clock = stream = 0.0
    at = waits = 0
    for k in range(live.n_kernels):
        while len(flying) > MAX_IN_FLIGHT:  # the stash is full: wait for the oldest
            i, done = flying.popleft()
            placed[i] = max(k - 1, last[i] + 1)
            if placed[i] == k:  # issued just before: the program copies it before kernel k
                kinds[i] = MoveKind.SYNC
            clock = max(clock, done)
            waits += 1
        end = clock + kernel_seconds[k]
        due = max((n for n, (i, _) in enumerate(flying) if reload[i] == k + 1), default=-1)
        for n in range(len(flying)):
            i, done = flying[0]
            if done > end and n > due:
                break
            flying.popleft()
            placed[i] = k
            if done > end:
                waits += 1  # reloaded by the next kernel: this one waits for it
                end = done
        clock = end
        while at < len(order) and last[order[at]] == k:
            i = order[at]
            stream = max(stream, clock) + copy_seconds[i]
            flying.append((i, stream))
            at += 1
    return placed, kinds, waits


def _check_fits(s: Setting, plan: Plan) -> None:
    """:class:`CapacityError` naming the first bounded pool the plan overfills (as the
    verifier counts: a copy occupies both pools while it moves)."""
    live = s.graph.liveness
    n = live.n_kernels
    index = s.graph.tensor_index
    sync_in = {(m.tensor, m.target, m.kernel) for m in plan.moves if m.kind is MoveKind.SYNC}
    sync_out = {(m.tensor, m.source, m.kernel) for m in plan.moves if m.kind is MoveKind.SYNC}
    for p, pool in enumerate(s.system.pools):
        if pool.capacity_nbytes is None:
            continue
        delta = np.zeros(2 * n + 2, dtype=np.int64)
        for r in plan.residencies:
            if r.pool != pool.name:
                continue
            start = 2 * r.first + 1 - ((r.tensor, r.pool, r.first) in sync_in)
            end = 2 * r.last + 1 + ((r.tensor, r.pool, r.last + 1) in sync_out)
            nbytes = int(live.nbytes[index[r.tensor]])
            delta[start] += nbytes
            delta[end + 1] -= nbytes
        use = np.cumsum(delta)[:2 * n]
        if p == 0:
            use[1::2] += live.workspace_nbytes
        step = int(use.argmax())
        if int(use[step]) > pool.capacity_nbytes:
            k = step // 2
            where = f"kernel {s.graph.kernels[k].name!r} (#{k})"
            if step % 2 == 0:
                where = f"the boundary before {where}"
            over = int(use[step]) - pool.capacity_nbytes
            raise CapacityError(
                f"offload-activations does not fit: pool {pool.name!r} needs "
                f"{format_bytes(int(use[step]))} at {where} but holds "
                f"{format_bytes(pool.capacity_nbytes)}: {format_bytes(over)} ({over} bytes) "
                "too much",
                hint=f"give pool {pool.name!r} at least {int(use[step])} bytes, or use a "
                "planner that also moves or recomputes what offloading keeps")
