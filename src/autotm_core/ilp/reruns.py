"""Which reruns the model may choose: the recompute options of one problem.

A *rerun option* ``(p, b)`` lets the model run kernel ``p`` again at the boundary before
kernel ``b`` (:class:`~autotm_core.plans.Rerun`), and after it the kernels filling its
outputs in place (:meth:`~autotm_core.ir.RecomputeFacts.rerun_kernels`: one option, their
times and reads together). Options are found from the uses of the droppable tensors and
chained back through their producers' inputs:

- a tensor is *droppable* when the graph says it is recomputable
  (:class:`~autotm_core.ir.RecomputeFacts`), its producer's outputs may all live in the
  fastest pool, and it has a gap between two uses; each use after a gap gives the option of
  rerunning its producer just before that use;
- an option needs each input of its kernel in the fastest pool at its boundary, holding the
  value the kernel first read (no kernel wrote it in between). An input live over the
  boundary is there if the plan keeps it there, or, when droppable, if its own producer
  reruns at the same boundary (one more option); an input no longer live there must be
  rerun. Chains stop after :attr:`~autotm_core.ilp.options.FormulationOptions.recompute_depth`
  producers; an option whose inputs cannot all be had is left out, and so on back;
- :attr:`~autotm_core.ilp.options.FormulationOptions.rerun_seeds` (the reruns of the plans
  the planner holds) are options too, however deep, held to the same test.

The model (:mod:`autotm_core.ilp.formulation`) gives a droppable tensor a *dropped* state
besides its pools, splits its life at every boundary where one of its options or one of its
consumers' options lies (a *boundary slot*: the tensor may be restored there and kept), and
ties each restore to its option's rerun. These options are the model's narrowing of
recomputation (``restrictions.py`` names it): a value is recomputed only at a boundary where
some use or some chain needs it, and only after it was dropped from every pool.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts, rerun_seconds
from autotm_core.errors import PlanError
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem


@attrs.frozen(slots=True)
class RerunOption:
    """Kernel ``kernel`` may run again at the boundary before kernel ``before``."""

    kernel: int
    """The kernel run again."""
    before: int
    """The kernel it runs just before."""
    seconds: float
    """Its time with every tensor in the fastest pool (and its fills')."""
    inputs: tuple[int, ...]
    """Tensor positions it reads (each needed in the fastest pool at the boundary)."""
    outputs: tuple[int, ...]
    """Tensor positions it writes (all into the fastest pool, at the boundary)."""
    kernels: tuple[int, ...] = ()
    """The kernels it runs: :attr:`kernel`, then those filling its outputs (empty: only
    :attr:`kernel`)."""

    @property
    def runs(self) -> tuple[int, ...]:
        """The kernels the option runs again, in order."""
        return self.kernels or (self.kernel,)


@attrs.frozen(slots=True)
class RerunOptions:
    """Every rerun option of a problem, and what the model needs to offer them."""

    options: tuple[RerunOption, ...]
    """The options, by boundary, then kernel (the order reruns run at one boundary)."""
    droppable: frozenset[int]
    """Tensors that may be dropped between uses."""
    boundaries: Mapping[int, tuple[int, ...]]
    """Per tensor: boundaries inside its life where it may be restored (droppable) or where an
    option reads it (a boundary slot splits its life there)."""


NO_RERUNS = RerunOptions((), frozenset(), {})


def rerun_options(graph: Graph, costs: KernelCosts, system: MemorySystem,
                  options: FormulationOptions) -> RerunOptions:
    """The rerun options of ``graph`` (see the module doc); none when recomputation is off."""
    if not options.recompute or not graph.kernels:
        return NO_RERUNS
    facts, live = graph.recompute, graph.liveness
    index = graph.tensor_index
    fastest = system.pools[0].name
    may_be_fast = np.fromiter((t.pools is None or fastest in t.pools for t in graph.tensors),
                              dtype=np.bool_, count=len(graph.tensors))
    if options.pin_to_fast:
        pinned = np.fromiter((t.kind in options.pinned_kinds for t in graph.tensors),
                             dtype=np.bool_, count=len(graph.tensors))
    else:
        pinned = np.zeros(len(graph.tensors), dtype=np.bool_)
    kernel_inputs: dict[int, tuple[int, ...]] = {}
    kernel_outputs: dict[int, tuple[int, ...]] = {}
    first_reader: dict[int, dict[int, int]] = {}  # p -> input -> the first kernel reading it

    def reads(p: int) -> tuple[int, ...]:
        """What a rerun of ``p`` (and its fills) reads that it does not write first."""
        if p not in kernel_inputs:
            outputs = tuple(index[n] for n in graph.kernels[p].outputs)
            readers: dict[int, int] = {}
            for q in facts.rerun_kernels(p):
                for n in graph.kernels[q].inputs:
                    if index[n] not in outputs:
                        readers.setdefault(index[n], q)
            kernel_inputs[p], kernel_outputs[p] = tuple(readers), outputs
            first_reader[p] = readers
        return kernel_inputs[p]

    seconds: dict[int, float | None] = {}

    def may_rerun(p: int) -> bool:
        reads(p)
        if not facts.rerunnable[p] or not all(may_be_fast[o] for o in kernel_outputs[p]):
            return False
        if p not in seconds:
            try:
                seconds[p] = sum(rerun_seconds(costs, q, len(graph.kernels[q].tensors))
                                 for q in facts.rerun_kernels(p))
            except PlanError:  # a cost table without the all-fastest configuration
                seconds[p] = None
        return seconds[p] is not None

    droppable: set[int] = set()
    base: list[tuple[int, int]] = []
    for t in np.flatnonzero(facts.recomputable & ~pinned).tolist():
        p = int(live.producer[t])
        if not may_rerun(p):
            continue
        users = live.users(t)
        gaps = [int(users[i]) for i in range(1, len(users)) if users[i] > users[i - 1] + 1]
        if gaps:
            droppable.add(t)
            base.extend((p, b) for b in gaps)

    # Chain back from each use's option: (kernel, boundary) -> depth reached
    depth: dict[tuple[int, int], int] = {}
    stack = [] if options.rerun_seeds_only else [(p, b, 0) for p, b in base]
    while stack:
        p, b, d = stack.pop()
        if depth.get((p, b), options.recompute_depth + 1) <= d:
            continue
        depth[p, b] = d
        if d >= options.recompute_depth:
            continue
        for u in reads(p):
            q = int(live.producer[u])
            if q >= 0 and (u in droppable or int(live.last[u]) < b) and facts.recomputable[u] \
                    and not pinned[u] and may_rerun(q):
                stack.append((q, b, d + 1))

    # The seeds (the reruns of held plans), however deep their chains
    for p, b in options.rerun_seeds:
        if 0 <= p < b < len(graph.kernels) and may_rerun(p):
            depth.setdefault((p, b), options.recompute_depth)

    # Keep the options whose every input can be had, until nothing changes.
    kept = set(depth)
    changed = True
    while changed:
        changed = False
        for p, b in list(kept):
            ok = True
            for u in reads(p):
                if not facts.unchanged(u, first_reader[p][u], b) or not may_be_fast[u]:
                    ok = False
                    break
                over = int(live.first[u]) <= b - 1 and int(live.last[u]) >= b
                if not over and (int(live.producer[u]), b) not in kept:
                    ok = False
                    break
            if not ok:
                kept.discard((p, b))
                changed = True

    if options.rerun_seeds_only:  # a tensor no option restores is never worth dropping
        droppable &= {o for p, _ in kept for o in kernel_outputs[p]}
    boundaries: dict[int, set[int]] = {}
    for p, b in kept:
        for o in kernel_outputs[p]:
            if o in droppable and int(live.first[o]) < b <= int(live.last[o]):
                boundaries.setdefault(o, set()).add(b)
        for u in kernel_inputs[p]:  # a rerun's read is a use: moves may meet it there
            if int(live.first[u]) <= b - 1 and int(live.last[u]) >= b:
                boundaries.setdefault(u, set()).add(b)
    ordered = sorted(kept, key=lambda pb: (pb[1], pb[0]))
    return RerunOptions(
        tuple(RerunOption(p, b, seconds[p] or 0.0, kernel_inputs[p], kernel_outputs[p],
                          kernels if len(kernels := facts.rerun_kernels(p)) > 1 else ())
              for p, b in ordered),
        frozenset(droppable),
        {t: tuple(sorted(bs)) for t, bs in boundaries.items()},
    )
