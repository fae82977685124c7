"""What a cost table allows a baseline: the kernels whose table leaves configurations out.

A measured cost table (:class:`~autotm_core.costs.TableCosts`) may list only some
configurations of a kernel; a plan whose kernel runs in another cannot be priced.
:func:`allowed_configs` finds the kernels whose table is partial (the roofline and
complete tables restrict nothing, so baselines pay nothing for them), and
:class:`AllowedConfigs` answers what a baseline asks while it places tensors:
whether a configuration is allowed, whether some allowed one agrees with the pools
chosen so far, and, when none does, an error naming the kernel and what its table
allows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs

from autotm_core.costs.model import CostTable, KernelCosts
from autotm_core.errors import PlanError, UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

SHOWN_CONFIGS = 4
"""Allowed configurations an error message lists before counting the rest."""


@attrs.frozen(slots=True, eq=False)
class AllowedConfigs:
    """The configurations of the kernels whose cost table leaves some out.

    Tables are small (a few tensors per kernel), so rows are answered as Python
    tuples: a call costs microseconds where a NumPy one costs tens of them.
    """

    graph: Graph
    """The program."""
    pool_names: tuple[str, ...]
    """Names of the memory system's pools, fastest first (a configuration's positions)."""
    tables: Mapping[int, CostTable]
    """Kernel position -> its (partial) table; kernels absent here allow every configuration."""
    _rows: dict[int, tuple[tuple[int, ...], ...]] = attrs.field(init=False, factory=dict)
    _sets: dict[int, frozenset[tuple[int, ...]]] = attrs.field(init=False, factory=dict)

    def restricts(self, kernel: int) -> bool:
        """Whether ``kernel``'s table leaves some configuration out."""
        return kernel in self.tables

    def rows(self, kernel: int) -> tuple[tuple[int, ...], ...]:
        """The configurations ``kernel``'s table allows (pool positions, tensor order)."""
        rows = self._rows.get(kernel)
        if rows is None:
            rows = tuple(map(tuple, self.tables[kernel].configs.tolist()))
            self._rows[kernel] = rows
        return rows

    def allows(self, kernel: int, pools: Sequence[int]) -> bool:
        """Whether ``kernel`` may run with its tensors in ``pools`` (positions, tensor order)."""
        if kernel not in self.tables:
            return True
        allowed = self._sets.get(kernel)
        if allowed is None:
            allowed = frozenset(self.rows(kernel))
            self._sets[kernel] = allowed
        return tuple(int(p) for p in pools) in allowed

    def matching(self, kernel: int, options: Sequence[Collection[int]]) -> list[int]:
        """The rows of ``kernel``'s table that put each tensor ``i`` in one of ``options[i]``."""
        return [r for r, row in enumerate(self.rows(kernel))
                if all(p in pools for p, pools in zip(row, options, strict=True))]

    def compatible(self, kernel: int, options: Sequence[Collection[int]]) -> bool:
        """Whether some allowed configuration puts every tensor ``i`` in one of ``options[i]``."""
        if kernel not in self.tables:
            return True
        return any(all(p in pools for p, pools in zip(row, options, strict=True))
                   for row in self.rows(kernel))

    def describe(self, kernel: int, pools: Sequence[int]) -> str:
        """``(x: dram, w: pmm)``: tensor ``i`` of ``kernel`` in pool ``pools[i]``."""
        names = self.graph.kernels[kernel].tensors
        return "(" + ", ".join(f"{n}: {self.pool_names[int(p)]}"
                               for n, p in zip(names, pools, strict=True)) + ")"

    def listing(self, kernel: int) -> str:
        """The configurations ``kernel``'s table allows, the first few written out."""
        rows = self.rows(kernel)
        shown = ", ".join(self.describe(kernel, row) for row in rows[:SHOWN_CONFIGS])
        more = f" and {len(rows) - SHOWN_CONFIGS} more" if len(rows) > SHOWN_CONFIGS else ""
        return f"{shown}{more}"

    def refusal(self, who: str, kernel: int, why: str) -> PlanError:
        """The error of baseline ``who`` that cannot run ``kernel`` as its table allows."""
        name = self.graph.kernels[kernel].name
        return PlanError(
            f"{who}: kernel {name!r} (#{kernel}) {why}; its cost table allows only "
            f"{self.listing(kernel)}",
            hint="add the configuration to the cost table (profile it), or use a planner that "
            "chooses among the allowed ones (greedy, first-touch or the ILP)",
        )

    def check_configs(self, who: str, configs: Sequence[Sequence[str]]) -> None:
        """:class:`PlanError` for the first kernel whose configuration its table refuses."""
        index = {name: p for p, name in enumerate(self.pool_names)}
        for kernel in sorted(self.tables):
            pools = [index.get(name, -1) for name in configs[kernel]]
            if not self.allows(kernel, pools):
                raise self.refusal(who, kernel,
                                   f"would run with {self.describe(kernel, pools)}")


def allowed_configs(
    graph: Graph, system: MemorySystem, costs: KernelCosts | None
) -> AllowedConfigs | None:
    """What ``costs`` allows, or ``None`` when it allows every configuration of every kernel.

    A separable form (the roofline) prices every placement; a table restricts a
    kernel when it lists fewer distinct configurations than the pools allow.
    """
    if costs is None or costs.separable() is not None:
        return None
    n_pools = len(system.pools)
    if costs.n_pools != n_pools:
        raise UsageError(
            f"the costs are for {costs.n_pools} pools; memory system {system.name!r} has {n_pools}",
            hint="use the cost table made for this memory system",
        )
    ptr = graph.liveness.kernel_ptr.tolist()
    partial: dict[int, CostTable] = {}
    for k, kernel in enumerate(graph.kernels):
        width = ptr[k + 1] - ptr[k]
        try:
            table = costs.table(k)
        except IndexError:
            table = None
        if table is None or table.configs.ndim != 2 or table.configs.shape[1] != width:
            raise UsageError(
                f"the costs do not fit graph {graph.name!r}: kernel {kernel.name!r} (#{k}) "
                f"touches {width} tensors, and the costs have no table of that width for it",
                hint="use the cost table made for this graph",
            )
        every = n_pools**width
        # a table lists a configuration once (the loader refuses repeats); count when it might not
        if len(table.configs) < every or len(set(map(tuple, table.configs.tolist()))) < every:
            partial[k] = table
    if not partial:
        return None
    return AllowedConfigs(graph=graph, pool_names=tuple(p.name for p in system.pools),
                          tables=partial)
