"""Vectorised questions about a plan's arrays, and the names the verifier's messages use.

:class:`PlanLookups` answers, for whole arrays of (tensor, pool, kernel) triples at
once, "is the tensor resident there", "does a residency begin there", "which
pool does the kernel find the tensor in, and does it write it": every rule of
the verifier (:mod:`autotm_core.plans.verify`,
:mod:`autotm_core.plans.verify_values`) is a few of these calls, so plans of
100,000 kernels verify in seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import numpy as np

from autotm_core.arrays import BoolArray, IntArray
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import PlanArrays, restored_keys

MAX_REPORTED = 50
"""Problems of one rule listed one by one; beyond that, one line counts the rest."""


def limited(messages: list[str], total: int, what: str) -> list[str]:
    """``messages`` (the first :data:`MAX_REPORTED` of ``total``), plus a line counting the rest."""
    if total > len(messages):
        messages = [*messages, f"... and {total - len(messages)} more {what}"]
    return messages


class PlanLookups:
    """A plan's arrays sorted for lookups, with the graph and system they refer to."""

    def __init__(self, graph: Graph, system: MemorySystem, arrays: PlanArrays) -> None:
        self.graph = graph
        self.live = graph.liveness
        self.a = arrays
        self.n = arrays.n_kernels
        self.tensor_names = [t.name for t in graph.tensors]
        self.pool_names = [p.name for p in system.pools]
        a, live = arrays, self.live
        self.valid: BoolArray = (
            (a.res_first >= 0) & (a.res_last < self.n) & (a.res_first <= a.res_last)
        )
        """Which kept residencies are spans inside the program (the others are left out)."""
        # Residencies of one (tensor, pool) sorted by first kernel, with the running maximum of
        # their last kernel, answer "is t in p at k" and "does a residency of t in p begin at k".
        rows = np.flatnonzero(self.valid)
        group = a.group(a.res_tensor[rows], a.res_pool[rows])
        order = np.lexsort((a.res_first[rows], group))
        self._rows = rows[order]
        self._group = group[order]
        kept = self._rows
        self._keys = a.key(a.res_tensor[kept], a.res_pool[kept], a.res_first[kept])
        shift = self._group * (self.n + 2)
        self._reach = np.maximum.accumulate(shift + a.res_last[kept] + 1) - shift - 1
        self.moved_in = np.unique(a.key(a.move_tensor, a.move_target, a.move_kernel))
        """Keys of the (tensor, target pool, kernel) of every move."""
        # Async moves inside the program into one (tensor, pool), sorted by the kernel they are
        # issued at, with the running latest ``until`` (and the move that has it) answer "is
        # a copy of t into p issued by kernel j still in flight after kernel i".
        flights = np.flatnonzero(a.move_async & (a.move_kernel >= 0) & (a.move_kernel < self.n)
                                 & (a.move_until > a.move_kernel))
        f_group = a.group(a.move_tensor[flights], a.move_target[flights])
        f_order = np.lexsort((a.move_kernel[flights], f_group))
        flights, f_group = flights[f_order], f_group[f_order]
        self._flight_keys = a.key(a.move_tensor[flights], a.move_target[flights],
                                  a.move_kernel[flights])
        self._flight_group = f_group
        f_shift = f_group * (self.n + 2)
        f_until = np.minimum(a.move_until[flights], self.n + 1)
        self._flight_reach = np.maximum.accumulate(f_shift + f_until) - f_shift
        if len(flights):
            rise = np.r_[True, (f_group[1:] != f_group[:-1])
                         | (self._flight_reach[1:] != self._flight_reach[:-1])]
            self._flight_move = flights[np.maximum.accumulate(
                np.where(rise, np.arange(len(flights)), 0))]
        else:
            self._flight_move = flights
        self.owner: IntArray = live.entry_kernels()
        """Kernel of each entry of ``liveness.kernel_tensors``."""
        kinds = [t.kind for t in graph.tensors]
        self.pre_existing: BoolArray = np.fromiter(
            map(attrgetter("exists_before_step"), kinds), dtype=np.bool_, count=len(kinds))
        """Which tensors exist before the step (parameters, optimizer state, inputs, constants)."""
        self.surviving: BoolArray = np.fromiter(
            map(attrgetter("survives_step"), kinds), dtype=np.bool_, count=len(kinds))
        """Which tensors survive the step (parameters, optimizer state, constants, outputs)."""
        self.restored = restored_keys(graph, arrays)
        """Keys of the (tensor, fastest pool, kernel) of every residency a rerun restores."""
        # A kernel lists a tensor once, so (tensor, kernel) names one entry.
        entry_keys = live.kernel_tensors * (self.n + 2) + self.owner + 1
        self._entry_order = np.argsort(entry_keys, kind="stable")
        self._entry_keys = entry_keys[self._entry_order]
        self._write_keys = np.sort(entry_keys[live.kernel_writes])

    # -- lookups --------------------------------------------------------------------------

    def restored_at(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> BoolArray:
        """Whether a rerun restores ``tensor`` into ``pool`` at ``kernel`` (elementwise)."""
        return _contains(self.restored, self.a.key(tensor, pool, kernel))

    def covered(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> BoolArray:
        """Whether some residency of ``tensor`` in ``pool`` covers ``kernel`` (elementwise)."""
        if not len(self._keys):
            return np.zeros(len(tensor), dtype=np.bool_)
        group = self.a.group(tensor, pool)
        at = np.searchsorted(self._keys, self.a.key(tensor, pool, kernel), side="right") - 1
        safe = np.maximum(at, 0)
        return (at >= 0) & (self._group[safe] == group) & (self._reach[safe] >= kernel)

    def covering(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> IntArray:
        """The residency (array position) of ``tensor`` in ``pool`` covering ``kernel``; -1 if none.

        Of overlapping residencies (which the verifier reports) it gives the latest begun.
        """
        if not len(self._keys):
            return np.full(len(tensor), -1, dtype=np.int64)
        at = np.searchsorted(self._keys, self.a.key(tensor, pool, kernel), side="right") - 1
        row = self._rows[np.maximum(at, 0)]
        found = ((at >= 0) & (self.a.res_tensor[row] == tensor) & (self.a.res_pool[row] == pool)
                 & (self.a.res_last[row] >= kernel))
        return np.where(found, row, -1)

    def last_kernel(self, rows: IntArray) -> IntArray:
        """The last kernel of each residency (array position, as :meth:`covering` gives);
        -1 where ``rows`` is -1."""
        if not len(self.a.res_last):
            return np.full(len(rows), -1, dtype=np.int64)
        return np.where(rows >= 0, self.a.res_last[np.maximum(rows, 0)], -1)

    def begins(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> BoolArray:
        """Whether a residency of ``tensor`` in ``pool`` begins at ``kernel`` (elementwise)."""
        return _contains(self._keys, self.a.key(tensor, pool, kernel))

    def moved_into(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> BoolArray:
        """Whether a move of ``tensor`` into ``pool`` lands at ``kernel`` (elementwise)."""
        return _contains(self.moved_in, self.a.key(tensor, pool, kernel))

    def arriving(self, tensor: IntArray, pool: IntArray, kernel: IntArray) -> BoolArray:
        """Whether an async move is copying ``tensor`` into ``pool`` during ``kernel``."""
        return self.arriving_move(tensor, pool, kernel) >= 0

    def arriving_move(self, tensor: IntArray, pool: IntArray, kernel: IntArray,
                      issued_by: IntArray | None = None) -> IntArray:
        """The async move (array position) copying ``tensor`` into ``pool`` issued at or
        before ``issued_by`` (default ``kernel``) and still in flight during ``kernel``
        (its ``until`` after it); -1 where there is none. Of several, the one finishing
        last. ``issued_by = b - 1, kernel = b`` asks for the boundary before ``b``."""
        if issued_by is None:
            issued_by = kernel
        if not len(self._flight_keys):
            return np.full(len(tensor), -1, dtype=np.int64)
        at = np.searchsorted(self._flight_keys, self.a.key(tensor, pool, issued_by),
                             side="right") - 1
        safe = np.maximum(at, 0)
        found = ((at >= 0) & (self._flight_group[safe] == self.a.group(tensor, pool))
                 & (self._flight_reach[safe] > kernel))
        return np.where(found, self._flight_move[safe], -1)

    def entries(self, tensor: IntArray, kernel: IntArray) -> IntArray:
        """The entry of ``liveness.kernel_tensors`` for ``tensor`` at ``kernel``; -1 if none."""
        key = tensor * (self.n + 2) + kernel + 1
        if not len(self._entry_keys):
            return np.full(len(key), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._entry_keys, key), len(self._entry_keys) - 1)
        return np.where(self._entry_keys[at] == key, self._entry_order[at], -1)

    def next_write(self, tensor: IntArray, kernel: IntArray) -> IntArray:
        """The first kernel from ``kernel`` on that writes ``tensor`` (elementwise); the
        number of kernels where none does."""
        key = tensor * (self.n + 2) + kernel + 1
        if not len(self._write_keys):
            return np.full(len(key), self.n, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._write_keys, key), len(self._write_keys) - 1)
        found = self._write_keys[at]
        same = (found >= key) & (found // (self.n + 2) == tensor)
        return np.where(same, found % (self.n + 2) - 1, self.n)

    def written_pool(self, tensor: IntArray, kernel: IntArray) -> IntArray:
        """The pool ``kernel`` writes ``tensor`` into (elementwise).

        -2 where the kernel does not write the tensor (or ``kernel`` is outside the program),
        -1 where it does but its configuration names no known pool.
        """
        inside = (kernel >= 0) & (kernel < self.n)
        entry = self.entries(tensor, np.where(inside, kernel, -1))
        safe = np.maximum(entry, 0)
        writes = inside & (entry >= 0) & self.live.kernel_writes[safe]
        return np.where(writes, self.a.entry_pools[safe], -2)

    # -- naming ---------------------------------------------------------------------------

    def kernel(self, k: Any) -> str:
        """``kernel #k ('name')``."""
        k = int(k)
        if 0 <= k < self.n:
            return f"kernel #{k} ({self.graph.kernels[k].name!r})"
        return f"kernel #{k}"

    def residency(self, i: int) -> str:
        """``residencies[j]: tensor 't' in pool 'p' (kernels a..b)`` for array position ``i``."""
        a = self.a
        tensor, pool = self.tensor_names[a.res_tensor[i]], self.pool_names[a.res_pool[i]]
        return (
            f"residencies[{a.res_index[i]}]: tensor {tensor!r} in pool {pool!r} "
            f"(kernels {a.res_first[i]}..{a.res_last[i]})"
        )

    def move(self, i: int) -> str:
        """``moves[j]: sync move of tensor 't' from pool 'p' to 'q' before kernel #k ('name')``;
        an async one says ``during kernel #k ('name')``, or, spanning kernels, ``issued at
        kernel #k ('name'), complete before kernel #u ('name')``."""
        a = self.a
        k, until = int(a.move_kernel[i]), int(a.move_until[i])
        if not a.move_async[i]:
            when = f"before {self.kernel(k)}"
        elif until == k + 1:
            when = f"during {self.kernel(k)}"
        else:
            end = self.kernel(until) if until < self.n else f"the end of the step (#{until})"
            when = f"issued at {self.kernel(k)}, complete before {end}"
        tensor = self.tensor_names[a.move_tensor[i]]
        source, target = self.pool_names[a.move_source[i]], self.pool_names[a.move_target[i]]
        return (
            f"moves[{a.move_index[i]}]: {'async' if a.move_async[i] else 'sync'} move of tensor "
            f"{tensor!r} from pool {source!r} to {target!r} {when}"
        )

    def report(self, bad: BoolArray, message: Callable[[int], str], what: str) -> list[str]:
        """``message(i)`` for each ``i`` where ``bad`` holds, :func:`limited`."""
        rows = np.flatnonzero(bad)
        return limited([message(int(i)) for i in rows[:MAX_REPORTED]], len(rows), what)


def _contains(sorted_keys: IntArray, keys: IntArray) -> BoolArray:
    """Whether each of ``keys`` is among ``sorted_keys`` (ascending)."""
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=np.bool_)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys
