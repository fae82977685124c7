"""Baselines every planner is compared with: all-fast, all-slow, first-touch, 2LM, greedy, and
what practitioners do by hand when a model does not fit: checkpoint every layer, offload the
saved activations, recompute the cheapest activations that make it fit.

Each is a function ``(graph, system, *, fast_capacity_nbytes, costs=None, **options) -> Plan``
whose plan passes :func:`autotm_core.plans.verify.check_plan` against the system
with its fast pool limited to ``fast_capacity_nbytes`` (every bounded pool
respected, every copy current, one step of a training loop), or which raises
:class:`~autotm_core.errors.CapacityError` naming the pool, the kernel and the
shortfall when it finds no such plan, and :class:`~autotm_core.errors.PlanError`
naming the kernel when ``costs`` is a partial cost table that allows it no
configuration the baseline can use. See docs/baselines.md for the model and
assumptions of each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autotm_core.baselines.all_fast import all_fast
from autotm_core.baselines.all_slow import all_slow
from autotm_core.baselines.checkpoint_layers import checkpoint_layers
from autotm_core.baselines.first_touch import first_touch
from autotm_core.baselines.greedy import greedy
from autotm_core.baselines.offload_activations import offload_activations
from autotm_core.baselines.recompute_only import recompute_only
from autotm_core.baselines.two_level import (
    CacheResult,
    cache_model,
    two_level_memory,
    two_level_plan,
)
from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan

BASELINES: dict[str, Callable[..., Plan]] = {
    "all-fast": all_fast,
    "all-slow": all_slow,
    "first-touch": first_touch,
    "2lm": two_level_memory,
    "greedy": greedy,
    "checkpoint-layers": checkpoint_layers,
    "offload-activations": offload_activations,
    "recompute-only": recompute_only,
}
"""Baseline name -> planner function."""


def run_baseline(
    name: str,
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    **options: Any,
) -> Plan:
    """The plan of baseline ``name`` (``options`` go to it: ``costs`` for every baseline,
    ``line_nbytes`` for 2lm, ...)."""
    try:
        planner = BASELINES[name]
    except KeyError:
        raise UsageError(
            f"no baseline called {name!r}", hint=f"use one of {', '.join(BASELINES)}"
        ) from None
    return planner(graph, system, fast_capacity_nbytes=fast_capacity_nbytes, **options)


__all__ = [
    "BASELINES",
    "CacheResult",
    "all_fast",
    "all_slow",
    "cache_model",
    "checkpoint_layers",
    "first_touch",
    "greedy",
    "offload_activations",
    "recompute_only",
    "run_baseline",
    "two_level_memory",
    "two_level_plan",
]
