"""Models shared by the approximate planner's tests: chains and MLPs on two or three pools."""

from __future__ import annotations

from autotm_core.costs import resolve_costs
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.options import FormulationOptions
from autotm_core.memory import MemorySystem, Pool
from autotm_core.presets import preset
from autotm_core.solvers.highs import HighsSolver

HIGHS = HighsSolver()


def three_pools(graph) -> MemorySystem:
    peak = graph.liveness.peak_nbytes
    return MemorySystem(name="three", pools=(
        Pool("hbm", int(peak * 0.3), 1e12, 1e12, 1e-7), Pool("dram", int(peak * 0.3), 1e11, 1e11),
        Pool("pmm", None, 3e10, 1e10, 3e-7)))


def setting(graph, fraction: float, formulation: str, three: bool = False):
    """The system (the fast pool at ``fraction`` of peak live bytes), costs and model."""
    if three:
        system = three_pools(graph)
    else:
        system = preset("optane-2019")
        system = system.with_capacity(system.fast.name, int(graph.liveness.peak_nbytes * fraction))
    costs = resolve_costs(graph, system)
    index = build_program(graph, costs, system, None, FormulationOptions(formulation=formulation))
    return system, costs, index
