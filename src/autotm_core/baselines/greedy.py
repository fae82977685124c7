"""A greedy planner with synchronous moves: fetch before use, evict the farthest next use.

Every tensor has a *home* (:mod:`.homes`): a pool reserved for it over its whole
life, the slowest with room. Kernels are walked in order. Every tensor kernel
``k`` touches is wanted in the fast pool: one born at ``k`` is produced there;
one at home is fetched by a synchronous move before ``k`` when its uses left
could repay the copy (at least ``copy time / (home read time - fast read time)``
of them, per byte: 3 on the Optane preset), else ``k`` uses it at home. When the
fast pool would overflow, the residents ``k`` does not touch are evicted, the one
whose next use is farthest in the future first (Belady's rule). An evicted tensor
is written home by a synchronous move, unless a clean copy is there already: the
copy at home is kept until a kernel writes the tensor again, so evicting it
again is free. Homes make every bounded pool fit by construction; tensors homed
in the fast pool never leave it.

A plan is one step of a training loop (:mod:`autotm_core.plans.model`): a
parameter, optimizer state or constant begins the step at home only and ends it
current there. After the last kernel that writes it in the fast pool, it is
written home before the next kernel; when the last kernel of the step writes it,
that kernel uses it at home. An input begins in one pool: the fast pool when
kernel 0 uses it and there is room, else its home.

Capacity is that of the verifier's model (:mod:`autotm_core.plans.verify_memory`):
at the boundary before ``k`` a tensor being copied occupies both pools, so an
eviction that must write its tensor is done one boundary earlier (before
``k - 1``) when kernel ``k - 1`` does not touch it. When even after evicting
everything ``k`` does not need the wanted tensors do not fit, the largest
fetches and births are given up (``k`` reads or writes them at home).

With a partial cost table, a kernel whose table leaves configurations out runs
in the allowed configuration (each tensor in the fast pool or at home) that
costs least, counting its table time, the copies it needs, and each fetch
shared over the tensor's uses left, among those whose tensors fit
(:mod:`.greedy_tables`).

The walk is linear in the program: next uses come from the liveness CSR, and
the candidates for eviction sit in a heap keyed by next use (stale entries are
skipped when popped).
"""

from __future__ import annotations

import heapq
import math

from autotm_core.baselines.common import Setting, setting
from autotm_core.baselines.greedy_tables import PLANNER, configure, table_pins
from autotm_core.baselines.homes import assign_homes
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, Plan, Residency, make_plan
from autotm_core.units import format_bytes


def greedy(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """The greedy plan (see the module docstring).

    Raises :class:`CapacityError` naming a pool, a kernel and the shortfall when
    the tensors have no homes that fit (then first-touch finds no plan either),
    and :class:`PlanError` naming a kernel none of whose allowed configurations
    (``costs``, when a partial table) greedy can use.
    """
    s = setting(graph, system, fast_capacity_nbytes, costs)
    homes, how = assign_homes(s, fast=table_pins(s))
    walk = _Walk(s, homes)
    walk.run()
    moved = sum(walk.nbytes[walk.index[m.tensor]] for m in walk.moves)
    return make_plan(
        graph, s.system, residencies=walk.residencies, moves=walk.moves, planner=PLANNER,
        capacities=s.capacities(),
        attributes={
            "fetches": sum(1 for m in walk.moves if m.target == s.fast),
            "evictions_written": sum(1 for m in walk.moves if m.source == s.fast),
            "written_back": walk.written_back,
            "moved_nbytes": moved,
            "given_up": walk.given_up,
            "homes": how,
        },
    )


class _Walk:
    """State of the walk over the kernels; :meth:`run` fills residencies and moves."""

    def __init__(self, s: Setting, homes: list[int]) -> None:
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
        self.capacity = s.capacity_nbytes
        self.fast = s.fast
        self.home = homes
        self.home_name = [s.system.pools[max(h, 0)].name for h in homes]
        self.pinned = [h == 0 for h in homes]
        self.persistent = [t.kind.exists_before_step and t.kind.survives_step
                           for t in s.graph.tensors]
        self.last_write = [-1] * len(homes)
        owner = live.entry_kernels()
        for t, k in zip(live.kernel_tensors[live.kernel_writes].tolist(),
                        owner[live.kernel_writes].tolist(), strict=True):
            self.last_write[t] = k
        self.may_be_fast = [
            bool(ok) and (self.capacity is None or nb <= self.capacity)
            for ok, nb in zip(s.may_be_fast, self.nbytes, strict=True)
        ]
        # A fetch pays a blocking copy; each later use in fast memory saves the difference of
        # reading there rather than at home. Fetch only what has uses enough left.
        system, fast_pool = s.system, s.system.fast
        self.min_uses: dict[int, int] = {}
        for pool in {h for h in homes if h > 0}:
            saved = (1 / system.pools[pool].read_bytes_per_second
                     - 1 / fast_pool.read_bytes_per_second)
            copy = system.copy_seconds(1, pool, 0, asynchronous=False)
            self.min_uses[pool] = max(1, math.ceil(copy / saved)) if saved > 0 else 10**9
        n_tensors = len(self.nbytes)
        self.next_ptr = self.use_ptr[:-1]  # per tensor: index of its next use in use_kernels
        self.fast_start = [-1] * n_tensors
        self.slow_start = [-1] * n_tensors  # start of the residency at home (not the fast pool)
        self.last_touch = [-1] * n_tensors
        self.stamp = [0] * n_tensors
        self.heap: list[tuple[int, int, int]] = []  # (-next use, tensor, stamp)
        self.fast_nbytes = 0
        self.residencies: list[Residency] = []
        self.moves: list[Move] = []
        self.given_up = 0
        self.written_back = 0
        self.write_back: list[int] = []  # written home before the next kernel
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
        for t in self.ending[self.n - 1]:
            self._close(t, self.n - 1)

    def _kernel(self, k: int) -> None:
        touched = self.kernel_tensors[self.kernel_ptr[k] : self.kernel_ptr[k + 1]]
        if k == 0:
            self._start(set(touched))
        for t in self.write_back:
            self.moves.append(Move(self.names[t], self.fast, self.home_name[t], k))
            self.slow_start[t] = k
            self.written_back += 1
        self.write_back = []
        allowed = self.s.allowed
        if allowed is not None and allowed.restricts(k):
            configure(self, k, touched)
        else:
            self._wish(k, touched)
        for i in range(self.kernel_ptr[k], self.kernel_ptr[k + 1]):
            t = self.kernel_tensors[i]
            if self.kernel_writes[i] and self.fast_start[t] >= 0:
                if 0 <= self.slow_start[t] < k:
                    self._end_slow(t, k - 1)  # the copy at home is stale from now on
                if self.persistent[t] and not self.pinned[t] and self.last_write[t] == k:
                    self.write_back.append(t)  # k < n - 1: the last kernel writes it at home
            self.last_touch[t] = k
            self._advance(t, k)

    def _start(self, touched: set[int]) -> None:
        """Where tensors that exist before the step begin it (kernel 0)."""
        for t, producer in enumerate(self.producer):
            if producer >= 0 or self.last[t] < 0:
                continue
            if self.pinned[t]:
                self.fast_start[t] = 0
                self.fast_nbytes += self.nbytes[t]
            elif self.persistent[t] or t not in touched or not self.may_be_fast[t]:
                self.slow_start[t] = 0  # an input kernel 0 uses may arrive in the fast pool

    def is_new(self, t: int, k: int) -> bool:
        """Whether ``t`` comes into being at ``k`` and is placed by it."""
        return self.producer[t] == k or (k == 0 and self.fast_start[t] < 0
                                         and self.slow_start[t] < 0)

    def must_be_home(self, t: int, k: int) -> bool:
        """Whether ``k`` must use ``t`` at home: the step's last kernel writing a parameter,
        optimizer state or constant (the next step finds it at home)."""
        return (k == self.n - 1 and self.last_write[t] == k and self.persistent[t]
                and not self.pinned[t])

    def _wish(self, k: int, touched: list[int]) -> None:
        fetch, born, forced = [], [], []
        for t in touched:
            if self.must_be_home(t, k):
                if self.fast_start[t] >= 0:
                    forced.append(t)
            elif self.fast_start[t] >= 0:
                continue
            elif not self.may_be_fast[t]:
                if self.is_new(t, k):
                    self.slow_start[t] = k
            elif self.is_new(t, k):
                born.append(t)
            elif k > 0 and self._worth_fetching(t):
                fetch.append(t)
        over_kernel, over_boundary = self.make_room(k, fetch, born, forced, set(touched),
                                                    may_give_up=True)
        if over_kernel > 0 or over_boundary > 0:
            self._overflow(k, over_kernel, over_boundary, set(touched))
        self.place(k, fetch, born)

    def place(self, k: int, fetch: list[int], born: list[int]) -> None:
        """``fetch`` arrive in the fast pool before ``k``; ``born`` are produced there at ``k``."""
        for t in fetch:
            self.moves.append(Move(self.names[t], self.home_name[t], self.fast, k))
        for t in fetch + born:
            self.fast_start[t] = k
            self.fast_nbytes += self.nbytes[t]

    def _worth_fetching(self, t: int) -> bool:
        """Whether ``t``'s uses left, all in fast memory, would repay the copy that fetches it."""
        uses_left = self.use_ptr[t + 1] - self.next_ptr[t]
        return uses_left >= self.min_uses.get(self.home[t], 1)

    def make_room(
        self, k: int, fetch: list[int], born: list[int], forced: list[int], touched: set[int],
        *, may_give_up: bool,
    ) -> tuple[int, int]:
        """Evict by farthest next use so that kernel ``k`` and the boundary before it fit.

        ``forced`` (residents ``k`` uses at home) leave the fast pool. When even all
        candidates cannot make room and ``may_give_up``, the largest wanted tensor is
        given up (``fetch`` and ``born`` shrink) and only the evictions still needed
        are made; without ``may_give_up`` nothing changes unless everything fits.
        Returns how much kernel ``k`` and its boundary are still over capacity.
        """
        if self.capacity is None:
            for t in forced:
                self._evict(t, k)
            return 0, 0
        nb = self.nbytes
        fetched = sum(nb[t] for t in fetch)
        over_kernel = (self.fast_nbytes + fetched + sum(nb[t] for t in born) + self.workspace[k]
                       - self.capacity)
        over_boundary = self.fast_nbytes + fetched - self.capacity
        for t in forced:
            over_kernel -= nb[t]
            over_boundary -= nb[t] if self._frees_boundary(t, k) else 0
        chosen: list[tuple[tuple[int, int, int], int]] = []  # heap entry, boundary bytes freed
        while over_kernel > 0 or over_boundary > 0:
            entry = self._candidate(k, touched)
            if entry is not None:
                t = entry[1]
                freed = nb[t] if self._frees_boundary(t, k) else 0
                chosen.append((entry, freed))
                over_kernel -= nb[t]
                over_boundary -= freed
                continue
            droppable = [t for t in fetch + born if not self.pinned[t]] if may_give_up else []
            if not droppable:
                break
            t = max(droppable, key=nb.__getitem__)
            self.given_up += 1
            over_kernel -= nb[t]
            if t in born:
                born.remove(t)
                self.slow_start[t] = k
            else:
                fetch.remove(t)
                over_boundary -= nb[t]
            while chosen and over_kernel + nb[chosen[-1][0][1]] <= 0 \
                    and over_boundary + chosen[-1][1] <= 0:  # no longer needed
                entry, freed = chosen.pop()
                heapq.heappush(self.heap, entry)
                over_kernel += nb[entry[1]]
                over_boundary += freed
        if (over_kernel > 0 or over_boundary > 0) and not may_give_up:
            for entry, _ in chosen:
                heapq.heappush(self.heap, entry)
            return over_kernel, over_boundary
        for t in forced:
            self._evict(t, k)
        for entry, _ in chosen:
            self._evict(entry[1], k)
        return over_kernel, over_boundary

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

    def _retro(self, t: int, k: int) -> bool:
        """Whether ``t`` can be written out one boundary early (``k - 1`` does not touch it)."""
        return self.last_touch[t] <= k - 2 and self.fast_start[t] <= k - 2

    def _frees_boundary(self, t: int, k: int) -> bool:
        """Whether evicting ``t`` before ``k`` frees its bytes at the boundary before ``k``."""
        home = self.slow_start[t]
        return 0 <= home < k or (home < 0 and self._retro(t, k))

    def _overflow(self, k: int, over_kernel: int, over_boundary: int, touched: set[int]) -> None:
        """Last resort: tensors ``k`` touches leave the fast pool; ``k`` uses them at home."""
        residents = sorted((t for t in touched if self.fast_start[t] >= 0 and not self.pinned[t]),
                           key=lambda t: -self.nbytes[t])
        for t in residents:
            if over_kernel <= 0 and over_boundary <= 0:
                return
            written = self._evict(t, k)
            over_kernel -= self.nbytes[t]
            over_boundary -= self.nbytes[t] - written
            self.given_up += 1
        if over_kernel > 0 or over_boundary > 0:  # homes make this impossible: a bug if seen
            raise self.shortfall(k, max(over_kernel, over_boundary))

    def shortfall(self, k: int, over: int) -> CapacityError:
        """The error of kernel ``k`` whose tensors exceed the fast pool by ``over`` bytes."""
        kernel = self.s.graph.kernels[k]
        return CapacityError(
            f"greedy: kernel {kernel.name!r} (#{k}) cannot run with pool {self.fast!r} limited "
            f"to {format_bytes(self.capacity or 0)}: the tensors it needs there and its "
            f"workspace exceed it by {format_bytes(over)} ({over} bytes)",
            hint="raise the fast-pool capacity, or allow those tensors in a slower pool",
        )

    def _evict(self, t: int, k: int) -> int:
        """Take ``t`` out of the fast pool before ``k``; bytes still in it at that boundary."""
        self.fast_nbytes -= self.nbytes[t]
        self.stamp[t] += 1
        if self.slow_start[t] >= 0:  # a clean copy is at home (or being written there now)
            self._end_fast(t, k - 1)
            return self.nbytes[t] if self.slow_start[t] == k else 0
        if self._retro(t, k):
            self._end_fast(t, k - 2)  # write it out one boundary earlier, where it was anyway
            self.moves.append(Move(self.names[t], self.fast, self.home_name[t], k - 1))
            self.slow_start[t] = k - 1
            return 0
        self._end_fast(t, k - 1)
        self.moves.append(Move(self.names[t], self.fast, self.home_name[t], k))
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
        self.residencies.append(
            Residency(self.names[t], self.home_name[t], self.slow_start[t], last))
        self.slow_start[t] = -1

    def _close(self, t: int, last: int) -> None:
        """End of ``t``'s life: close its open residencies."""
        if self.fast_start[t] >= 0:
            self.fast_nbytes -= self.nbytes[t]
            self.stamp[t] += 1
            self._end_fast(t, last)
        if self.slow_start[t] >= 0:
            self._end_slow(t, last)
