"""Rerun rules of the plan verifier: a recomputed value is the value it replaces.

A :class:`~autotm_core.plans.model.Rerun` runs a kernel again at a boundary (see
:mod:`autotm_core.plans.model`). These rules make sure it recomputes what the kernel first
computed, and only that:

- the kernel may run again: the graph allows it (``rerun``: no side effect, not a random op
  whose generator state the frontend does not keep) and it updates none of its inputs in
  place, or it fills a recomputable tensor in place
  (:attr:`~autotm_core.ir.RecomputeFacts.fill_of`) that an earlier rerun at the boundary
  wrote (its producer's, then the fills before it);
- each input holds, at the boundary, the value the kernel first read: no kernel in between
  wrote it (a parameter the optimizer has already updated is a wrong plan); an input an
  earlier rerun at the boundary recomputes holds the value that rerun's kernel wrote, so
  no kernel between the two may have written it;
- each input is in the fastest pool at the boundary: resident there over it (or landed
  there by a synchronous move, or restored by a rerun before this one at the boundary), or
  an output of a rerun before this one at the same boundary; not still arriving there by
  an asynchronous move in flight over the boundary;
- an output it restores has not been written since the last kernel writing it at the
  boundary first ran (a producer is followed by the kernels filling its output);
- a kernel runs again at most once at one boundary.

Capacity at the boundary (the outputs held and the workspace while each rerun runs) is
checked with the other capacities in :mod:`autotm_core.plans.verify_memory`.
"""

from __future__ import annotations

import numpy as np

from autotm_core.plans.lookups import MAX_REPORTED, PlanLookups, limited


def check_reruns(look: PlanLookups) -> list[str]:
    """Every way the plan's reruns break the rules above."""
    a, graph = look.a, look.graph
    if not len(a.rerun_kernel):
        return []
    facts = graph.recompute
    index = graph.tensor_index
    out: list[str] = []
    count = 0
    seen: set[tuple[int, int]] = set()
    sync = _sync_keys(look)
    outputs_at: dict[int, dict[int, int]] = {}  # boundary -> tensor -> the rerun's kernel
    last_writer: dict[tuple[int, int], tuple[int, int]] = {}  # (boundary, tensor) -> rerun

    def add(message: str) -> None:
        nonlocal count
        count += 1
        if len(out) < MAX_REPORTED:
            out.append(message)

    for i, k, b in zip(a.rerun_index.tolist(), a.rerun_kernel.tolist(),
                       a.rerun_before.tolist(), strict=True):
        kernel = graph.kernels[k]
        what = f"reruns[{i}] ({look.kernel(k)} again before {look.kernel(b)})"
        if (k, b) in seen:
            add(f"{what}: the kernel already runs again at this boundary; keep one rerun")
        seen.add((k, b))
        written = outputs_at.setdefault(b, {})
        filled = int(facts.fill_of[k])
        if filled >= 0 and filled not in written:
            name = graph.tensors[filled].name
            add(f"{what}: it fills {name!r} in place, so it runs again only right after the "
                f"kernels before it that write {name!r} (a rerun of its producer "
                f"{look.kernel(int(graph.liveness.producer[filled]))} first)")
        elif filled < 0 and not facts.rerunnable[k]:
            why = ("the graph marks it not safe to rerun (a random op whose generator state "
                   "is not kept, or one with a side effect)" if not kernel.rerun
                   else "it updates one of its inputs in place")
            add(f"{what}: this kernel may not run again: {why}")
        for name in kernel.inputs:
            u = index[name]
            if u in written and written[u] > k:
                add(f"{what}: its input {name!r} comes from the rerun of "
                    f"{look.kernel(written[u])} at this boundary, a later kernel than this one, "
                    "so the rerun would read another value than it did")
            elif u in written and not facts.unchanged(u, written[u], k):
                writes = facts.write_kernels[facts.write_ptr[u]:facts.write_ptr[u + 1]]
                w = int(writes[np.searchsorted(writes, written[u], side="right")])
                add(f"{what}: its input {name!r} comes from the rerun of "
                    f"{look.kernel(written[u])} at this boundary, but {look.kernel(w)} wrote it "
                    "after that kernel and before this one first ran, so the rerun would read "
                    "another value than it did")
            elif u in written:
                pass
            elif not facts.unchanged(u, k, b):
                writes = facts.write_kernels[facts.write_ptr[u]:facts.write_ptr[u + 1]]
                w = int(writes[np.searchsorted(writes, k, side="right")])
                kind = graph.tensors[u].kind.value
                add(f"{what}: its input {name!r} ({kind}) was written by {look.kernel(w)} since "
                    "the kernel first ran, so the rerun would read another value than it did")
            elif not _in_fastest_at_boundary(look, u, b, sync):
                add(f"{what}: its input {name!r} is not in pool {look.pool_names[0]!r} at that "
                    "boundary; keep it there, move it there before, or rerun its producer first")
            elif (copy := int(look.arriving_move(np.array([u]), np.array([0]), np.array([b]),
                                                 np.array([b - 1]))[0])) >= 0:
                add(f"{what}: its input {name!r} is still arriving in pool "
                    f"{look.pool_names[0]!r} at that boundary, by {look.move(copy)}; complete "
                    "that copy by this boundary")
        for name in kernel.outputs:
            written[index[name]] = k
            last_writer[b, index[name]] = i, k
    for (b, o), (i, k) in last_writer.items():
        restored = look.restored_at(np.array([o]), np.array([0]), np.array([b]))[0]
        if restored and not facts.unchanged(o, k, b):
            add(f"reruns[{i}] ({look.kernel(k)} again before {look.kernel(b)}): restores "
                f"{graph.tensors[o].name!r}, which a later kernel has written since; the "
                "rerun gives its older value")
    return limited(out, count, "wrong reruns")


def _sync_keys(look: PlanLookups) -> tuple[set[int], set[int]]:
    """Keys (:meth:`~autotm_core.plans.arrays.PlanArrays.key_of`) of the synchronous moves
    out of the fastest pool (tensor, 0, kernel) and into it, each computed once."""
    a = look.a
    sync = ~a.move_async
    leaving = sync & (a.move_source == 0)
    landing = sync & (a.move_target == 0)
    return (set(a.key(a.move_tensor[leaving], a.move_source[leaving],
                      a.move_kernel[leaving]).tolist()),
            set(a.key(a.move_tensor[landing], a.move_target[landing],
                      a.move_kernel[landing]).tolist()))


def _in_fastest_at_boundary(look: PlanLookups, tensor: int, b: int,
                            sync: tuple[set[int], set[int]]) -> bool:
    """Whether ``tensor`` is in the fastest pool at the boundary before kernel ``b``: a
    residency there covers ``b - 1`` and ``b``, or ends at ``b - 1`` with a synchronous move
    copying it out at ``b``, or begins at ``b`` landed by a synchronous move (one a rerun
    restores is an output of an earlier rerun, which the caller knows)."""
    leaving, landing = sync
    key = look.a.key_of(tensor, 0, b)
    t, zero = np.array([tensor]), np.array([0])
    if look.covered(t, zero, np.array([b - 1]))[0]:
        row = int(look.covering(t, zero, np.array([b - 1]))[0])
        if look.a.res_last[row] >= b or key in leaving:
            return True
    return bool(look.begins(t, zero, np.array([b]))[0]) and key in landing
