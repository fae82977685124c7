"""Per-tensor decision points ("gadgets") and the states a tensor may be in.

States, for ``P`` pools ordered fastest first: every non-empty set of pools that may
hold the tensor's current value at once, ``2^P - 1`` states; kernels use the fastest
of them, the others are clean copies (so evicting to one of them is free). With two
pools these are AutoTM's DRAM, DRAM + PMM copy, PMM.

A tensor's life is cut into *slots*: one per gadget (its birth, then every kernel
that touches it; for a tensor that exists before the step and survives it, also the
last kernel, where the next step begins) and one for the kernels strictly between
two gadgets, or after the last one until the tensor dies (its *interior*). Between
consecutive slots lies a *transition*: a synchronous move happens at the boundary
before the second slot's first kernel; in the asynchronous formulation a move may
instead be in flight over kernels that do not write the tensor: the gadget's own kernel
(one that only reads it, or kernel 0 for a tensor that exists before the step and is
not used there), an interior kernel (an eviction issued at the interior's start
and complete after a kernel within the window after the gadget, a prefetch issued at
a kernel within the window before the next gadget and complete by it; the model
keeps a prefetch after the eviction before it), or the last kernel (a copy readying
the next step; when that kernel reads the tensor, only a copy into a slower pool than
the one it reads).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence

import attrs

from autotm_core.errors import CapacityError
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem


@attrs.frozen(slots=True)
class State:
    """Where a tensor is: the pools holding its current value, and the one kernels use."""

    pools: frozenset[int]
    """Pool positions holding a copy (each the current value)."""
    usable: int
    """The fastest of them: the pool a kernel reads or writes it in."""
    clean_copy: bool
    """Whether slower pools hold clean copies too (so evicting to one of them is free)."""


DROPPED = State(frozenset(), -1, False)
"""The state of a dropped tensor: in no pool, to be recomputed (:mod:`autotm_core.ilp.reruns`).
A model's :attr:`~autotm_core.ilp.model_index.ModelIndex.states` lists it last."""


@functools.cache
def states_for(n_pools: int) -> tuple[State, ...]:
    """The ``2^n_pools - 1`` states (every non-empty set of pools), in a fixed order: by
    usable pool, then fewer copies first, copies in slower pools first (slowest-only last).

    With two pools: fast, fast + slow copy, slow (AutoTM's three vertex kinds).
    """
    out: list[State] = []
    for p in range(n_pools):
        slower = range(p + 1, n_pools)
        copies = [frozenset(c) for r in range(len(slower) + 1)
                  for c in itertools.combinations(slower, r)]
        copies.sort(key=lambda c: (len(c), sorted(-q for q in c)))
        out.extend(State(frozenset({p}) | c, p, bool(c)) for c in copies)
    return tuple(out)


def allowed_states(graph: Graph, system: MemorySystem, options: FormulationOptions,
                   tensor: int) -> list[int]:
    """Indices of the states tensor position ``tensor`` may ever be in."""
    states = states_for(len(system.pools))
    spec = graph.tensors[tensor]
    pools = set(range(len(system.pools)))
    if spec.pools is not None:
        pools = {system.pool_index(name) for name in spec.pools}
    if options.pin_to_fast and spec.kind in options.pinned_kinds and 0 in pools:
        pools = {0}
    static = options.formulation is Formulation.STATIC
    out = [i for i, s in enumerate(states) if s.pools <= pools and not (static and s.clean_copy)]
    if not out:
        raise CapacityError(
            f"tensor {spec.name!r} may live in no pool of {system.name!r} "
            f"(it allows {', '.join(spec.pools or ())})",
            hint=f"list pools of {system.name!r} in the tensor's 'pools': "
                 f"{', '.join(p.name for p in system.pools)}",
        )
    return out



def move_sources(system: MemorySystem, nbytes: int, before: State, after: State,
                 *, asynchronous: bool) -> tuple[tuple[int, int, float], ...]:
    """The copies turning ``before`` into ``after``: ``(source, target, seconds)`` each.

    Each new pool is filled from the holding pool that copies to it fastest.
    """
    out = []
    for target in sorted(after.pools - before.pools):
        seconds, source = min(
            (system.copy_seconds(nbytes, s, target, asynchronous=asynchronous), s)
            for s in sorted(before.pools)
        )
        out.append((source, target, seconds))
    return tuple(out)


@attrs.frozen(slots=True)
class Slot:
    """Kernels ``first..last`` of a tensor's life in one state."""

    first: int
    """First kernel."""
    last: int
    """Last kernel (inclusive)."""
    gadget: bool
    """A gadget (birth, use, or the last kernel of a tensor that survives the step and
    existed before it) rather than an interior."""
    writes: bool
    """One pool only holds the tensor here: it is written at this gadget (born or updated
    in place), or it is an input arriving at kernel 0 (no clean copy then)."""
    boundary: bool = False
    """A gadget no kernel uses the tensor at: the boundary before it is where a rerun may
    restore the tensor or read it (:mod:`autotm_core.ilp.reruns`)."""


@attrs.frozen(slots=True)
class Transition:
    """The change of state between slot ``i`` and slot ``i + 1``."""

    kernel: int
    """A synchronous move happens at the boundary just before this kernel."""
    async_kernels: tuple[int, ...]
    """Kernels an asynchronous move may be issued at (before :attr:`kernel`: a fetch, in the
    slot before the transition, its gadget's own kernel or an interior's) or complete after
    (from :attr:`kernel` on: an eviction, in the slot after it, an interior or the last
    kernel), empty unless asynchronous."""


@attrs.frozen(slots=True)
class TensorSlots:
    """The slots and transitions of one tensor."""

    tensor: int
    """Tensor position in the graph."""
    slots: tuple[Slot, ...]
    """Slots in time order, covering the tensor's life."""
    transitions: tuple[Transition, ...]
    """``len(slots) - 1`` transitions."""
    cyclic: bool = False
    """The tensor exists before the step and survives it, its life running from kernel 0
    to the last kernel: its last slot must hold every pool its first one holds (the next
    step starts where this one ends)."""


def tensor_slots(graph: Graph, *, static: bool, asynchronous: bool, window: int,
                 boundaries: Mapping[int, Sequence[int]] | None = None) -> list[TensorSlots]:
    """Slots of every tensor with a non-empty life, in tensor order.

    ``boundaries`` adds, per tensor, boundary slots (:attr:`Slot.boundary`) at those kernels
    of its life that are not gadgets already; such a tensor is cut into slots even in the
    static formulation (where its transitions keep its state, but for dropping and
    restoring it)."""
    boundaries = boundaries or {}
    live = graph.liveness
    writes = live.kernel_writes
    out = []
    for t in range(len(graph.tensors)):
        first, last = int(live.first[t]), int(live.last[t])
        if last < first or last < 0:
            continue
        kind = graph.tensors[t].kind
        cyclic = kind.exists_before_step and kind.survives_step and int(live.producer[t]) < 0
        lo, hi = int(live.use_ptr[t]), int(live.use_ptr[t + 1])
        users = [int(k) for k in live.use_kernels[lo:hi]]
        extra = boundaries.get(t, ())
        if static and not extra:
            out.append(TensorSlots(t, (Slot(first, last, True, True),), (), cyclic))
            continue
        written = {}
        for k in users:
            entries = range(int(live.kernel_ptr[k]), int(live.kernel_ptr[k + 1]))
            written[k] = any(int(live.kernel_tensors[e]) == t and bool(writes[e]) for e in entries)
        gadgets = [first] + [k for k in users if k > first]
        if cyclic and gadgets[-1] < last:  # where the next step begins: a move may end there
            gadgets.append(last)
        only_boundary = set(extra) - set(gadgets)
        if only_boundary:
            gadgets = sorted(set(gadgets) | {b for b in only_boundary if first < b <= last})
        slots: list[Slot] = []
        transitions: list[Transition] = []
        # a pre-existing tensor that survives may begin the step with clean copies, unless
        # it is written at kernel 0, or at the last kernel (it ends the step in one pool)
        starts_in_one = not cyclic or written.get(first, False) or written.get(last, False)
        for i, g in enumerate(gadgets):
            slots.append(Slot(g, g, True, written.get(g, False) if i else starts_in_one,
                              g in only_boundary))
            # a copy may overlap the gadget's own kernel unless it writes the tensor (its
            # producer does)
            during = (g,) if asynchronous and not written.get(g, False) else ()
            nxt = gadgets[i + 1] if i + 1 < len(gadgets) else None
            end = nxt - 1 if nxt is not None else last
            if end > g:  # an interior: evict after g, maybe fetch before nxt
                # anywhere in the interior within the window of the use; the model keeps a
                # fetch from being issued before the eviction into the interior is done
                evict = range(g + 1, min(g + window, end) + 1) if asynchronous else ()
                transitions.append(Transition(g + 1, (*during, *evict)))
                slots.append(Slot(g + 1, end, False, False))
                if nxt is not None:
                    fetch = range(max(nxt - window, g + 1), end + 1) if asynchronous else ()
                    transitions.append(Transition(nxt, tuple(fetch)))
            elif nxt is not None:
                transitions.append(Transition(nxt, during))
            if asynchronous and nxt == last and cyclic and not written.get(nxt, False):
                # a copy overlapping the last kernel readies the next step (when that kernel
                # reads the tensor, only one adding a slower pool than the one it reads)
                tr = transitions[-1]
                transitions[-1] = Transition(tr.kernel, (*tr.async_kernels, nxt))
        out.append(TensorSlots(t, tuple(slots), tuple(transitions), cyclic))
    return out
