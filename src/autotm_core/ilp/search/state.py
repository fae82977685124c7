"""What every search of one formulation's model works on, shared by its states."""

from __future__ import annotations

import attrs

from autotm_core.costs.model import KernelCosts
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.search.budget import Budget
from autotm_core.ilp.search.events import Listener
from autotm_core.ilp.search.strategy import Strategy
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.solvers.base import Solver


@attrs.define
class SearchState:
    """The problem, the formulation's options, the solver, the gap, the strategy, the budget
    and the listener of one search; the states of the exact model search, the fitting loop
    and the approximate planner add what their steps change."""

    graph: Graph
    """The graph planned."""
    system: MemorySystem
    """The memory system, with the limits applied."""
    costs: KernelCosts
    """The kernel costs."""
    options: FormulationOptions
    """The formulation and its options (capacities, pinning, page size)."""
    solver: Solver
    """The backend every solve runs on."""
    relative_gap: float
    """The gap at which a solve stops."""
    strategy: Strategy
    """Every knob."""
    budget: Budget
    """The time, and where it went."""
    listener: Listener
    """Told of the search's events."""

    @property
    def formulation(self) -> Formulation:
        """The formulation searched."""
        return self.options.formulation


__all__ = ["SearchState"]
