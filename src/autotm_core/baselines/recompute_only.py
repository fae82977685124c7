"""The cheapest recomputation that fits, with no moves: what torch's min-cut partitioner
chooses under ``activation_memory_budget`` (a knapsack over what to recompute, solved
greedily by its ``"greedy"`` solver).

Every tensor stays in the fastest pool it may live in for its whole life, except the saved
activations (:mod:`.saved`) this baseline drops. An *option* is a forward kernel that may
run again (:func:`.rerun_plan.may_rerun`): dropping each of its outputs that is a saved,
recomputable activation with a gap, from its last forward use to the boundary before the
first backward use of any of them, where one rerun of the kernel restores them all. A
value the rerun reads that is not in the fastest pool at that boundary (it died in the
forward pass, or is dropped there) is recomputed first by a rerun of its own producer at
the same boundary, and so on back (a chain, as the partitioner recomputes from saved
inputs); the option's cost is the time of the reruns it adds, each with every tensor in the
fastest pool (:func:`~autotm_core.costs.model.rerun_seconds`).

While some half step holds more than the fastest pool's limit, among the options whose
gaps cover the worst one, that can be had beside those taken (each input of a rerun
unchanged since the kernel ran; a rerun taken that reads a value the option drops where it
is no longer held has that value's producer run again there first, at the option's cost)
and that, with their reruns' workspaces and other outputs at their boundaries, lower the
bytes over the limit summed over the half steps, the one with the fewest rerun seconds per
byte it frees there is taken. Then each option taken is left out again, the costliest
first, wherever the others (taken again in order) still fit without it. When no option
lowers an overfull half step, :class:`CapacityError` says where and by how much: this search
finds no recomputation alone that fits the step (the other baselines raise the same); when
even every option taken at once would not fit, it says so before searching.
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import IntArray
from autotm_core.baselines.common import Setting, setting
from autotm_core.baselines.rerun_plan import (
    Drop,
    Recompute,
    capacity_error,
    costs_of,
    kernel_rerun_seconds,
    may_rerun,
    overflow,
    pool_use,
    rerun_plan,
    rerun_summary,
)
from autotm_core.baselines.saved import saved_activations
from autotm_core.costs.model import KernelCosts
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan

PLANNER = "baseline/recompute-only"


@attrs.frozen(slots=True, eq=False)
class _Option:
    """Kernel ``kernel`` rerun before ``before`` restores ``drops``."""

    kernel: int
    before: int
    drops: tuple[Drop, ...]
    nbytes: tuple[int, ...]
    """Size of each drop's tensor."""

    @property
    def first_freed(self) -> int:
        """The first half step its drops free."""
        return 2 * min(d.last_kept for d in self.drops) + 2

    def freed_at(self, step: int) -> int:
        """Bytes its drops free at half step ``step``."""
        return sum(n for d, n in zip(self.drops, self.nbytes, strict=True)
                   if 2 * d.last_kept + 2 <= step <= 2 * self.before - 1)


def recompute_only(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    costs: KernelCosts | None = None,
) -> Plan:
    """The plan of the cheapest recomputation found that fits (see the module docstring)."""
    s = setting(graph, system, fast_capacity_nbytes, costs, recompute=True)
    priced = costs_of(s, costs)
    pools = s.fastest()
    decided = Recompute()
    found = overflow(s, pools, decided)
    if found is not None and found[0] != 0:
        raise capacity_error(s, found, what="recompute-only", hint="bound that pool less tightly")
    if found is not None:
        search = _Search(s, priced, pools)
        decided = search.untake(search.take(_options(s)))
    return rerun_plan(s, pools, decided, planner=PLANNER,
                      attributes=rerun_summary(s, decided, priced))


def _options(s: Setting) -> list[_Option]:
    """Every option of the graph (see the module doc), by kernel."""
    saved = saved_activations(s.graph)
    live, facts = s.graph.liveness, s.graph.recompute
    by_kernel: dict[int, list[int]] = {}
    for i, (t, p) in enumerate(zip(saved.tensors.tolist(), saved.producer.tolist(),
                                   strict=True)):
        if facts.recomputable[t] and s.may_be_fast[t] and saved.gap_kernels[i] >= 1:
            by_kernel.setdefault(p, []).append(i)
    out = []
    for p, rows in sorted(by_kernel.items()):
        if not may_rerun(s, p):
            continue
        while rows:
            b = int(min(saved.first_backward[i] for i in rows))
            kept = [i for i in rows if saved.last_forward[i] <= b - 2]
            if len(kept) == len(rows):
                break
            rows = kept
        if rows:
            drops = tuple(Drop(int(saved.tensors[i]), int(saved.last_forward[i]), b)
                          for i in rows)
            out.append(_Option(p, b, drops, tuple(int(live.nbytes[d.tensor]) for d in drops)))
    return out


class _Search:
    """The greedy knapsack over the options (see the module doc).

    Options are tried on the decisions in place (:meth:`apply`, then :meth:`undo`), so that
    trying one costs what it changes, not the size of what is decided; they are tried in
    the order of their own rerun's seconds per byte, a bound on their cost per byte, and no
    further once that bound passes the best found."""

    def __init__(self, s: Setting, costs: KernelCosts, pools: IntArray) -> None:
        self.s, self.costs, self.pools = s, costs, pools
        self.capacity = s.capacity_nbytes or 0
        self.backward = saved_activations(s.graph).backward_start
        self.index = s.graph.tensor_index
        self.producer = s.graph.liveness.producer.tolist()
        self._seconds: dict[int, float] = {}
        self._rerunnable: dict[int, bool] = {}
        self._inputs: dict[int, tuple[int, ...]] = {}
        self._unchanged: dict[tuple[int, int, int], bool] = {}
        self.decided = Recompute()
        """What is decided (:meth:`take` leaves its answer here)."""
        self.boundaries: dict[int, set[int]] = {}
        """Kernel -> the boundaries it runs again at (the reruns of :attr:`decided`)."""

    def seconds(self, kernel: int) -> float:
        """Time of one rerun of ``kernel``."""
        if kernel not in self._seconds:
            self._seconds[kernel] = kernel_rerun_seconds(self.s, self.costs, kernel)
        return self._seconds[kernel]

    def may_rerun(self, kernel: int) -> bool:
        """Whether ``kernel`` is a forward kernel that may run again."""
        if kernel not in self._rerunnable:
            self._rerunnable[kernel] = (0 <= kernel < self.backward
                                        and may_rerun(self.s, kernel))
        return self._rerunnable[kernel]

    def inputs(self, kernel: int) -> tuple[int, ...]:
        """Tensor positions ``kernel`` reads."""
        if kernel not in self._inputs:
            graph = self.s.graph
            self._inputs[kernel] = tuple(self.index[name]
                                         for name in graph.kernels[kernel].inputs)
        return self._inputs[kernel]

    def unchanged(self, tensor: int, after: int, before: int) -> bool:
        """Whether no kernel strictly between ``after`` and ``before`` writes ``tensor``
        (:meth:`~autotm_core.ir.RecomputeFacts.unchanged`, asked again and again)."""
        key = (tensor, after, before)
        if key not in self._unchanged:
            self._unchanged[key] = self.s.graph.recompute.unchanged(tensor, after, before)
        return self._unchanged[key]

    def available(self, tensor: int, before: int) -> bool:
        """Whether a rerun at ``before`` finds ``tensor`` in the fastest pool: kept or
        restored there, or written there by a rerun of its producer at that boundary."""
        return (self.decided.in_fastest(self.s, tensor, before)
                or (self.producer[tensor], before) in self.decided.reruns)

    def chain(self, kernel: int, before: int) -> list[int] | None:
        """The kernels to run again at ``before`` for ``kernel`` to run there (it, and the
        producers of the inputs it cannot find there, and so on back), not running there
        yet; ``None`` when some input cannot be had (or was written since it was read)."""
        if (kernel, before) in self.decided.reruns:
            return []
        needed, stack = {kernel}, [kernel]
        while stack:
            q = stack.pop()
            for u in self.inputs(q):
                if not self.unchanged(u, q, before):
                    return None
                if self.available(u, before):
                    continue
                p = self.producer[u]
                if p in needed:
                    continue
                if not self.may_rerun(p):
                    return None
                needed.add(p)
                stack.append(p)
        return sorted(needed)

    def apply(self, option: _Option) -> list[tuple[int, int]] | None:
        """Take ``option`` into :attr:`decided` and return the reruns that adds: the option's
        chain, and, for each rerun already there that reads a value the option drops where
        it is no longer held, that value's producer run again there first (with its own
        chain); ``None`` (nothing changed) when one of them cannot be had."""
        readers = [(d.tensor, b) for d in option.drops
                   for reader in self.s.graph.liveness.users(d.tensor).tolist()
                   for b in self.boundaries.get(reader, ())]
        for d in option.drops:
            self.decided.drops[d.tensor] = d
        added: list[tuple[int, int]] = []

        def run(kernel: int, before: int) -> bool:
            chain = self.chain(kernel, before)
            if chain is None:
                return False
            for k in chain:
                self.decided.reruns.add((k, before))
                self.boundaries.setdefault(k, set()).add(before)
                added.append((k, before))
            return True

        if run(option.kernel, option.before) and all(
                self.available(t, b) or run(self.producer[t], b) for t, b in readers):
            return added
        self.undo(option, added)
        return None

    def undo(self, option: _Option, added: list[tuple[int, int]]) -> None:
        """Leave out again an option :meth:`apply` took, with the reruns it ``added``."""
        for d in option.drops:
            del self.decided.drops[d.tensor]
        for k, b in added:
            self.decided.reruns.discard((k, b))
            self.boundaries[k].discard(b)

    def use_after(self, option: _Option, added: list[tuple[int, int]], use: IntArray,
                  restoring: int) -> IntArray:
        """The fastest pool's use (:func:`~.rerun_plan.pool_use`) with ``option`` applied:
        ``use`` less its drops over their gaps, with the reruns it ``added`` at their
        boundaries, and ``restoring`` bytes less at its own (outputs of a rerun that ran
        there already, now restored, counted once)."""
        after = use.copy()
        for d, n in zip(option.drops, option.nbytes, strict=True):
            after[2 * d.last_kept + 2:2 * option.before] -= n
        for k, b in added:
            after[2 * b] += self.decided.extra_nbytes(self.s, k, b)
        after[2 * option.before] -= restoring
        return after

    def take(self, options: list[_Option]) -> list[tuple[_Option, float]]:
        """Options taken greedily until the fastest pool holds the step, each with the
        seconds of the reruns it added."""
        s, capacity = self.s, self.capacity
        use = pool_use(s, self.pools, self.decided, 0)
        self._check_floor(options, use)
        lo = np.array([o.first_freed for o in options], dtype=np.int64)
        hi = np.array([2 * o.before - 1 for o in options], dtype=np.int64)
        free = np.ones(len(options), dtype=np.bool_)
        taken: list[tuple[_Option, float]] = []
        while True:
            step = int(use.argmax())
            peak = int(use[step])
            if peak <= capacity:
                return taken
            excess = int(np.maximum(use - capacity, 0).sum())
            ranked = []
            for j in np.flatnonzero(free & (lo <= step) & (hi >= step)).tolist():
                option = options[j]
                freed = option.freed_at(step)
                if freed:
                    there = (option.kernel, option.before) in self.decided.reruns
                    own = 0.0 if there else self.seconds(option.kernel)
                    ranked.append((own / freed, -freed, option.kernel, j))
            best: tuple[tuple[float, int, int], int] | None = None
            for bound, minus_freed, kernel, j in sorted(ranked):
                if best is not None and (bound, minus_freed, kernel) > best[0]:
                    break  # no option further on costs less per byte
                option = options[j]
                restoring = self._restoring(option)
                added = self.apply(option)
                if added is None:
                    continue
                after = self.use_after(option, added, use, restoring)
                cost = sum(self.seconds(k) for k, _ in added)
                self.undo(option, added)
                if int(np.maximum(after - capacity, 0).sum()) >= excess:
                    continue  # its reruns hold more over the limit than its drops free
                key = (cost / -minus_freed, minus_freed, kernel)
                if best is None or key < best[0]:
                    best = (key, j)
            if best is None:
                raise capacity_error(
                    s, (0, step, peak), what=f"recompute-only (with "
                    f"{len(self.decided.reruns)} reruns)",
                    hint="use a planner that also moves tensors (greedy, offload-activations "
                    "or an ILP formulation with --recompute)")
            option = options[best[1]]
            restoring = self._restoring(option)
            added = self.apply(option)
            assert added is not None  # it applied a moment ago, on the same decisions
            use = self.use_after(option, added, use, restoring)
            free[best[1]] = False
            taken.append((option, sum(self.seconds(k) for k, _ in added)))

    def _restoring(self, option: _Option) -> int:
        """Bytes the option's drops stop counting at its boundary when its kernel already
        runs there (its outputs, written there already, become restored residencies)."""
        if (option.kernel, option.before) not in self.decided.reruns:
            return 0
        return sum(option.nbytes)

    def _check_floor(self, options: list[_Option], use: IntArray) -> None:
        """:class:`CapacityError` at once when the step does not fit even with every option
        taken and no rerun holding anything at its boundary (a bound: taking options only
        adds to it)."""
        floor = use.copy()
        for option in options:
            for d, n in zip(option.drops, option.nbytes, strict=True):
                floor[2 * d.last_kept + 2:2 * option.before] -= n
        step = int(floor.argmax())
        if int(floor[step]) > self.capacity:
            raise capacity_error(
                self.s, (0, step, int(floor[step])),
                what="recompute-only (even with every activation it may recompute dropped)",
                hint="use a planner that also moves tensors (greedy, offload-activations or "
                "an ILP formulation with --recompute)")

    def untake(self, taken: list[tuple[_Option, float]]) -> Recompute:
        """The options taken, each left out again, the costliest first, wherever the rest
        still fit (taken again in order, their reruns found again without it). An option
        whose drops, kept again, overfill the pool is not tried."""
        decided, kept = self.decided, [o for o, _ in taken]
        use = pool_use(self.s, self.pools, decided, 0)
        for option, _ in sorted(taken, key=lambda t: (-t[1], t[0].kernel)):
            back = use.copy()
            for d, n in zip(option.drops, option.nbytes, strict=True):
                back[2 * d.last_kept + 2:2 * option.before] += n
            if int(back.max()) > self.capacity:
                continue
            rest = [o for o in kept if o is not option]
            rebuilt = self.rebuild(rest)
            if rebuilt is None:
                continue
            after = pool_use(self.s, self.pools, rebuilt, 0)
            if int(after.max()) <= self.capacity:
                kept, decided, use = rest, rebuilt, after
        return decided

    def rebuild(self, options: list[_Option]) -> Recompute | None:
        """``options`` taken again in order, from nothing; ``None`` when one can no longer
        be had. :attr:`decided` is left as it was."""
        saved, boundaries = self.decided, self.boundaries
        self.decided, self.boundaries = Recompute(), {}
        try:
            for option in options:
                if self.apply(option) is None:
                    return None
            return self.decided
        finally:
            self.decided, self.boundaries = saved, boundaries
