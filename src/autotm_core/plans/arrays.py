"""A plan as NumPy arrays of positions, the form the verifier and the simulator work on.

Names become positions once (tensor position in ``graph.tensors``, pool
position in ``system.pools``, kernel position); a record naming something
unknown is left out and reported, so that every later check is vectorised.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import MoveKind, Plan

NO_OFFSET = np.iinfo(np.int64).min
"""What :attr:`PlanArrays.res_offset` holds for a residency without an address."""

MAX_MAGNITUDE = 1 << 62
"""Kernel positions and byte offsets of a plan are refused from this magnitude on."""

NOWHERE = "?"
"""The pool name :func:`autotm_core.plans.kernel_configs` writes for a tensor resident nowhere."""


@attrs.frozen(slots=True, eq=False)
class PlanArrays:
    """The known records of a plan, as parallel arrays of positions."""

    n_kernels: int
    """Kernels of the graph."""
    n_pools: int
    """Pools of the memory system."""
    res_index: IntArray
    """Position of each kept residency in ``plan.residencies``."""
    res_tensor: IntArray
    """Tensor position of each kept residency."""
    res_pool: IntArray
    """Pool position of each kept residency."""
    res_first: IntArray
    """First kernel of each kept residency."""
    res_last: IntArray
    """Last kernel of each kept residency."""
    res_offset: IntArray
    """Byte address of each kept residency, :data:`NO_OFFSET` when it has none."""
    move_index: IntArray
    """Position of each kept move in ``plan.moves``."""
    move_tensor: IntArray
    """Tensor position of each kept move."""
    move_source: IntArray
    """Source pool position of each kept move."""
    move_target: IntArray
    """Target pool position of each kept move."""
    move_kernel: IntArray
    """Kernel of each kept move (sync: before it; async: during it)."""
    move_async: BoolArray
    """Whether each kept move is asynchronous."""
    move_until: IntArray
    """Kernel before which each kept move is complete (async: ``move_kernel + 1`` for a
    one-kernel copy, later for one spanning kernels; sync: ``move_kernel``)."""
    entry_pools: IntArray
    """Pool of each entry of ``liveness.kernel_tensors`` per ``plan.configs``; -1 when unknown."""
    rerun_kernel: IntArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    """Kernel run again by each rerun whose kernels lie inside the program, in plan order."""
    rerun_before: IntArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    """The kernel each such rerun runs just before."""
    rerun_index: IntArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    """Position of each such rerun in ``plan.reruns``."""

    def group(self, tensor: IntArray, pool: IntArray) -> IntArray:
        """One integer per (tensor, pool) pair."""
        return tensor * self.n_pools + pool

    def key(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> IntArray:
        """One integer per (tensor, pool, kernel) triple (kernel in ``-1 .. n_kernels``)."""
        return self.group(tensor, pool) * (self.n_kernels + 2) + (kernel + 1)

    def key_of(self, tensor: int, pool: int, kernel: int) -> int:
        """:meth:`key` of one triple."""
        return (tensor * self.n_pools + pool) * (self.n_kernels + 2) + (kernel + 1)


def encode_plan(plan: Plan, graph: Graph, system: MemorySystem) -> tuple[PlanArrays, list[str]]:
    """The plan's records as arrays, and a problem for each record naming something unknown."""
    problems: list[str] = []
    tensors = graph.tensor_index
    pools = {pool.name: i for i, pool in enumerate(system.pools)}
    known_pools = ", ".join(pools)

    rs = plan.residencies
    res_t = _positions(map(attrgetter("tensor"), rs), tensors, len(rs))
    res_p = _positions(map(attrgetter("pool"), rs), pools, len(rs))
    for i in np.flatnonzero((res_t < 0) | (res_p < 0)):
        r = rs[i]
        if res_t[i] < 0:
            problems.append(f"residencies[{i}]: tensor {r.tensor!r} is not in graph {graph.name!r}")
        else:
            problems.append(
                f"residencies[{i}]: tensor {r.tensor!r} is in pool {r.pool!r}, which memory system "
                f"{system.name!r} does not have (its pools: {known_pools})"
            )
    res_first, first_ok = _numbers(list(map(attrgetter("first"), rs)),
                                   lambda i: f"residencies[{i}]: first", problems)
    res_last, last_ok = _numbers(list(map(attrgetter("last"), rs)),
                                 lambda i: f"residencies[{i}]: last", problems)
    res_keep = np.flatnonzero((res_t >= 0) & (res_p >= 0) & first_ok & last_ok)
    offsets = list(map(attrgetter("offset"), rs))
    no_offset = np.fromiter((o is None for o in offsets), np.bool_, len(rs))
    res_offset, offset_ok = _numbers([0 if o is None else o for o in offsets],
                                     lambda i: f"residencies[{i}]: offset", problems)
    res_offset[no_offset | ~offset_ok] = NO_OFFSET

    ms = plan.moves
    mv_t = _positions(map(attrgetter("tensor"), ms), tensors, len(ms))
    mv_s = _positions(map(attrgetter("source"), ms), pools, len(ms))
    mv_d = _positions(map(attrgetter("target"), ms), pools, len(ms))
    for i in np.flatnonzero((mv_t < 0) | (mv_s < 0) | (mv_d < 0)):
        m = ms[i]
        if mv_t[i] < 0:
            problems.append(f"moves[{i}]: tensor {m.tensor!r} is not in graph {graph.name!r}")
        else:
            bad = m.source if mv_s[i] < 0 else m.target
            problems.append(
                f"moves[{i}]: move of tensor {m.tensor!r} names pool {bad!r}, which memory system "
                f"{system.name!r} does not have (its pools: {known_pools})"
            )
    mv_k, kernel_ok = _numbers(list(map(attrgetter("kernel"), ms)),
                               lambda i: f"moves[{i}]: kernel", problems)
    # a move's default until is its kernel's successor: not computed from a kernel refused
    mv_u, until_ok = _numbers([m.until if good else 0 for m, good in
                               zip(ms, kernel_ok.tolist(), strict=True)],
                              lambda i: f"moves[{i}]: until", problems)
    mv_keep = np.flatnonzero((mv_t >= 0) & (mv_s >= 0) & (mv_d >= 0) & kernel_ok & until_ok)
    mv_a = np.array([m.kind is MoveKind.ASYNC for m in ms], dtype=np.bool_)

    entry_pools = _entry_pools(plan, graph, pools, problems)
    n = len(graph.kernels)
    rr_k, rr_k_ok = _numbers([r.kernel for r in plan.reruns],
                             lambda i: f"reruns[{i}]: kernel", problems)
    rr_b, rr_b_ok = _numbers([r.before for r in plan.reruns],
                             lambda i: f"reruns[{i}]: before", problems)
    inside = rr_k_ok & rr_b_ok & (rr_k >= 0) & (rr_b >= 1) & (rr_k < rr_b) & (rr_b < n)
    for i in np.flatnonzero(rr_k_ok & rr_b_ok & ~inside):
        problems.append(f"reruns[{i}]: kernel #{rr_k[i]} cannot run again before kernel "
                        f"#{rr_b[i]}: a rerun runs an earlier kernel of 0..{n - 1} at the "
                        "boundary before a later one")
    rr_keep = np.flatnonzero(inside)
    arrays = PlanArrays(
        n_kernels=len(graph.kernels),
        n_pools=len(system.pools),
        res_index=res_keep,
        res_tensor=res_t[res_keep],
        res_pool=res_p[res_keep],
        res_first=res_first[res_keep],
        res_last=res_last[res_keep],
        res_offset=res_offset[res_keep],
        move_index=mv_keep,
        move_tensor=mv_t[mv_keep],
        move_source=mv_s[mv_keep],
        move_target=mv_d[mv_keep],
        move_kernel=mv_k[mv_keep],
        move_async=mv_a[mv_keep],
        move_until=mv_u[mv_keep],
        entry_pools=entry_pools,
        rerun_kernel=rr_k[rr_keep],
        rerun_before=rr_b[rr_keep],
        rerun_index=rr_keep,
    )
    return arrays, problems


def _numbers(values: list[Any], where: Callable[[int], str],
             problems: list[str]) -> tuple[IntArray, BoolArray]:
    """``values`` as int64, and which of them are usable: whole numbers of magnitude below
    :data:`MAX_MAGNITUDE` (so that sums of two fit); a problem for each one that is not."""
    try:  # the fast path: every value an integer (not a bool, a float or a string, which
        # np.fromiter would turn into one: 1.5 into 1, True into 1, "3" into 3)
        if not all(issubclass(t, int | np.integer) and not issubclass(t, bool | np.bool_)
                   for t in set(map(type, values))):
            raise TypeError
        out = np.fromiter(values, np.int64, len(values))
        ok = (out > -MAX_MAGNITUDE) & (out < MAX_MAGNITUDE)
    except (OverflowError, TypeError, ValueError):
        usable = [isinstance(v, int | np.integer) and not isinstance(v, bool)
                  and -MAX_MAGNITUDE < v < MAX_MAGNITUDE for v in values]
        out = np.fromiter((v if good else 0 for v, good in zip(values, usable, strict=True)),
                          np.int64, len(values))
        ok = np.asarray(usable, dtype=np.bool_).reshape(len(values))
    for i in np.flatnonzero(~ok).tolist():
        value = values[i]
        shown = (f"an integer of {value.bit_length()} bits" if isinstance(value, int)
                 and value.bit_length() > 64 else repr(value))
        problems.append(f"{where(i)} is {shown}; give a whole number of magnitude below 2**62")
    return out, ok


def _positions(names: Iterable[str], index: dict[str, int], count: int) -> IntArray:
    """The position of each name in ``index``; -1 for a name it does not know."""
    names = list(names)
    try:  # the fast path: every name known
        return np.fromiter(map(index.__getitem__, names), np.int64, count)
    except KeyError:
        return np.array([index.get(name, -1) for name in names], dtype=np.int64).reshape(count)


def _entry_pools(plan: Plan, graph: Graph, pools: dict[str, int], problems: list[str]) -> IntArray:
    live = graph.liveness
    ptr = live.kernel_ptr
    entry_pools = np.full(len(live.kernel_tensors), -1, dtype=np.int64)
    if len(plan.configs) != len(graph.kernels):
        problems.append(
            f"configs: the plan gives {len(plan.configs)} kernel configurations, graph "
            f"{graph.name!r} has {len(graph.kernels)} kernels; was it made for another graph?"
        )
        return entry_pools
    codes = dict(pools)
    codes[NOWHERE] = -2
    widths = np.diff(ptr)
    before = len(problems)
    placed = np.fromiter(map(len, plan.configs), dtype=np.int64, count=len(plan.configs))
    for k in np.flatnonzero(placed != widths).tolist():
        problems.append(
            f"configs[{k}]: kernel #{k} ({graph.kernels[k].name!r}) touches {widths[k]} tensors, "
            f"the plan places {placed[k]}"
        )
    rows = plan.configs
    if len(problems) > before:
        rows = tuple(row if len(row) == width else (None,) * width
                     for row, width in zip(rows, widths.tolist(), strict=True))
    entry_pools[:] = _positions(itertools.chain.from_iterable(rows), codes, len(entry_pools))
    owner = np.repeat(np.arange(len(graph.kernels)), widths)
    for e in np.flatnonzero(entry_pools == -1):
        k = int(owner[e])
        name = rows[k][e - ptr[k]]
        if name is not None:
            problems.append(
                f"configs[{k}]: kernel #{k} ({graph.kernels[k].name!r}) names pool {name!r}, which "
                "the memory system does not have"
            )
    for e in np.flatnonzero(entry_pools == -2):
        k = int(owner[e])
        tensor = graph.tensors[int(live.kernel_tensors[e])].name
        problems.append(
            f"kernel #{k} ({graph.kernels[k].name!r}): tensor {tensor!r} is resident in no pool "
            f"when the kernel runs (its configuration says {NOWHERE!r})"
        )
    entry_pools[entry_pools == -2] = -1
    return entry_pools


def restored_keys(graph: Graph, arrays: PlanArrays) -> IntArray:
    """Sorted keys (:meth:`PlanArrays.key`) of the residencies a rerun restores: in the fastest
    pool, beginning where a rerun of one of the tensor's writers runs, landed by no move."""
    a, index = arrays, graph.tensor_index
    keys = [a.key_of(index[name], 0, b)
            for k, b in zip(a.rerun_kernel.tolist(), a.rerun_before.tolist(), strict=True)
            for name in graph.kernels[k].outputs]
    if not keys:
        return np.zeros(0, dtype=np.int64)
    wanted = np.unique(np.asarray(keys, dtype=np.int64))
    begins = a.key(a.res_tensor, a.res_pool, a.res_first)
    moved = a.key(a.move_tensor, a.move_target, a.move_kernel)
    return wanted[np.isin(wanted, begins) & ~np.isin(wanted, moved)]
