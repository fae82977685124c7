"""Value rules of the plan verifier: every copy a kernel or a move reads holds the current value.

A plan describes one step of a training loop (see :mod:`autotm_core.plans.model`).
A kernel writing a tensor writes the new value into one pool; every other copy
then holds the old value. These rules make sure no old value is ever read
again, within the step or by the next one:

- a **stale copy** (another residency covering the writing kernel) ends there;
- a synchronous move just after a write copies from the pool written, or it
  would copy the old value over the new one (a **lost update**);
- an asynchronous move never overlaps a kernel writing its tensor during its whole
  flight (it would **race** the write);
- **steady state**: a tensor that exists before the step and survives it ends
  the step current in every pool it began in (at the same address, when both
  residencies have one), and an input begins the step in exactly one pool.
"""

from __future__ import annotations

import numpy as np

from autotm_core.arrays import IntArray
from autotm_core.plans.arrays import NO_OFFSET
from autotm_core.plans.lookups import PlanLookups


def check_values(look: PlanLookups) -> list[str]:
    """Every copy the plan reads, and every copy the next step finds, holds the current value."""
    start = _start_rows(look)
    surviving = look.surviving[look.a.res_tensor[start]]
    return [*_stale_copies(look), *_lost_updates(look), *_racing_copies(look),
            *_steady_state(look, start[surviving]), *_inputs(look, start[~surviving])]


def _stale_copies(look: PlanLookups) -> list[str]:
    """A kernel writing a tensor (but the last) ends every other copy of it at that kernel."""
    live = look.live
    entries = np.flatnonzero(live.kernel_writes & (look.a.entry_pools >= 0)
                             & (look.owner < look.n - 1))
    t, p, k = live.kernel_tensors[entries], look.a.entry_pools[entries], look.owner[entries]
    out: list[str] = []
    for q in range(len(look.pool_names)):
        qs = np.full(len(t), q, dtype=np.int64)
        stale = (p != q) & look.covered(t, qs, k) & look.covered(t, qs, k + 1) \
            & ~look.begins(t, qs, k + 1)
        row = np.where(stale, look.covering(t, qs, k), -1)

        def message(i: int, q: int = q, row: IntArray = row) -> str:
            return (
                f"{look.kernel(k[i])} writes tensor {look.tensor_names[t[i]]!r} into pool "
                f"{look.pool_names[p[i]]!r}, but its copy in pool {look.pool_names[q]!r} "
                f"({look.residency(int(row[i]))}) lives on with the old value; end that "
                f"residency at kernel #{k[i]} (a move from {look.pool_names[p[i]]!r} can copy "
                "the new value there later)"
            )

        out += look.report(stale, message, "stale copies kept after a write")
    return out


def _lost_updates(look: PlanLookups) -> list[str]:
    """A sync move just after a kernel writing its tensor copies from the pool written."""
    a = look.a
    k, src, dst = a.move_kernel, a.move_source, a.move_target
    sync = ~a.move_async & (k >= 1) & (k < look.n) & (src != dst)
    wrote = look.written_pool(a.move_tensor, k - 1)
    lost = sync & (wrote >= 0) & (wrote != src)

    def message(i: int) -> str:
        new, old = look.pool_names[wrote[i]], look.pool_names[src[i]]
        fix = (f"drop the move and keep the residency in {new!r} going" if dst[i] == wrote[i]
               else f"copy from {new!r} instead")
        return (
            f"{look.move(i)}: {look.kernel(k[i] - 1)} writes the tensor into pool {new!r} just "
            f"before, so the copy in {old!r} holds the old value and this move copies it over "
            f"the new one (a lost update); {fix}"
        )

    return look.report(lost, message, "lost updates")


def _racing_copies(look: PlanLookups) -> list[str]:
    """An async move never overlaps a kernel that writes its tensor (any kernel of its
    flight, ``kernel .. until-1``)."""
    a = look.a
    k = a.move_kernel
    inside = a.move_async & (k >= 0) & (k < look.n)
    writer = np.where(inside, look.next_write(a.move_tensor, np.where(inside, k, 0)), look.n)
    race = inside & (writer < np.minimum(a.move_until, look.n))
    wrote = look.written_pool(a.move_tensor, writer)

    def message(i: int) -> str:
        into = f" into pool {look.pool_names[wrote[i]]!r}" if wrote[i] >= 0 else ""
        w = int(writer[i])
        who = "the kernel" if w == k[i] else f"{look.kernel(w)}, while it is in flight,"
        fix = ("copy it during a kernel that does not write it" if a.move_until[i] == k[i] + 1
               else f"complete it before kernel #{w} or issue it after")
        if w + 1 < look.n and wrote[i] >= 0:
            fix += (f", or synchronously before {look.kernel(w + 1)} from "
                    f"{look.pool_names[wrote[i]]!r}")
        return (f"{look.move(i)}: {who} writes the tensor{into} while this copy reads it, "
                f"so the copy races the write; {fix}")

    return look.report(race, message, "async moves racing a write")


def _start_rows(look: PlanLookups) -> IntArray:
    """The residencies (one per tensor and pool) pre-existing tensors begin the step in.

    A residency landed at kernel 0 by a move is the move's work, not where the step begins.
    """
    a = look.a
    rows = np.flatnonzero(look.valid & (a.res_first == 0))
    t, p = a.res_tensor[rows], a.res_pool[rows]
    keep = look.pre_existing[t] & ~look.moved_into(t, p, a.res_first[rows])
    rows, t, p = rows[keep], t[keep], p[keep]
    _, first = np.unique(a.group(t, p), return_index=True)
    return rows[np.sort(first)]


def _current_at_end(look: PlanLookups, t: int) -> list[str]:
    """Pools holding tensor ``t``'s current value after the last kernel."""
    n = look.n
    wrote = int(look.written_pool(np.array([t]), np.array([n - 1]))[0])
    pools = np.arange(len(look.pool_names), dtype=np.int64)
    held = look.covered(np.full(len(pools), t), pools, np.full(len(pools), n - 1))
    return [look.pool_names[q] for q in pools[held] if wrote < 0 or q == wrote]


def _steady_state(look: PlanLookups, start: IntArray) -> list[str]:
    """A tensor existing before and after the step ends it current where it began (``start``)."""
    if not look.n:
        return []
    a = look.a
    t, q = a.res_tensor[start], a.res_pool[start]
    last = np.full(len(start), look.n - 1, dtype=np.int64)
    end = look.covering(t, q, last)
    wrote = look.written_pool(t, last)
    missing = end < 0
    overwritten = ~missing & (wrote >= 0) & (wrote != q)
    safe = np.maximum(end, 0)
    o_start, o_end = a.res_offset[start], a.res_offset[safe]
    shifted = (~missing & ~overwritten & (o_start != NO_OFFSET) & (o_end != NO_OFFSET)
               & (o_start != o_end))

    def subject(i: int) -> str:
        tensor = look.graph.tensors[t[i]]
        return (f"{tensor.kind.value} {tensor.name!r} begins the step in pool "
                f"{look.pool_names[q[i]]!r} ({look.residency(int(start[i]))})")

    def not_back(i: int) -> str:
        where = ", ".join(repr(p) for p in _current_at_end(look, int(t[i])))
        return (f"{subject(i)}, but no residency of it there covers the last kernel, "
                f"{look.kernel(look.n - 1)}, so the next step would find no current copy there; "
                f"copy it back into {look.pool_names[q[i]]!r} before the step ends"
                + (f", or start it only where it ends ({where})" if where else ""))

    def old_value(i: int) -> str:
        return (f"{subject(i)}, but {look.kernel(look.n - 1)}, the last, writes it into pool "
                f"{look.pool_names[wrote[i]]!r}, so the copy in {look.pool_names[q[i]]!r} ends "
                "the step with the old value the next step would read; start it only in "
                f"{look.pool_names[wrote[i]]!r}")

    def moved(i: int) -> str:
        return (f"{subject(i)} at address {o_start[i]}, but ends it at address {o_end[i]} "
                f"({look.residency(int(end[i]))}): the next step finds it at {o_start[i]}; give "
                "both residencies the same address")

    return [*look.report(missing, not_back, "tensors not back where the step began"),
            *look.report(overwritten, old_value, "tensors ending stale where the step began"),
            *look.report(shifted, moved, "tensors ending at another address")]


def _inputs(look: PlanLookups, start: IntArray) -> list[str]:
    """A tensor existing before the step but not after it (an input) begins in one pool."""
    a, live = look.a, look.live
    tensors, counts = np.unique(a.res_tensor[start], return_counts=True)
    twice = tensors[counts > 1]
    if not len(twice):
        return []

    def message(i: int) -> str:
        x = int(twice[i])
        rows = start[a.res_tensor[start] == x]
        pools = a.res_pool[rows]
        users = live.users(x)
        entry = look.entries(np.array([x]), users[:1])[0] if len(users) else -1
        read = int(a.entry_pools[entry]) if entry >= 0 else -1
        best = read if read in pools.tolist() else int(pools.min())
        tensor = look.graph.tensors[x]
        where = ", ".join(f"{look.pool_names[p]!r} (residencies[{a.res_index[r]}])"
                          for r, p in zip(rows.tolist(), pools.tolist(), strict=True))
        return (f"{tensor.kind.value} {tensor.name!r} begins the step in {len(rows)} pools, "
                f"{where}, but its data arrives in one; start it only in "
                f"{look.pool_names[best]!r} and copy it where else it is needed")

    return look.report(np.ones(len(twice), dtype=np.bool_), message,
                       "inputs beginning in several pools")
