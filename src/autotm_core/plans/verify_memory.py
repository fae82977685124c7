"""Memory rules of the plan verifier: pool capacities and tensor addresses.

Time is counted in half steps: ``2k + 1`` is kernel ``k`` running, ``2k`` the
boundary just before it, when synchronous moves copy. A residency occupies its
pool over ``[2 first + 1, 2 last + 1]``, widened to ``2 first`` when a
synchronous move lands it there, and to ``2 last + 2`` when a synchronous move
copies it out just after its last kernel: a tensor being copied occupies both
pools. A kernel's workspace occupies the fastest pool while the kernel runs. At the boundary
before ``k``, the reruns there add their peak (:func:`boundary_rerun_use`): while each runs,
its workspace and the outputs of the reruns so far that are still held (a residency a rerun
restores begins at that boundary and is counted there once).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Container, Mapping, Sequence

import attrs
import numpy as np

from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import NO_OFFSET, BoolArray, IntArray, PlanArrays
from autotm_core.plans.model import Plan
from autotm_core.units import format_bytes

MAX_PER_POOL = 5
"""Capacity overflows and address clashes listed one by one per pool."""


def plan_capacities(plan: Plan, system: MemorySystem) -> list[int | None]:
    """The capacity the plan holds each pool to (the system's where the plan's is unusable)."""
    out: list[int | None] = []
    for pool in system.pools:
        value = plan.capacities.get(pool.name, pool.capacity_nbytes)
        unusable = not _is_capacity(value) or (
            pool.bounded and (value is None or value > (pool.capacity_nbytes or 0))
        )
        out.append(pool.capacity_nbytes if unusable else value)
    return out


def _is_capacity(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0)


def check_capacities(plan: Plan, system: MemorySystem) -> list[str]:
    """The plan's capacities name the system's pools and exceed none of them."""
    names = [pool.name for pool in system.pools]
    out = [
        f"capacities: pool {name!r} is not in memory system {system.name!r} "
        f"(its pools: {', '.join(names)})"
        for name in plan.capacities
        if name not in names
    ]
    for pool in system.pools:
        if pool.name not in plan.capacities:
            out.append(f"capacities: pool {pool.name!r} is missing; give its capacity "
                       "(null if unbounded)")
            continue
        value = plan.capacities[pool.name]
        has = format_bytes(pool.capacity_nbytes or 0)
        where = f"capacities: pool {pool.name!r}"
        if not _is_capacity(value):
            out.append(f"{where} has capacity {value!r}; give a whole number of bytes >= 0, "
                       "or null for unbounded")
        elif pool.bounded and value is None:
            out.append(f"{where} is unbounded in the plan, but memory system {system.name!r} "
                       f"holds only {has} there")
        elif pool.bounded and isinstance(value, int) and value > (pool.capacity_nbytes or 0):
            out.append(f"{where} gets {format_bytes(value)} in the plan, more than the {has} "
                       f"memory system {system.name!r} has")
    return out


def half_step_spans(arrays: PlanArrays, rows: IntArray,
                    restored: IntArray | None = None) -> tuple[IntArray, IntArray]:
    """Start and end (inclusive, in half steps) of residencies ``rows`` (see the module doc);
    one a rerun restores (``restored``: :func:`~autotm_core.plans.arrays.restored_keys`)
    begins at the boundary, where the rerun writes it."""
    a = arrays
    sync = ~a.move_async & (a.move_kernel >= 1) & (a.move_kernel < a.n_kernels)
    landing = np.unique(a.key(a.move_tensor[sync], a.move_target[sync], a.move_kernel[sync]))
    if restored is not None and len(restored):
        landing = np.union1d(landing, restored)
    leaving = np.unique(a.key(a.move_tensor[sync], a.move_source[sync], a.move_kernel[sync]))
    t, p = a.res_tensor[rows], a.res_pool[rows]
    start = 2 * a.res_first[rows] + 1 - np.isin(a.key(t, p, a.res_first[rows]), landing)
    end = 2 * a.res_last[rows] + 1 + np.isin(a.key(t, p, a.res_last[rows] + 1), leaving)
    return start, end


@attrs.frozen
class BoundaryRerunUse:
    """What the reruns at one boundary hold in the fastest pool beside the residencies."""

    peak: int
    """The most bytes they hold at once (see :func:`boundary_rerun_use`)."""
    at: int
    """The position (in the reruns given) of the rerun running when they hold the most."""
    held: list[tuple[int, list[tuple[str, int]]]]
    """At that moment: each rerun (its position) with what of it is held (name, bytes)."""


def rerun_output_spans(graph: Graph, kernels: Sequence[int], before: int,
                       restored: Container[int]) -> dict[int, tuple[int, int]]:
    """Per output the reruns of ``kernels`` (in the order they run) at the boundary before
    kernel ``before`` write and do not restore (``restored``: the tensors a residency
    beginning there holds), the positions (in ``kernels``, inclusive) it is held over: from
    the rerun writing it first (a kernel filling it writes it where its producer's rerun
    did) to the last one, when a kernel from ``before`` on reads it (it is alive there,
    dropped once the reruns are done), else to the last rerun there reading or writing it
    (a chain's intermediate value, freed once the next value is made from it, as
    ``torch.utils.checkpoint``'s replay frees it)."""
    live, index = graph.liveness, graph.tensor_index
    m = len(kernels)
    first: dict[int, int] = {}  # tensor -> position of the rerun writing it first
    end: dict[int, int] = {}  # tensor -> last position holding it
    for i, k in enumerate(kernels):
        kernel = graph.kernels[k]
        for name in kernel.inputs:
            t = index[name]
            if t in end and end[t] < m - 1:
                end[t] = i
        for name in kernel.outputs:
            t = index[name]
            if t in restored:
                continue
            if t not in first:
                first[t] = i
                end[t] = m - 1 if int(live.last[t]) >= before else i
            elif end[t] < m - 1:
                end[t] = i
    return {t: (i, end[t]) for t, i in first.items()}


def boundary_rerun_use(graph: Graph, kernels: Sequence[int], before: int,
                       restored: Container[int]) -> BoundaryRerunUse:
    """The fastest pool's use by the reruns of ``kernels`` (in the order they run) at the
    boundary before kernel ``before``, beside the residencies (``restored``: the tensors a
    residency beginning there holds, counted in it): while each runs, its workspace and the
    outputs held then (:func:`rerun_output_spans`)."""
    live = graph.liveness
    m = len(kernels)
    spans = rerun_output_spans(graph, kernels, before, restored)
    use = np.array([int(live.workspace_nbytes[k]) for k in kernels], dtype=np.int64)
    for t, (i, end) in spans.items():
        use[i:end + 1] += int(live.nbytes[t])
    at = int(np.argmax(use)) if m else 0
    held: dict[int, list[tuple[str, int]]] = {}
    if m and live.workspace_nbytes[kernels[at]]:
        held[at] = [("workspace", int(live.workspace_nbytes[kernels[at]]))]
    for t, (i, end) in spans.items():
        if i <= at <= end:
            held.setdefault(i, []).append((repr(graph.tensors[t].name), int(live.nbytes[t])))
    return BoundaryRerunUse(int(use[at]) if m else 0, at, sorted(held.items()))


def _rerun_boundary_use(
    graph: Graph, arrays: PlanArrays, restored: IntArray,
) -> tuple[IntArray, dict[int, list[tuple[int, list[tuple[str, int]]]]]]:
    """Per half step, the bytes reruns hold in the fastest pool beside the residencies they
    restore, at their boundary (:func:`boundary_rerun_use`); and per boundary, each rerun
    there (its position in the plan) with what it holds when they hold the most."""
    a, index = arrays, graph.tensor_index
    out = np.zeros(2 * a.n_kernels + 2, dtype=np.int64)
    held: dict[int, list[tuple[int, list[tuple[str, int]]]]] = {}
    at_boundary: dict[int, list[int]] = {}  # boundary -> positions in the plan, in order
    for i, b in enumerate(a.rerun_before.tolist()):
        at_boundary.setdefault(b, []).append(i)
    restored_set = set(restored.tolist())
    for b, positions in at_boundary.items():
        kernels = [int(a.rerun_kernel[i]) for i in positions]
        outputs = {index[name] for k in kernels for name in graph.kernels[k].outputs}
        here = {t for t in outputs if a.key_of(t, 0, b) in restored_set}
        use = boundary_rerun_use(graph, kernels, b, here)
        out[2 * b] += use.peak
        held[b] = [(positions[j], what) for j, what in use.held]
    return out, held


def check_memory(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    arrays: PlanArrays,
    valid: BoolArray,
    kernel: Callable[[int], str],
    restored: IntArray,
) -> list[str]:
    """Capacity of every bounded pool at every half step, and addresses inside pools, disjoint
    (``restored``: :func:`~autotm_core.plans.arrays.restored_keys` of the plan)."""
    memory = _Memory(graph, arrays, np.flatnonzero(valid), kernel, restored)
    out: list[str] = []
    for p, capacity in enumerate(plan_capacities(plan, system)):
        name = system.pools[p].name
        if capacity is not None:
            out += memory.capacity(p, name, capacity)
        out += memory.offsets(p, name, capacity)
        if p == 0:
            out += memory.workspaces(plan.workspace_offsets, name, capacity)
    return out


class _Memory:
    """The residencies kept by the verifier, as half-step spans with their sizes."""

    def __init__(
        self, graph: Graph, arrays: PlanArrays, rows: IntArray, kernel: Callable[[int], str],
        restored: IntArray,
    ) -> None:
        self.a = arrays
        self.rows = rows
        self.kernel = kernel
        self.start, self.end = half_step_spans(arrays, rows, restored)
        self.nbytes = graph.liveness.nbytes[arrays.res_tensor[rows]]
        self.pool = arrays.res_pool[rows]
        self.offset = arrays.res_offset[rows]
        self.workspace = graph.liveness.workspace_nbytes
        self.names = [t.name for t in graph.tensors]
        self.tensor_nbytes = graph.liveness.nbytes
        self.boundary, self.rerun_held = _rerun_boundary_use(graph, arrays, restored)
        """Per half step: bytes the reruns there hold beside the residencies (fastest pool);
        per boundary: each rerun there and what it holds."""

    def when(self, tau: int) -> str:
        k = tau // 2
        if tau % 2:
            return self.kernel(k)
        return f"the boundary before {self.kernel(k)} (sync copies occupy both pools)"

    def who(self, i: int) -> str:
        row = self.rows[i]
        tensor = self.names[self.a.res_tensor[row]]
        return f"tensor {tensor!r} (residencies[{self.a.res_index[row]}])"

    def reruns(self, p: int, tau: int) -> str:
        """``; reruns there hold: ...`` for the reruns at the boundary ``tau`` (an even half
        step) of the fastest pool ``p``: each with the outputs it does not restore and its
        workspace; empty when none."""
        if p != 0 or tau % 2:
            return ""
        held = self.rerun_held.get(tau // 2, [])
        parts = []
        for i, what in held[:MAX_PER_POOL]:
            k = int(self.a.rerun_kernel[i])
            things = ", ".join(f"{name} {format_bytes(n)}" for name, n in what) or "nothing"
            parts.append(f"reruns[{i}] ({self.kernel(k)} again before {self.kernel(tau // 2)}): "
                         f"{things}")
        more = f"; and {len(held) - MAX_PER_POOL} more reruns" if len(held) > MAX_PER_POOL else ""
        return f"; reruns there hold: {'; '.join(parts)}{more}" if parts else ""

    def flights(self, p: int, tau: int) -> str:
        """``; copies in flight holding both ends there: ...`` for the asynchronous moves into
        or out of pool ``p`` in flight at half step ``tau`` (a kernel of their flight, or a
        boundary inside it), the largest first; empty when none."""
        a, k = self.a, tau // 2
        inside = (a.move_kernel <= k) & (k < a.move_until) if tau % 2 else \
            (a.move_kernel < k) & (k < a.move_until)
        here = np.flatnonzero(a.move_async & inside & ((a.move_source == p) | (a.move_target == p)))
        if not len(here):
            return ""
        size = self.tensor_nbytes[a.move_tensor[here]]
        top = here[np.argsort(-size, kind="stable")[:3]]
        names = ", ".join(
            f"moves[{a.move_index[i]}] ({self.names[a.move_tensor[i]]!r}, kernels "
            f"{a.move_kernel[i]}..{a.move_until[i] - 1})" for i in top)
        more = f" and {len(here) - len(top)} more" if len(here) > len(top) else ""
        return f"; copies in flight holding both ends there: {names}{more}"

    def capacity(self, p: int, name: str, capacity: int) -> list[str]:
        in_pool = self.pool == p
        n_steps = 2 * self.a.n_kernels
        delta = np.zeros(n_steps + 2, dtype=np.int64)
        np.add.at(delta, self.start[in_pool], self.nbytes[in_pool])
        np.add.at(delta, self.end[in_pool] + 1, -self.nbytes[in_pool])
        used = np.cumsum(delta)[:n_steps]
        if p == 0:
            used[1::2] += self.workspace
            used += self.boundary[:n_steps]
        over = np.flatnonzero(used > capacity)
        # One message per run of consecutive half steps over capacity, at its worst step.
        runs = np.split(over, np.flatnonzero(np.diff(over) > 1) + 1) if len(over) else []
        out = []
        for run in runs[:MAX_PER_POOL]:
            tau = int(run[np.argmax(used[run])])
            here = np.flatnonzero(in_pool & (self.start <= tau) & (self.end >= tau))
            top = here[np.argsort(-self.nbytes[here], kind="stable")[:3]]
            largest = ", ".join(
                f"{self.names[self.a.res_tensor[self.rows[i]]]!r} {format_bytes(self.nbytes[i])}"
                for i in top
            )
            if p == 0 and tau % 2 and self.workspace[tau // 2]:
                largest += f", workspace {format_bytes(self.workspace[tau // 2])}"
            span = ""
            if len(run) > 1:
                span = f" (over it from {self.when(int(run[0]))} to {self.when(int(run[-1]))})"
            out.append(
                f"pool {name!r} holds {format_bytes(used[tau])} at {self.when(tau)}, over its "
                f"capacity of {format_bytes(capacity)} by {format_bytes(used[tau] - capacity)}; "
                f"largest there: {largest or 'none'}{span}{self.flights(p, tau)}"
                f"{self.reruns(p, tau)}"
            )
        if len(runs) > MAX_PER_POOL:
            out.append(f"... and {len(runs) - MAX_PER_POOL} more spans where pool {name!r} "
                       "is over capacity")
        return out

    def offsets(self, p: int, name: str, capacity: int | None) -> list[str]:
        in_pool = self.pool == p
        given = in_pool & (self.offset != NO_OFFSET)
        if not given.any():
            return []
        out = []
        missing = np.flatnonzero(in_pool & ~given)
        if len(missing):
            out.append(
                f"pool {name!r}: {int(given.sum())} residencies have an address and "
                f"{len(missing)} do not, e.g. {self.who(int(missing[0]))}; give every residency "
                "in a pool an address or none"
            )
        offset, nbytes = self.offset, self.nbytes
        beyond = offset + nbytes > capacity if capacity is not None else False
        outside = given & ((offset < 0) | beyond)
        bad = np.flatnonzero(outside)
        for i in bad[:MAX_PER_POOL]:
            out.append(
                f"{self.who(i)} at address {offset[i]} + {nbytes[i]} bytes lies outside pool "
                f"{name!r} (0..{capacity if capacity is not None else 'unbounded'})"
            )
        if len(bad) > MAX_PER_POOL:
            out.append(f"... and {len(bad) - MAX_PER_POOL} more addresses outside pool {name!r}")
        return out + self._clashes(name, np.flatnonzero(given & ~outside & (nbytes > 0)))

    def workspaces(self, offsets: Mapping[int, int], name: str,
                   capacity: int | None) -> list[str]:
        """Each workspace address lies in the fastest pool, clear of what is there meanwhile."""
        out: list[str] = []
        in_pool = (self.pool == 0) & (self.offset != NO_OFFSET)
        for k, offset in offsets.items():
            if not 0 <= k < self.a.n_kernels or not self.workspace[k]:
                out.append(f"workspaces: kernel #{k} has no workspace to place; give offsets "
                           "only to kernels with workspace")
                continue
            size = int(self.workspace[k])
            if offset < 0 or (capacity is not None and offset + size > capacity):
                out.append(f"the workspace of {self.kernel(k)} at address {offset} + {size} "
                           f"bytes lies outside pool {name!r} "
                           f"(0..{capacity if capacity is not None else 'unbounded'})")
                continue
            here = np.flatnonzero(in_pool & (self.start <= 2 * k + 1) & (self.end >= 2 * k + 1)
                                  & (self.offset < offset + size)
                                  & (self.offset + self.nbytes > offset) & (self.nbytes > 0))
            if len(here):
                i = int(here[0])
                out.append(f"the workspace of {self.kernel(k)} at addresses {offset}.."
                           f"{offset + size - 1} of pool {name!r} overlaps {self.who(i)} at "
                           f"{self.offset[i]}..{self.offset[i] + self.nbytes[i] - 1}")
            if len(out) >= MAX_PER_POOL:
                break
        return out

    def _clashes(self, name: str, idx: IntArray) -> list[str]:
        # Sweep over time keeping the residencies present, sorted by address: a newcomer clashes
        # with some present residency if and only if it clashes with a neighbour in address.
        times = np.concatenate([self.start[idx], self.end[idx] + 1])
        arrive = np.concatenate([np.ones(len(idx), np.bool_), np.zeros(len(idx), np.bool_)])
        ids = np.concatenate([idx, idx])
        order = np.lexsort((arrive, times))  # leaving before arriving at the same half step
        offset, nbytes = self.offset.tolist(), self.nbytes.tolist()
        present = _AddressSet(self.offset[idx], len(offset))
        placed = set()
        out: list[str] = []
        clashes = 0
        for i, comes, tau in zip(ids[order].tolist(), arrive[order].tolist(),
                                 times[order].tolist(), strict=True):
            if not comes:
                if i in placed:
                    present.remove(offset[i], i)
                continue
            below, above = present.neighbours(offset[i], i)
            other = None
            if below is not None and offset[below] + nbytes[below] > offset[i]:
                other = below
            elif above is not None and offset[above] < offset[i] + nbytes[i]:
                other = above
            if other is None:
                present.add(offset[i], i)
                placed.add(i)
                continue
            clashes += 1
            if clashes <= MAX_PER_POOL:
                out.append(
                    f"{self.who(i)} at addresses {offset[i]}..{offset[i] + nbytes[i] - 1} of pool "
                    f"{name!r} overlaps {self.who(other)} at {offset[other]}.."
                    f"{offset[other] + nbytes[other] - 1}; both are there at {self.when(tau)}"
                )
        if clashes > MAX_PER_POOL:
            out.append(f"... and {clashes - MAX_PER_POOL} more address clashes in pool {name!r}")
        return out


class _AddressSet:
    """A sorted set of (offset, row) pairs, kept in buckets of offsets.

    Buckets of similar population keep insertion and deletion cheap when tens of thousands
    of residencies are present at once (one sorted list would move them all each time).
    Pairs are stored as the integer ``offset * width + row``.
    """

    def __init__(self, offsets: IntArray, width: int) -> None:
        cuts = np.linspace(0, 1, max(2, int(np.sqrt(len(offsets)))))[1:-1]
        self.bounds: list[int] = (
            np.unique(np.quantile(offsets, cuts).astype(np.int64)).tolist() if len(offsets) else []
        )
        self.buckets: list[list[int]] = [[] for _ in range(len(self.bounds) + 1)]
        self.filled: list[int] = []
        """Positions of the non-empty buckets, ascending."""
        self.width = width

    def add(self, offset: int, row: int) -> None:
        home = bisect.bisect_right(self.bounds, offset)
        bucket = self.buckets[home]
        if not bucket:
            bisect.insort(self.filled, home)
        bisect.insort(bucket, offset * self.width + row)

    def remove(self, offset: int, row: int) -> None:
        home = bisect.bisect_right(self.bounds, offset)
        bucket = self.buckets[home]
        del bucket[bisect.bisect_left(bucket, offset * self.width + row)]
        if not bucket:
            del self.filled[bisect.bisect_left(self.filled, home)]

    def neighbours(self, offset: int, row: int) -> tuple[int | None, int | None]:
        """Rows of the present pairs just below and just above ``(offset, row)``."""
        home = bisect.bisect_right(self.bounds, offset)
        key = offset * self.width + row
        bucket = self.buckets[home]
        at = bisect.bisect_left(bucket, key)
        if at:
            below: int | None = bucket[at - 1]
        else:
            j = bisect.bisect_left(self.filled, home) - 1
            below = self.buckets[self.filled[j]][-1] if j >= 0 else None
        if at < len(bucket):
            above: int | None = bucket[at]
        else:
            j = bisect.bisect_right(self.filled, home)
            above = self.buckets[self.filled[j]][0] if j < len(self.filled) else None
        return (None if below is None else below % self.width,
                None if above is None else above % self.width)
