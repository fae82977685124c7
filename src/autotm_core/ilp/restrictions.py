"""The ways the model is narrower than the plan rules, for one problem: honest labels.

An "optimal" plan is optimal among the plans the model can express. The plan
rules (:mod:`autotm_core.plans.model`, checked by the verifier) allow more in some
ways; :func:`model_restrictions` lists those that apply to a given graph, memory
system, costs and options, one line each, so a report can say "optimal within
the model, which ..." instead of claiming more than was proven.
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.ilp.gadgets import tensor_slots
from autotm_core.ilp.options import (
    Formulation,
    FormulationOptions,
    binding_pools,
    resolve_capacities,
)
from autotm_core.ilp.reruns import rerun_options
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem


def _recompute_restrictions(graph: Graph, system: MemorySystem, costs: KernelCosts,
                            options: FormulationOptions) -> list[str]:
    """How the model narrows the plan rules' reruns (:mod:`autotm_core.ilp.reruns`)."""
    if not options.recompute:
        # options without chains are cheaper to find, and there are some in most steps
        some = any(rerun_options(graph, costs, system,
                                 attrs.evolve(options, recompute=True, recompute_depth=depth)
                                 ).options for depth in sorted({0, options.recompute_depth}))
        if some:
            return ["this model keeps and moves only (it recomputes no activation): a plan "
                    "that reruns a producer instead of keeping or moving its output is not "
                    "found by it"]
        return []
    if options.rerun_seeds_only:
        out = [f"a rerun runs only where a plan held to start from reruns it (this model "
               f"chooses among those {len(options.rerun_seeds)} reruns and where everything "
               "else lives): any other rerun is not found by it"]
    else:
        seeded = " or as a plan held to start from reruns it" if options.rerun_seeds else ""
        out = ["a rerun runs only just before a use of a value it restores (or at such a "
               f"boundary, in a chain of at most {options.recompute_depth} producers{seeded}), "
               "and restores only a value dropped from every pool: a rerun at another "
               "boundary, or instead of fetching a copy, is not found"]
    if options.formulation is Formulation.STATIC:
        out.append("static: a tensor keeps its one pool, but for being dropped and restored "
                   "into the fastest pool")
    return out


def model_restrictions(graph: Graph, system: MemorySystem, *, costs: KernelCosts,
                       options: FormulationOptions) -> tuple[str, ...]:
    """One line per way the model of ``options`` is narrower than the plan rules here.

    Empty when the model can express every plan the rules allow that could matter
    (every other difference never makes a plan faster or fit where it did not).
    """
    out: list[str] = []
    capacities = resolve_capacities(graph, system, options.capacities)
    bounded = [system.pools[q].name
               for q in binding_pools(graph, capacities, options.page_nbytes)]
    if options.page_nbytes > 1 and bounded:
        out.append(f"tensor sizes are rounded up to {options.page_nbytes}-byte pages in the "
                   f"capacity of {', '.join(bounded)}: a plan that fits only unrounded is not "
                   "found")
    if options.pin_to_fast:
        kinds = ", ".join(sorted(k.value for k in options.pinned_kinds))
        out.append(f"tensors of kinds {kinds} stay in {system.pools[0].name!r} for their "
                   "whole life (pin_to_fast)")
    for pool, names in sorted(options.begin_outside.items()):
        if names:
            shown = ", ".join(repr(n) for n in sorted(names)[:3])
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            out.append(f"{shown}{more} may not begin the step in {pool!r} (their stays there "
                       "at the step's start and end found no common address in an earlier "
                       "address-fitting round): a plan where they do is not found")
    out += _recompute_restrictions(graph, system, costs, options)
    if options.formulation is Formulation.STATIC:
        return tuple(out)
    if _slower_copy_can_be_faster(costs):
        out.append("a kernel reads each tensor from the fastest pool holding it; with these "
                   "costs a slower copy is sometimes faster to read, which the model never "
                   "chooses")
    slowest = system.pools[-1].name
    if len(system.pools) > 2 or slowest in bounded:
        why = "three or more pools" if len(system.pools) > 2 else f"{slowest!r} bounded"
        out.append("a tensor moves only right after a use (or its birth) or right before one; "
                   f"with {why}, a move at another kernel boundary can pay")
    if options.formulation is Formulation.ASYNCHRONOUS:
        out += _async_restrictions(graph, system, options)
    return tuple(out)


def _async_restrictions(graph: Graph, system: MemorySystem,
                        options: FormulationOptions) -> list[str]:
    """How the asynchronous model narrows the kernels a copy may be in flight over (the rules
    allow any kernels of the tensor's life that do not write it): the window of the gaps
    between gadgets (:func:`~autotm_core.ilp.gadgets.tensor_slots`), flights that end at a
    use or begin at one (or last one kernel) where a slower pool is bounded, and a copy into
    a faster pool during a last kernel that reads the tensor."""
    out = []
    window = options.async_window
    slots = tensor_slots(graph, static=False, asynchronous=True, window=window)
    gaps = [(s.last - s.first + 1, i + 1 < len(ts.slots)) for ts in slots
            for i, s in enumerate(ts.slots) if not s.gadget]
    if options.async_spans and any(n > window for n, _ in gaps):
        out.append("between two uses of a tensor (or its birth, or the step's ends) an "
                   "asynchronous eviction is issued after the first use and completes within "
                   f"{window} kernels of it, and a fetch is issued within {window} kernels of "
                   "the second use and completes by it: a copy issued or completing further "
                   "from the use is not found")
    elif not options.async_spans and any(n > 1 for n, _ in gaps):
        out.append("between two uses of a tensor (or its birth, or the step's ends) an "
                   "asynchronous copy overlaps one kernel (async_spans is off), within "
                   f"{window} kernels of the use: a copy in flight over several kernels, or "
                   "further from the use, is not found")
    capacities = resolve_capacities(graph, system, options.capacities)
    if options.async_spans and gaps and any(
            q > 0 for q in binding_pools(graph, capacities, options.page_nbytes)):
        out.append("a copy whose source (a fetch) or target (an eviction) is a bounded slower "
                   "pool is in flight up to the use (from it) or during one kernel (a fetch's "
                   "in the second half of the gap): one in flight over fewer kernels, holding "
                   "that pool for less time, is not found")
    live, last = graph.liveness, len(graph.kernels) - 1
    entries = range(int(live.kernel_ptr[last]), int(live.kernel_ptr[last + 1])) \
        if last >= 0 else range(0)
    if any(ts.cyclic and not live.kernel_writes[e] and int(live.kernel_tensors[e]) == ts.tensor
           for ts in slots for e in entries):
        out.append("a copy overlapping the last kernel into a faster pool than the one it "
                   "reads a tensor from, readying the next step (the tensor exists before the "
                   "step and survives it), is not found")
    return out


def _slower_copy_can_be_faster(costs: KernelCosts) -> bool:
    """Whether some kernel could run faster reading a tensor from a slower pool.

    Separable costs: some term's coefficient drops from a faster pool to a slower one.
    Cost tables are not checked configuration by configuration: they may say anything.
    """
    separable = costs.separable()
    if separable is None:
        return True
    coefficients = np.asarray(separable.coefficients)  # (entries, terms, pools)
    return any(bool(np.any(coefficients[:, :, p + 1:] < coefficients[:, :, p:p + 1]))
               for p in range(coefficients.shape[2] - 1))


__all__ = ["model_restrictions"]
