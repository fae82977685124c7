"""What is planned: a graph, a memory system, its kernel costs and a capacity limit.

A :class:`Problem` holds the inputs of one point, each loaded and parsed once;
the limited memory system, the fast pool's limit and the all-fast step time
(the ideal every plan is compared with) are derived from it once.
:func:`load_problem` makes one from what a user writes (a graph source, a
preset or system file, a limit, a cost file) and keeps the loaded graph,
system and costs for later problems of the same graph and system in the
process, as a sweep needs.
"""

from __future__ import annotations

import functools
import logging
import os

import attrs

from autotm_core.capacity import Limit
from autotm_core.costs.model import KernelCosts
from autotm_core.errors import GraphError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

logger = logging.getLogger(__name__)


def _has_kernels(_instance: object, _attribute: object, graph: Graph) -> None:
    """A point of a graph without kernels has no step to plan: refused here, at once, for
    every planner (a graph file may legally have none; ``info`` shows it)."""
    if not graph.kernels:
        raise GraphError(f"graph {graph.name!r} has no kernels: there is no step to plan",
                         hint="give the graph at least one kernel")


def _to_limit(value: Limit | str | None) -> Limit:
    return value if isinstance(value, Limit) else Limit.parse(value)


@attrs.frozen(kw_only=True, eq=False)
class Problem:
    """One point to plan: the graph, the memory system, the costs and the limit."""

    graph: Graph = attrs.field(validator=_has_kernels)
    """The program (with at least one kernel)."""
    system: MemorySystem
    """The memory system as given, before :attr:`limit` is applied."""
    costs: KernelCosts
    """Kernel costs for :attr:`system`'s pools (roofline or a cost file)."""
    limit: Limit = attrs.field(factory=Limit, converter=_to_limit)
    """Capacity limits of some pools (empty: the system's own)."""
    memo: dict[str, float | None] = attrs.field(factory=dict, repr=False)
    """Facts that do not depend on the limit (the all-fast time), shared by
    :meth:`with_limit`; not part of the problem's meaning."""

    @functools.cached_property
    def limited_system(self) -> MemorySystem:
        """:attr:`system` with :attr:`limit` applied: what every planner plans for."""
        return self.limit.apply(self.graph, self.system)

    @property
    def fast_capacity_nbytes(self) -> int | None:
        """The fastest pool's limit in bytes (``None``: unbounded)."""
        return self.limited_system.fast.capacity_nbytes

    @property
    def peak_nbytes(self) -> int:
        """Peak live bytes of the graph (tensors and workspace)."""
        return int(self.graph.liveness.peak_nbytes)

    @property
    def all_fast_seconds(self) -> float | None:
        """Predicted step time with every tensor in the fastest pool and no limit: the ideal.

        ``None`` when the costs cannot price it (a cost table without some kernel's
        all-fast configuration).
        """
        if "all_fast_seconds" not in self.memo:
            from autotm_core.baselines import all_fast
            from autotm_core.errors import CapacityError, PlanError
            from autotm_core.simulation import simulate

            unbounded = self.system.with_capacity(self.system.fast.name, None)
            try:
                seconds: float | None = float(simulate(
                    all_fast(self.graph, unbounded, costs=self.costs), self.graph, unbounded,
                    self.costs).step_seconds)
            except (PlanError, CapacityError) as exc:
                logger.info("no all-fast time: %s", exc.message)
                seconds = None
            self.memo["all_fast_seconds"] = seconds
        value = self.memo["all_fast_seconds"]
        return None if value is None else float(value)

    def with_limit(self, limit: Limit | str | None) -> Problem:
        """The same graph, system and costs under another limit (sharing :attr:`memo`)."""
        return Problem(graph=self.graph, system=self.system, costs=self.costs,
                       limit=_to_limit(limit), memo=self.memo)


def load_problem(graph: str | Graph, system: str | MemorySystem, *,
                 limit: Limit | str | None = None,
                 costs_path: str | os.PathLike[str] | None = None) -> Problem:
    """The problem a user names: a graph source or graph, a preset, file or system, a limit.

    Graphs, systems and costs named by text are loaded once per process (a sweep's
    points and a worker's tasks share them); the all-fast time is shared too.
    """
    if isinstance(graph, str) and isinstance(system, str):
        base = _loaded(graph, system, None if costs_path is None else os.fspath(costs_path))
        return base.with_limit(limit)
    from autotm_core.costs import resolve_costs
    from autotm_core.presets import resolve_system
    from autotm_core.sources import load_source

    graph = load_source(graph) if isinstance(graph, str) else graph
    system = resolve_system(system) if isinstance(system, str) else system
    return Problem(graph=graph, system=system, limit=_to_limit(limit),
                   costs=resolve_costs(graph, system, costs_path=costs_path))


@functools.lru_cache(maxsize=16)
def _loaded(graph_source: str, system_name: str, costs_path: str | None) -> Problem:
    from autotm_core.costs import resolve_costs
    from autotm_core.presets import resolve_system
    from autotm_core.sources import load_source

    graph = load_source(graph_source)
    system = resolve_system(system_name)
    return Problem(graph=graph, system=system,
                   costs=resolve_costs(graph, system, costs_path=costs_path))
