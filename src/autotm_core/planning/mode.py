"""Which planner to use: exact ILP, the budgeted large-graph planner, or chosen by size."""

from __future__ import annotations

import enum

from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY
from autotm_core.ir import Graph
from autotm_core.units import parse_choice


class PlanMode(enum.Enum):
    """How ``solve`` plans: ``--mode exact|approximate|auto``."""

    EXACT = "exact"
    """The exact ILP (:func:`autotm_core.ilp.planner.plan_graph`), to its gap or time limit."""
    APPROXIMATE = "approximate"
    """:func:`autotm_core.ilp.approximate.plan_approximate`: reductions, a time budget,
    never worse than greedy, with a lower bound."""
    AUTO = "auto"
    """Exact up to the strategy's
    :attr:`~autotm_core.ilp.search.strategy.Strategy.approximate_above_kernels` kernels,
    approximate above."""

    @classmethod
    def parse(cls, value: PlanMode | str) -> PlanMode:
        """The member called ``value`` (any case)."""
        return parse_choice(cls, value, what="planning mode")


def resolve_mode(graph: Graph, mode: PlanMode | str, *,
                 threshold_kernels: int = DEFAULT_STRATEGY.approximate_above_kernels) -> PlanMode:
    """``EXACT`` or ``APPROXIMATE``: ``mode`` itself, or for ``auto`` the one ``graph``'s size
    calls for."""
    mode = PlanMode.parse(mode)
    if mode is not PlanMode.AUTO:
        return mode
    return PlanMode.APPROXIMATE if len(graph.kernels) > threshold_kernels else PlanMode.EXACT
