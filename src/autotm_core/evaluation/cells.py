"""One cell of the evaluation: a workload, a system, a fast-memory limit and a policy.

:func:`run_cell` plans it (ILP formulation or baseline), simulates the plan and
returns a :class:`CellResult`. A cell without a plan (too little memory, no
plan found in time) is a result with status ``no-plan``, not an error.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import attrs

from autotm_core.errors import AutotmError
from autotm_core.evaluation.experiments import ILP_POLICIES

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class Cell:
    """What to plan."""

    experiment: str
    """Experiment name."""
    label: str
    """Workload label."""
    spec: str
    """Zoo network with options."""
    system: str
    """Memory system name."""
    limit: str
    """PMM:DRAM ratio (``4:1``) or a size (``141GB``)."""
    policy: str
    """ILP formulation or baseline name."""
    time_limit_seconds: float
    """ILP time limit."""
    relative_gap: float
    """ILP relative gap."""

    @property
    def key(self) -> str:
        """Identity in the results file: everything that changes the answer."""
        return "|".join([self.experiment, self.spec, self.system, self.limit, self.policy,
                         f"{self.time_limit_seconds:g}", f"{self.relative_gap:g}"])

    def to_json(self) -> dict[str, Any]:
        """The cell as JSON values."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class CellResult:
    """What planning one cell gave."""

    cell: Cell
    """The cell."""
    status: str
    """``ok`` or ``no-plan`` (see :attr:`message`)."""
    n_kernels: int
    """Kernels of the graph."""
    peak_nbytes: int
    """Peak live bytes of the graph (tensors and workspace)."""
    fast_capacity_nbytes: int
    """The fast pool's limit."""
    all_fast_seconds: float
    """Predicted step time with everything in the fastest pool, no limit."""
    step_seconds: float | None = None
    """Predicted step time of the plan."""
    moved_nbytes: int = 0
    """Bytes the plan copies between pools per step."""
    plan_seconds: float = 0.0
    """Wall time to plan (for the ILP: build, warm start, solve, decode, verify)."""
    build_seconds: float | None = None
    """ILP only: seconds to generate the model."""
    solve_seconds: float | None = None
    """ILP only: seconds in the solver."""
    gap: float | None = None
    """ILP only: relative gap proved."""
    termination: str = ""
    """ILP only: why the solver stopped."""
    n_variables: int | None = None
    """ILP only: variables of the model."""
    n_binaries: int | None = None
    """ILP only: binary variables."""
    n_constraints: int | None = None
    """ILP only: rows."""
    n_nonzeros: int | None = None
    """ILP only: nonzeros."""
    message: str = ""
    """Why there is no plan, when there is none."""

    @property
    def slowdown(self) -> float | None:
        """Step time over all-fast time (``None`` without a plan)."""
        if self.step_seconds is None or self.all_fast_seconds <= 0:
            return None
        return self.step_seconds / self.all_fast_seconds

    def to_json(self) -> dict[str, Any]:
        """The result as JSON values."""
        data = attrs.asdict(self, recurse=False)
        data["cell"] = self.cell.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        """The inverse of :meth:`to_json` (TypeError/KeyError on malformed data)."""
        return cls(**{**data, "cell": Cell(**data["cell"])})


@attrs.define
class Workbench:
    """Graphs, systems, costs and all-fast times, each computed once per process."""

    _graphs: dict[str, Any] = attrs.Factory(dict)
    _contexts: dict[tuple[str, str], tuple[Any, Any, float]] = attrs.Factory(dict)

    def graph(self, spec: str) -> Any:
        """The zoo graph ``spec``."""
        if spec not in self._graphs:
            from autotm_core.zoo import build_network

            self._graphs[spec] = build_network(spec)
        return self._graphs[spec]

    def context(self, spec: str, system_name: str) -> tuple[Any, Any, float]:
        """(system, costs, all-fast seconds) of ``spec`` on ``system_name``."""
        key = (spec, system_name)
        if key not in self._contexts:
            from autotm_core.baselines import all_fast
            from autotm_core.costs import resolve_costs
            from autotm_core.evaluation.systems import evaluation_system
            from autotm_core.simulation import simulate

            graph = self.graph(spec)
            system = evaluation_system(system_name)
            costs = resolve_costs(graph, system)
            unbounded = system.with_capacity(system.fast.name, None)
            ideal = simulate(all_fast(graph, unbounded), graph, unbounded, costs).step_seconds
            self._contexts[key] = (system, costs, float(ideal))
        return self._contexts[key]


def limit_nbytes(graph: Any, limit: str) -> int:
    """The fast-pool limit in bytes: a ratio over the peak live bytes, or a size."""
    from autotm_core.capacity import fast_capacity

    if ":" in limit:
        return int(fast_capacity(graph, ratio=limit))  # type: ignore[arg-type]
    return int(fast_capacity(graph, nbytes=limit))  # type: ignore[arg-type]


def limited_system(system: Any, capacity_nbytes: int) -> Any:
    """``system`` with its fast pool, and every middle pool, limited to ``capacity_nbytes``.

    With three pools (HBM, DRAM, CXL) at PMM:DRAM-style ratio r, HBM and DRAM each
    hold peak / (r + 1); the rest must live in the slowest pool.
    """
    for pool in system.pools[:-1]:
        system = system.with_capacity(pool.name, capacity_nbytes)
    return system


def run_cell(cell: Cell, bench: Workbench) -> CellResult:
    """Plan ``cell`` and simulate its plan."""
    graph = bench.graph(cell.spec)
    system, costs, ideal = bench.context(cell.spec, cell.system)
    capacity = limit_nbytes(graph, cell.limit)
    system = limited_system(system, capacity)
    base: dict[str, Any] = {"cell": cell, "n_kernels": len(graph.kernels),
            "peak_nbytes": int(graph.liveness.peak_nbytes),
            "fast_capacity_nbytes": capacity, "all_fast_seconds": ideal}
    started = time.perf_counter()
    try:
        if cell.policy in ILP_POLICIES:
            facts = _plan_ilp(cell, graph, system, costs)
        else:
            facts = _plan_baseline(cell, graph, system, costs)
    except AutotmError as exc:
        logger.info("no plan for %s: %s", cell.key, exc.message)
        return CellResult(status="no-plan", message=exc.message,
                          plan_seconds=time.perf_counter() - started, **base)
    return CellResult(status="ok", plan_seconds=time.perf_counter() - started, **facts, **base)


def _plan_ilp(cell: Cell, graph: Any, system: Any, costs: Any) -> dict[str, Any]:
    from autotm_core.ilp.planner import plan_graph

    result = plan_graph(graph, system, formulation=cell.policy, costs=costs,
                        time_limit_seconds=cell.time_limit_seconds,
                        relative_gap=cell.relative_gap)
    gap = result.plan.attributes.get("gap")
    return {"step_seconds": result.step_seconds,
            "moved_nbytes": int(result.simulation.pair_nbytes.sum()),
            "build_seconds": result.build_seconds, "solve_seconds": result.solve.solve_seconds,
            "gap": None if gap is None else float(gap),
            "termination": result.solve.termination.value,
            "n_variables": result.n_variables, "n_binaries": result.n_binaries,
            "n_constraints": result.n_constraints, "n_nonzeros": result.n_nonzeros}


def _plan_baseline(cell: Cell, graph: Any, system: Any, costs: Any) -> dict[str, Any]:
    from autotm_core.baselines import run_baseline
    from autotm_core.plans import check_plan
    from autotm_core.simulation import simulate

    plan = run_baseline(cell.policy, graph, system)
    check_plan(plan, graph, system)
    simulation = simulate(plan, graph, system, costs)
    # 2LM's plan moves nothing: its time is the cache model's, kept in the plan
    predicted = plan.attributes.get("predicted_seconds")
    step = float(predicted) if predicted is not None else float(simulation.step_seconds)
    return {"step_seconds": step, "moved_nbytes": int(simulation.pair_nbytes.sum())}
