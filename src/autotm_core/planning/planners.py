"""Every planner by name: the ILP's three formulations and the baselines.

One registry, one word: a *planner* is what ``solve``, ``baseline``, ``compare``,
``sweep`` and a grid file name. The ILP planners plan exactly or approximately
(:class:`~autotm_core.planning.mode.PlanMode`: the approximate planner is the ILP
planned a stretch at a time within a time budget, see docs/large-graphs.md);
the baselines are the functions of :mod:`autotm_core.baselines`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from autotm_core.baselines import BASELINES
from autotm_core.errors import UsageError
from autotm_core.ilp.options import Formulation


class PlannerKind(enum.Enum):
    """How a planner plans."""

    ILP = "ilp"
    """By integer linear programming, with one of AutoTM's formulations."""
    BASELINE = "baseline"
    """By a fixed rule (first-touch, 2LM, greedy, all in one pool, checkpointing,
    offloading, recomputing)."""


@attrs.frozen
class Planner:
    """One planner of the registry."""

    name: str
    """Its name, as every command and file takes it."""
    kind: PlannerKind
    """ILP or baseline."""
    description: str
    """One line for listings and help."""
    formulation: Formulation | None = None
    """The ILP formulation (``None`` for a baseline)."""

    @property
    def is_ilp(self) -> bool:
        """Whether the planner solves an ILP."""
        return self.kind is PlannerKind.ILP


_FORMULATION_WORDS = {
    Formulation.STATIC: "ILP, every tensor in one pool for its life (no moves)",
    Formulation.SYNCHRONOUS: "ILP, blocking moves between kernels (AutoTM's default)",
    Formulation.ASYNCHRONOUS: "ILP, moves may also overlap nearby kernels",
}
_BASELINE_WORDS = {
    "all-fast": "everything in the fastest pool (fits only when it all fits)",
    "all-slow": "everything in the slowest pool",
    "first-touch": "first-touch NUMA: fast pool until full, then slow; no moves",
    "2lm": "the fast pool as a hardware cache in front of the slow pool (Memory Mode)",
    "greedy": "a greedy heuristic that moves tensors",
    "checkpoint-layers": "recompute every layer in backward, as gradient checkpointing does",
    "offload-activations": "saved activations copied out in forward, reloaded in backward "
                           "(torchtune)",
    "recompute-only": "the cheapest recomputation that fits, no moves "
                      "(torch's activation memory budget)",
}

PLANNERS: Mapping[str, Planner] = {
    **{f.value: Planner(f.value, PlannerKind.ILP, _FORMULATION_WORDS[f], f) for f in Formulation},
    **{name: Planner(name, PlannerKind.BASELINE, _BASELINE_WORDS[name]) for name in BASELINES},
}
"""Every planner, by name: the ILP formulations first, then the baselines."""

ILP_PLANNERS = tuple(name for name, p in PLANNERS.items() if p.is_ilp)
"""Names of the ILP planners."""
BASELINE_PLANNERS = tuple(name for name, p in PLANNERS.items() if not p.is_ilp)
"""Names of the baselines."""
COMPARED_BASELINES = ("greedy", "first-touch", "2lm", "all-slow", "checkpoint-layers",
                      "offload-activations", "recompute-only")
"""Baselines every ILP plan is compared with, when each can exist at the limit."""


def get_planner(planner: str | Planner) -> Planner:
    """The planner called ``planner``; one :class:`UsageError` listing them all if none is."""
    if isinstance(planner, Planner):
        return planner
    try:
        return PLANNERS[planner]
    except KeyError:
        raise UsageError(f"no planner called {planner!r}",
                         hint=f"use an ILP formulation ({', '.join(ILP_PLANNERS)}) or a "
                         f"baseline ({', '.join(BASELINE_PLANNERS)})") from None
