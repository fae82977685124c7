"""The independent verifier of plans: it trusts nothing the planner says.

:func:`verify_plan` checks a :class:`~autotm_core.plans.model.Plan` against the
graph and the memory system it claims to be for, following the semantics in
:mod:`autotm_core.plans.model`, and returns every problem it finds, each naming
the tensor, kernel and pool at fault. :func:`check_plan` raises one
:class:`~autotm_core.errors.PlanError` carrying all of them. Every rule is a
vectorised pass over the plan's arrays (:mod:`autotm_core.plans.lookups`), so
plans of 100,000 kernels verify in seconds. This module checks where tensors
are and how they get there; :mod:`autotm_core.plans.verify_values` checks that
every copy holds the tensor's current value (stale copies, lost updates, copies
racing a write, the steady state of a training loop);
:mod:`autotm_core.plans.verify_memory` checks capacities and addresses;
:mod:`autotm_core.plans.verify_reruns` checks what reruns read and restore.
"""

from __future__ import annotations

import numpy as np

from autotm_core.errors import PlanError, summarize_problems
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.arrays import BoolArray, IntArray, encode_plan
from autotm_core.plans.lookups import MAX_REPORTED, PlanLookups, limited
from autotm_core.plans.model import Plan
from autotm_core.plans.verify_memory import check_capacities, check_memory
from autotm_core.plans.verify_reruns import check_reruns
from autotm_core.plans.verify_values import check_values


def check_plan(plan: Plan, graph: Graph, system: MemorySystem) -> Plan:
    """``plan`` itself when :func:`verify_plan` finds nothing; else one :class:`PlanError`."""
    problems = verify_plan(plan, graph, system)
    if problems:
        who = f" by {plan.planner!r}" if plan.planner else ""
        raise PlanError(
            summarize_problems(f"plan{who} for graph {graph.name!r} on {system.name!r}", problems),
            problems=problems,
            hint="'python -m autotm_core verify PLAN --graph G --system S' lists every problem",
        )
    return plan


def verify_plan(plan: Plan, graph: Graph, system: MemorySystem) -> list[str]:
    """Every way ``plan`` breaks the rules of :mod:`autotm_core.plans.model`; empty when valid."""
    problems: list[str] = []
    if plan.graph != graph.name:
        problems.append(f"the plan was made for graph {plan.graph!r}, not {graph.name!r}")
    if plan.system != system.name:
        problems.append(f"the plan was made for memory system {plan.system!r}, not {system.name!r}")
    problems += check_capacities(plan, system)
    arrays, found = encode_plan(plan, graph, system)
    problems += found
    checker = _Checker(graph, system, arrays)
    problems += checker.residency_spans()
    valid = checker.valid
    problems += checker.restrictions(valid)
    problems += checker.duplicates(valid)
    problems += checker.beginnings(valid)
    problems += checker.coverage(valid)
    problems += checker.configs()
    problems += checker.moves()
    problems += check_values(checker)
    problems += check_reruns(checker)
    problems += check_memory(plan, graph, system, arrays, valid, checker.kernel,
                             checker.restored)
    return problems


class _Checker(PlanLookups):
    """The rules about where tensors are and how they get there."""

    # -- rules ----------------------------------------------------------------------------

    def residency_spans(self) -> list[str]:
        """Spans inside the program, first <= last, and inside the tensor's life."""
        a, live = self.a, self.live
        out = self.report(
            ~self.valid,
            lambda i: f"{self.residency(i)}: not a span of kernels 0..{self.n - 1} "
            "with first <= last",
            "residencies with a bad span",
        )
        born, dies = live.first[a.res_tensor], live.last[a.res_tensor]
        never = self.valid & (dies < born)
        out += self.report(
            never,
            lambda i: f"{self.residency(i)}: the tensor never exists (no kernel writes it and it "
            "does not exist before the step)",
            "residencies of tensors that never exist",
        )
        early = self.valid & ~never & (a.res_first < born)
        out += self.report(
            early,
            lambda i: f"{self.residency(i)}: begins before the tensor exists (born at "
            f"{self.kernel(born[i])})",
            "residencies beginning before birth",
        )
        late = self.valid & ~never & (a.res_last > dies)
        out += self.report(
            late,
            lambda i: f"{self.residency(i)}: lasts after the tensor is freed (last live at "
            f"{self.kernel(dies[i])}); end it there",
            "residencies lasting after free",
        )
        return out

    def restrictions(self, valid: BoolArray) -> list[str]:
        """Each tensor only in the pools it may live in (``Tensor.pools``)."""
        allowed = np.ones((len(self.tensor_names), self.a.n_pools), dtype=np.bool_)
        for t, tensor in enumerate(self.graph.tensors):
            if tensor.pools is not None:
                allowed[t] = [name in tensor.pools for name in self.pool_names]
        bad = valid & ~allowed[self.a.res_tensor, self.a.res_pool]
        return self.report(
            bad,
            lambda i: f"{self.residency(i)}: the tensor may live only in pools "
            f"{', '.join(self.graph.tensors[self.a.res_tensor[i]].pools or ())}",
            "residencies in forbidden pools",
        )

    def duplicates(self, valid: BoolArray) -> list[str]:
        """No two residencies of one tensor in one pool overlap in time."""
        if len(self._rows) < 2:
            return []
        a = self._rows
        same = self._group[1:] == self._group[:-1]
        overlap = same & (self.a.res_first[a[1:]] <= self._reach[:-1])
        rows = np.flatnonzero(overlap)
        return limited(
            [f"{self.residency(int(a[i + 1]))}: overlaps another residency of the same tensor in "
             "the same pool; merge them" for i in rows[:MAX_REPORTED]],
            len(rows),
            "overlapping residencies",
        )

    def beginnings(self, valid: BoolArray) -> list[str]:
        """Each residency begins at the tensor's birth (in its birth pool), at a move into it, or
        where a rerun restores it."""
        a, live = self.a, self.live
        birth_pool = self._birth_pools()
        t, p, first = a.res_tensor, a.res_pool, a.res_first
        at_birth = (first == live.first[t]) & ((birth_pool[t] < 0) | (birth_pool[t] == p))
        moved = self.moved_into(t, p, first) | self.restored_at(t, p, first)
        # Residencies beginning before birth are reported by residency_spans already.
        exists = (live.last[t] >= live.first[t]) & (first >= live.first[t])
        bad = valid & ~at_birth & ~moved & exists

        def message(i: int) -> str:
            if first[i] == live.first[t[i]]:
                why = (f"the tensor is born there in pool {self.pool_names[birth_pool[t[i]]]!r} "
                       "(its producer's configuration)")
            else:
                why = "the tensor is not born there"
            return (f"{self.residency(i)}: begins at {self.kernel(first[i])}, but {why}, no "
                    f"move into {self.pool_names[p[i]]!r} lands there and no rerun restores it "
                    "there; add the move")

        return self.report(bad, message, "residencies beginning from nowhere")

    def _birth_pools(self) -> IntArray:
        """Pool each produced tensor is written to by its producer; -1 for any pool."""
        live = self.live
        tensors = live.kernel_tensors
        births = np.full(len(self.tensor_names), -1, dtype=np.int64)
        at_producer = self.owner == live.producer[tensors]
        births[tensors[at_producer]] = self.a.entry_pools[at_producer]
        return births

    def coverage(self, valid: BoolArray) -> list[str]:
        """Each tensor resident somewhere at every kernel of its life."""
        a, live = self.a, self.live
        rows = np.flatnonzero(valid)
        t, first, last = a.res_tensor[rows], a.res_first[rows], a.res_last[rows]
        order = np.lexsort((first, t))
        t, first, last = t[order], first[order], last[order]
        big = self.n + 2
        reach = np.maximum.accumulate(t * big + last + 1) - t * big - 1
        if len(t):
            head = np.r_[True, t[1:] != t[:-1]]
            tail = np.r_[t[1:] != t[:-1], True]
            inner = np.flatnonzero(~head)
            inner = inner[first[inner] > reach[inner - 1] + 1]
            # a tensor dropped between uses is resident nowhere until a rerun restores it
            inner = inner[~self.restored_at(t[inner], np.zeros(len(inner), dtype=np.int64),
                                            first[inner])]
            gap_t = np.concatenate([t[inner], t[head], t[tail]])
            before, after = np.full(head.sum(), -1), np.full(tail.sum(), self.n)
            gap_lo = np.concatenate([reach[inner - 1] + 1, before, reach[tail] + 1])
            gap_hi = np.concatenate([first[inner] - 1, first[head] - 1, after])
            gap_lo = np.maximum(gap_lo, live.first[gap_t])
            gap_hi = np.minimum(gap_hi, live.last[gap_t])
            real = gap_lo <= gap_hi
            gap_t, gap_lo, gap_hi = gap_t[real], gap_lo[real], gap_hi[real]
        else:
            gap_t = gap_lo = gap_hi = np.zeros(0, dtype=np.int64)
        count = len(gap_t)
        out = [
            f"tensor {self.tensor_names[tensor]!r} is resident in no pool at kernels {lo}..{hi} "
            f"(from {self.kernel(lo)}), though it is live at kernels "
            f"{live.first[tensor]}..{live.last[tensor]}"
            for tensor, lo, hi in zip(gap_t[:MAX_REPORTED], gap_lo, gap_hi, strict=False)
        ]
        has = np.zeros(len(self.tensor_names), dtype=np.bool_)
        has[t] = True
        for tensor in np.flatnonzero(~has & (live.last >= live.first) & (live.last >= 0)):
            count += 1
            if len(out) < MAX_REPORTED:
                out.append(
                    f"tensor {self.tensor_names[tensor]!r} has no residency, though it is live at "
                    f"kernels {live.first[tensor]}..{live.last[tensor]} (from "
                    f"{self.kernel(live.first[tensor])})"
                )
        return limited(out, count, "tensors resident nowhere")

    def configs(self) -> list[str]:
        """Each kernel finds its tensors where its configuration says, usable at that kernel."""
        live = self.live
        entries = np.flatnonzero(self.a.entry_pools >= 0)
        t, p, k = live.kernel_tensors[entries], self.a.entry_pools[entries], self.owner[entries]

        def where(i: int) -> str:
            return (f"{self.kernel(k[i])} uses tensor {self.tensor_names[t[i]]!r} in pool "
                    f"{self.pool_names[p[i]]!r}")

        absent = ~self.covered(t, p, k)
        out = self.report(
            absent,
            lambda i: f"{where(i)}, where it is not resident at that kernel",
            "kernels using a tensor where it is not",
        )
        copy = np.where(absent, -1, self.arriving_move(t, p, k))
        out += self.report(
            copy >= 0,
            lambda i: f"{where(i)}, while {self.move(int(copy[i]))} is still copying it there "
            f"(usable from kernel #{self.a.move_until[copy[i]]}); use the source copy, or "
            "issue the copy earlier",
            "kernels using a copy in flight",
        )
        return out

    def moves(self) -> list[str]:
        """Moves go from where the tensor is to a residency that begins at the move."""
        a = self.a
        t, src, dst, k = a.move_tensor, a.move_source, a.move_target, a.move_kernel
        out = self.report(
            (k < 0) | (k >= self.n),
            lambda i: f"{self.move(i)}: the graph's kernels are 0..{self.n - 1}",
            "moves outside the program",
        )
        ok = (k >= 0) & (k < self.n)
        out += self.report(
            ok & (src == dst), lambda i: f"{self.move(i)}: goes nowhere", "moves to the same pool"
        )
        first_sync = ok & ~a.move_async & (k == 0)
        out += self.report(
            first_sync,
            lambda i: f"{self.move(i)}: there is no kernel before #0 to copy after; place the "
            "tensor in the target pool from the start",
            "sync moves before kernel 0",
        )
        ok &= ~first_sync & (src != dst)
        until = a.move_until
        out += self.report(
            ok & ~a.move_async & (until != k),
            lambda i: f"{self.move(i)}: says until kernel #{until[i]}, but a sync move is "
            f"complete before its own kernel; give until {k[i]} (or leave it out)",
            "sync moves with another until",
        )
        bad_until = ok & a.move_async & ((until <= k) | (until > self.n))
        out += self.report(
            bad_until,
            lambda i: f"{self.move(i)}: says it is complete before kernel #{until[i]}, but an "
            f"async move issued at kernel #{k[i]} completes before a later kernel, "
            f"#{k[i] + 1}..#{self.n} (#{self.n}: with the step)",
            "async moves completing outside their flight",
        )
        ok &= ~(~a.move_async & (until != k)) & ~bad_until
        from_kernel = np.where(a.move_async, k, k - 1)
        gone = ok & ~self.covered(t, src, from_kernel)
        out += self.report(
            gone,
            lambda i: f"{self.move(i)}: the tensor is not in the source pool at "
            f"{self.kernel(from_kernel[i])}",
            "moves from where the tensor is not",
        )
        # an async copy keeps its source until it completes and its destination from issue
        done = until - 1
        source_row = self.covering(t, src, from_kernel)
        released = ok & a.move_async & ~gone & (self.last_kernel(source_row) < done)
        out += self.report(
            released,
            lambda i: f"{self.move(i)}: its source ({self.residency(int(source_row[i]))}) ends "
            f"before the copy completes; keep it until kernel #{done[i]}",
            "async moves whose source is freed in flight",
        )
        nowhere = ok & ~self.begins(t, dst, k)
        out += self.report(
            nowhere,
            lambda i: f"{self.move(i)}: no residency of the tensor in the target pool begins at "
            f"kernel #{k[i]}; start one there",
            "moves landing nowhere",
        )
        target_row = self.covering(t, dst, k)
        short = ok & a.move_async & ~nowhere & (target_row >= 0) \
            & (self.last_kernel(target_row) < done)
        out += self.report(
            short,
            lambda i: f"{self.move(i)}: its target ({self.residency(int(target_row[i]))}) ends "
            f"while the copy is in flight; reserve it until kernel #{done[i]} at least",
            "async moves whose target is freed in flight",
        )
        feeding = np.where(ok & a.move_async, self.arriving_move(t, src, k), -1)
        out += self.report(
            feeding >= 0,
            lambda i: f"{self.move(i)}: its source is itself still being copied during that "
            f"kernel, by {self.move(int(feeding[i]))}; issue this copy from kernel "
            f"#{until[feeding[i]]} on",
            "moves from a copy in flight",
        )
        boundary = np.where(ok & ~a.move_async, self.arriving_move(t, src, k, k - 1), -1)
        out += self.report(
            boundary >= 0,
            lambda i: f"{self.move(i)}: reads the tensor in pool "
            f"{self.pool_names[src[i]]!r} while {self.move(int(boundary[i]))} is still copying "
            f"it there (complete before kernel #{until[boundary[i]]}); copy from another pool, "
            "or complete that copy by this kernel",
            "sync moves from a copy in flight",
        )
        _, first_of, counts = np.unique(a.key(t, dst, k), return_index=True, return_counts=True)
        twice = np.zeros(len(t), dtype=np.bool_)
        twice[first_of[counts > 1]] = True
        out += self.report(
            twice,
            lambda i: f"{self.move(i)}: the plan moves this tensor into this pool at this kernel "
            "more than once; keep one move",
            "repeated moves",
        )
        return out
