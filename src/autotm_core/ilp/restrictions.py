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
    out = ["a rerun runs only just before a use of a value it restores (or at such a "
           f"boundary, in a chain of at most {options.recompute_depth} producers), and restores "
           "only a value dropped from every pool: a rerun at another boundary, or instead of "
           "fetching a copy, is not found"]
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
        out.append("an asynchronous copy overlaps only a kernel that does not use the tensor "
                   f"(the rules allow one that only reads it), within {options.async_window} "
                   "kernels of a use")
    return tuple(out)


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
