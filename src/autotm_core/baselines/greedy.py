"""A greedy planner with synchronous moves: fetch before use, evict the farthest next use.

Kernels are walked in order. Every tensor kernel ``k`` touches is wanted in the
fast pool: one born at ``k`` is produced there; one in slow memory is fetched by
a synchronous move before ``k`` when its uses left could repay the copy (at
least ``copy time / (slow read time - fast read time)`` of them, per byte: 3 on
the Optane preset), else ``k`` uses it in slow memory. When the fast pool would overflow, the
residents ``k`` does not touch are evicted, the one whose next use is farthest
in the future first (Belady's rule). An evicted tensor is written to its slow
pool by a synchronous move, unless a clean copy is already there: a copy in
slow memory is kept for the rest of the tensor's life until a kernel writes
the tensor again (write-once), so evicting it again is free.

Capacity is that of the verifier's model (:mod:`autotm_core.plans.verify_memory`):
at the boundary before ``k`` a tensor being copied occupies both pools, so an
eviction that must write its tensor is done one boundary earlier (before
``k - 1``) when kernel ``k - 1`` does not touch it. When even after evicting
everything ``k`` does not need the wanted tensors do not fit, the largest
fetches and births are given up (``k`` reads or writes them in slow memory);
a tensor larger than the fast pool always lives in slow memory. Tensors that
exist before the step start in slow memory, except those kernel 0 touches.

The walk is linear in the program: next uses come from the liveness CSR, and
the candidates for eviction sit in a heap keyed by next use (stale entries are
skipped when popped).
"""

from __future__ import annotations

import heapq
import math

from autotm_core.baselines.common import Setting, check_fast_fits, setting
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, Plan, Residency, make_plan
from autotm_core.units import format_bytes

PLANNER = "baseline/greedy"


def greedy(graph: Graph, system: MemorySystem, *, fast_capacity_nbytes: int | None = None) -> Plan:
    """The greedy plan (see the module docstring)."""
    s = setting(graph, system, fast_capacity_nbytes)
    check_fast_fits(s, s.exists & s.fast_only, what="greedy",
                    hint="allow those tensors in a slower pool")
    walk = _Walk(s)
    walk.run()
    moved = sum(walk.nbytes[walk.index[m.tensor]] for m in walk.moves)
    return make_plan(
        graph, s.system, residencies=walk.residencies, moves=walk.moves, planner=PLANNER,
        capacities=s.capacities(),
        attributes={
            "fetches": sum(1 for m in walk.moves if m.target == s.fast),
            "evictions_written": sum(1 for m in walk.moves if m.source == s.fast),
            "moved_nbytes": moved,
            "given_up": walk.given_up,
        },
    )


class _Walk:
    """State of the walk over the kernels; :meth:`run` fills residencies and moves."""

    def __init__(self, s: Setting) -> None:
        live = s.graph.liveness
        self.s = s
        self.n = live.n_kernels
        self.index = s.graph.tensor_index
        self.names = [t.name for t in s.graph.tensors]
        self.nbytes = live.nbytes.tolist()
        self.producer = live.producer.tolist()
        self.last = live.last.tolist()
        self.use_ptr = live.use_ptr.tolist()
        self.use_kernels = live.use_kernels.tolist()
        self.kernel_ptr = live.kernel_ptr.tolist()
        self.kernel_tensors = live.kernel_tensors.tolist()
        self.kernel_writes = live.kernel_writes.tolist()
        self.workspace = live.workspace_nbytes.tolist()
        capacity = s.capacity_nbytes
        self.capacity = capacity
        self.fast = s.fast
        self.slow = [pools[-1] for pools in s.pools_of]
        self.pinned = [pools[-1] == s.fast for pools in s.pools_of]
        self.may_be_fast = [
            bool(ok) and (capacity is None or nb <= capacity)
            for ok, nb in zip(s.may_be_fast, self.nbytes, strict=True)
        ]
        # A fetch pays a blocking copy; each later use in fast memory saves the difference of
        # reading there rather than in slow memory. Fetch only what has uses enough left.
        system, fast_pool = s.system, s.system.fast
        self.min_uses: dict[str, int] = {}
        for pool in {p for p in self.slow if p != s.fast}:
            source = system.pool(pool)
            saved = 1 / source.read_bytes_per_second - 1 / fast_pool.read_bytes_per_second
            copy = system.copy_seconds(1, system.pool_index(pool), 0, asynchronous=False)
            self.min_uses[pool] = max(1, math.ceil(copy / saved)) if saved > 0 else 10**9
        n_tensors = len(self.nbytes)
        self.next_ptr = self.use_ptr[:-1]  # per tensor: index of its next use in use_kernels
        self.fast_start = [-1] * n_tensors
        self.slow_start = [-1] * n_tensors
        self.last_touch = [-1] * n_tensors
        self.stamp = [0] * n_tensors
        self.heap: list[tuple[int, int, int]] = []  # (-next use, tensor, stamp)
        self.fast_nbytes = 0
        self.residencies: list[Residency] = []
        self.moves: list[Move] = []
        self.given_up = 0
        self.ending: list[list[int]] = [[] for _ in range(self.n)]
        for t, last in enumerate(self.last):
            if last >= 0:
                self.ending[last].append(t)

    def run(self) -> None:
        for k in range(self.n):
            if k:
                for t in self.ending[k - 1]:
                    self._close(t, k - 1)
            self._kernel(k)
        if self.n:
            for t in self.ending[self.n - 1]:
                self._close(t, self.n - 1)

    def _kernel(self, k: int) -> None:
        touched = self.kernel_tensors[self.kernel_ptr[k] : self.kernel_ptr[k + 1]]
        touched_set = set(touched)
        if k == 0:  # tensors that exist before the step are born here
            for t, producer in enumerate(self.producer):
                if producer < 0 and self.last[t] >= 0 and t not in touched_set:
                    if self.pinned[t]:  # it may live nowhere else
                        self.fast_start[t] = 0
                        self.fast_nbytes += self.nbytes[t]
                    else:
                        self.slow_start[t] = 0
        fetch, born = [], []
        for t in touched:
            born_here = self.producer[t] == k or (k == 0 and self.producer[t] < 0)
            if self.fast_start[t] >= 0:
                continue
            if not self.may_be_fast[t]:
                if born_here:
                    self.slow_start[t] = k
            elif born_here:
                born.append(t)
            elif self._worth_fetching(t):
                fetch.append(t)
        if self.capacity is not None:
            over_kernel, over_boundary = self._make_room(k, fetch, born, touched_set)
            if over_kernel > 0 or over_boundary > 0:
                self._overflow(k, over_kernel, over_boundary, touched_set)
        for t in fetch:
            self.moves.append(Move(self.names[t], self.slow[t], self.fast, k))
        for t in fetch + born:
            self.fast_start[t] = k
            self.fast_nbytes += self.nbytes[t]
        for i in range(self.kernel_ptr[k], self.kernel_ptr[k + 1]):
            t = self.kernel_tensors[i]
            if self.kernel_writes[i] and self.fast_start[t] >= 0 and 0 <= self.slow_start[t] < k:
                self._end_slow(t, k - 1)  # the copy in slow memory is stale from now on
            self.last_touch[t] = k
            self._advance(t, k)

    def _worth_fetching(self, t: int) -> bool:
        """Whether ``t``'s uses left, all in fast memory, would repay the copy that fetches it."""
        uses_left = self.use_ptr[t + 1] - self.next_ptr[t]
        return uses_left >= self.min_uses.get(self.slow[t], 1)

    def _make_room(
        self, k: int, fetch: list[int], born: list[int], touched: set[int]
    ) -> tuple[int, int]:
        """Evict by farthest next use so that kernel ``k`` and the boundary before it fit.

        Candidates are taken tentatively: when even all of them cannot make room,
        the largest wanted tensor is given up (``fetch`` and ``born`` shrink) and
        only as many candidates as the rest needs are evicted. Returns how much
        kernel ``k`` and its boundary are still over capacity (> 0 only when the
        tensors ``k`` touches and its workspace cannot all fit).
        """
        assert self.capacity is not None
        chosen: list[tuple[tuple[int, int, int], bool]] = []  # heap entry, frees the boundary
        exhausted = False
        while True:
            fetch_nbytes = sum(self.nbytes[t] for t in fetch)
            over_kernel = (self.fast_nbytes + fetch_nbytes + sum(self.nbytes[t] for t in born)
                           + self.workspace[k] - self.capacity)
            over_boundary = self.fast_nbytes + fetch_nbytes - self.capacity
            for i in range(len(chosen) + 1):
                if over_kernel <= 0 and over_boundary <= 0:
                    self._apply(k, chosen[:i], chosen[i:])
                    return 0, 0
                if i < len(chosen):
                    entry, frees_boundary = chosen[i]
                    over_kernel -= self.nbytes[entry[1]]
                    over_boundary -= self.nbytes[entry[1]] if frees_boundary else 0
            if not exhausted:
                candidate = self._candidate(k, touched)
                if candidate is not None:
                    t = candidate[1]
                    frees = self.slow_start[t] >= 0 or self._retro(t, k)
                    chosen.append((candidate, frees))
                    continue
                exhausted = True
            droppable = [t for t in fetch + born if not self.pinned[t]]
            if not droppable:
                self._apply(k, chosen, [])
                return over_kernel, over_boundary
            t = max(droppable, key=lambda t: self.nbytes[t])
            self.given_up += 1
            if t in born:
                born.remove(t)
                self.slow_start[t] = k
            else:
                fetch.remove(t)

    def _candidate(self, k: int, touched: set[int]) -> tuple[int, int, int] | None:
        """Pop the resident with the farthest next use; ``None`` when all left are needed now."""
        while self.heap:
            entry = heapq.heappop(self.heap)
            key, t, stamp = entry
            if stamp != self.stamp[t] or self.fast_start[t] < 0:
                continue
            if -key <= k or t in touched:
                heapq.heappush(self.heap, entry)
                return None
            return entry
        return None

    def _apply(self, k: int, evict: list, keep: list) -> None:
        for entry, _ in keep:
            heapq.heappush(self.heap, entry)
        for entry, _ in evict:
            self._evict(entry[1], k)

    def _retro(self, t: int, k: int) -> bool:
        """Whether ``t`` can be written out one boundary early (``k - 1`` does not touch it)."""
        return self.last_touch[t] <= k - 2 and self.fast_start[t] <= k - 2

    def _overflow(self, k: int, over_kernel: int, over_boundary: int, touched: set[int]) -> None:
        """Last resort: tensors ``k`` touches leave the fast pool; ``k`` uses them slow."""
        residents = sorted((t for t in touched if self.fast_start[t] >= 0 and not self.pinned[t]),
                           key=lambda t: -self.nbytes[t])
        for t in residents:
            if over_kernel <= 0 and over_boundary <= 0:
                return
            written = self._evict(t, k)
            over_kernel -= self.nbytes[t]
            over_boundary -= self.nbytes[t] - written
            self.given_up += 1
        if over_kernel > 0 or over_boundary > 0:
            kernel = self.s.graph.kernels[k]
            raise CapacityError(
                f"greedy: kernel {kernel.name!r} (#{k}) cannot run with pool {self.fast!r} "
                f"limited to {format_bytes(self.capacity or 0)}: tensors that may live only "
                f"there and its workspace exceed it by "
                f"{format_bytes(max(over_kernel, over_boundary))}",
                hint="raise the fast-pool capacity, or allow those tensors in a slower pool",
            )

    def _evict(self, t: int, k: int) -> int:
        """Take ``t`` out of the fast pool before ``k``; bytes still in it at that boundary."""
        self.fast_nbytes -= self.nbytes[t]
        self.stamp[t] += 1
        if self.slow_start[t] >= 0:  # a clean copy is there already: dropping it is free
            self._end_fast(t, k - 1)
            return 0
        if self._retro(t, k):
            self._end_fast(t, k - 2)  # write it out one boundary earlier, where it was anyway
            self.moves.append(Move(self.names[t], self.fast, self.slow[t], k - 1))
            self.slow_start[t] = k - 1
            return 0
        self._end_fast(t, k - 1)
        self.moves.append(Move(self.names[t], self.fast, self.slow[t], k))
        self.slow_start[t] = k
        return self.nbytes[t]

    def _advance(self, t: int, k: int) -> None:
        """Move ``t``'s next-use pointer past ``k``; push it as a candidate if it is resident."""
        ptr, stop = self.next_ptr[t], self.use_ptr[t + 1]
        while ptr < stop and self.use_kernels[ptr] <= k:
            ptr += 1
        self.next_ptr[t] = ptr
        if self.fast_start[t] >= 0 and not self.pinned[t] and self.last[t] > k:
            next_use = self.use_kernels[ptr] if ptr < stop else self.n
            self.stamp[t] += 1
            heapq.heappush(self.heap, (-next_use, t, self.stamp[t]))

    def _end_fast(self, t: int, last: int) -> None:
        self.residencies.append(Residency(self.names[t], self.fast, self.fast_start[t], last))
        self.fast_start[t] = -1

    def _end_slow(self, t: int, last: int) -> None:
        self.residencies.append(Residency(self.names[t], self.slow[t], self.slow_start[t], last))
        self.slow_start[t] = -1

    def _close(self, t: int, last: int) -> None:
        """End of ``t``'s life: close its open residencies."""
        if self.fast_start[t] >= 0:
            self.fast_nbytes -= self.nbytes[t]
            self.stamp[t] += 1
            self._end_fast(t, last)
        if self.slow_start[t] >= 0:
            self._end_slow(t, last)
