"""The report of ``solve``: the ILP's plan against all-fast and the baselines, the model and the
solve, the address fitting, then the simulated plan (moves, memory over time per pool)."""

from __future__ import annotations

import logging
import math
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import AutotmError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.report.plan_report import render_simulation, simulation_facts
from autotm_core.units import format_bytes, format_seconds

logger = logging.getLogger(__name__)

COMPARED_BASELINES = ("greedy", "first-touch", "2lm", "all-slow")
"""Baselines the plan is compared with, when each can exist at the capacity."""

_NOT_PROVEN = ("time_limit", "interrupted", "iteration_limit", "unknown", "error")
"""Terminations after which a loaded plan is the best found, not a proven one."""


def all_fast_seconds(graph: Graph, system: MemorySystem, costs: KernelCosts) -> float:
    """Predicted step time with every tensor in the fastest pool, without a capacity limit."""
    from autotm_core.baselines import all_fast
    from autotm_core.simulation import simulate

    unlimited = system.with_capacity(system.fast.name, None)
    return float(simulate(all_fast(graph, unlimited), graph, unlimited, costs).step_seconds)


def baseline_facts(graph: Graph, system: MemorySystem, costs: KernelCosts, *,
                   fast_capacity_nbytes: int | None) -> list[dict[str, Any]]:
    """Predicted step time of each of :data:`COMPARED_BASELINES` at the capacity.

    A baseline that cannot exist there (it raises an :class:`AutotmError`) is kept with
    ``step_seconds`` ``None`` and the reason in ``skipped``. 2LM's time is its cache model's.
    """
    from autotm_core.baselines import run_baseline
    from autotm_core.simulation import simulate

    limited = system.with_capacity(system.fast.name, fast_capacity_nbytes) \
        if fast_capacity_nbytes is not None else system
    out: list[dict[str, Any]] = []
    for name in COMPARED_BASELINES:
        try:
            plan = run_baseline(name, graph, system, fast_capacity_nbytes=fast_capacity_nbytes)
            if "predicted_seconds" in plan.attributes:
                seconds = float(plan.attributes["predicted_seconds"])
            else:
                seconds = float(simulate(plan, graph, limited, costs).step_seconds)
        except AutotmError as exc:
            logger.info("baseline %s skipped: %s", name, exc.message)
            out.append({"name": name, "step_seconds": None, "skipped": exc.message})
            continue
        out.append({"name": name, "step_seconds": seconds, "skipped": None})
    return out


def _plan_and_baselines(simulation: Any, all_fast: float, baselines: list[dict[str, Any]],
                        top: int) -> dict[str, Any]:
    """The simulated plan's facts, with each baseline's slowdown and the plan's speedup."""
    facts = simulation_facts(simulation, all_fast_seconds=all_fast, top=top)
    step = facts["step_seconds"]
    for b in baselines:
        seconds = b["step_seconds"]
        b["slowdown"] = seconds / all_fast if seconds is not None and all_fast else None
        b["plan_speedup"] = seconds / step if seconds is not None and step else None
    facts["baselines"] = baselines
    return facts


def solve_facts(result: Any, *, all_fast: float, baselines: list[dict[str, Any]],
                fitted: Any = None, top: int = 10) -> dict[str, Any]:
    """Everything ``solve`` reports, as plain data (the ``--json`` output).

    ``result`` is the :class:`~autotm_core.ilp.planner.PlanResult` of the plan reported;
    ``fitted`` the :class:`~autotm_core.ilp.fitting.FittedPlan` when addresses were fitted.
    """
    facts = _plan_and_baselines(result.simulation, all_fast, baselines, top)
    solve = result.solve
    attributes = result.plan.attributes
    gap = solve.gap if solve.gap is not None and math.isfinite(solve.gap) else None
    facts["solve"] = {
        "solver": solve.solver_name,
        "solver_version": solve.solver_version,
        "termination": solve.termination.value,
        "status": solve.status.value,
        "proven_optimal": solve.status.value == "optimal"
        and solve.termination.value not in _NOT_PROVEN,
        "interrupted": solve.termination.value == "interrupted",
        "objective_seconds": attributes.get("objective_seconds"),
        "bound_seconds": attributes.get("bound_seconds"),
        "gap": gap,
        "build_seconds": result.build_seconds,
        "handoff_seconds": solve.handoff_seconds,
        "solve_seconds": solve.solve_seconds,
        "warm_started": result.warm_started,
    }
    facts["model"] = {
        "formulation": attributes.get("options", {}).get("formulation"),
        "variables": result.n_variables,
        "binaries": result.n_binaries,
        "constraints": result.n_constraints,
        "nonzeros": result.n_nonzeros,
    }
    facts["addresses"] = None if fitted is None else {
        "fits": fitted.fits,
        "rounds": len(fitted.rounds),
        "fragmentation_nbytes": fitted.fragmentation_nbytes,
        "warm_started_rounds": fitted.warm_started_rounds,
        "pools": [{"name": p.pool, "capacity_nbytes": p.capacity_nbytes,
                   "height_nbytes": p.height_nbytes, "lower_bound_nbytes": p.lower_bound_nbytes,
                   "fragmentation_nbytes": p.fragmentation_nbytes}
                  for p in fitted.assignment.pools],
        "round_details": [{"round": r.round, "fits": r.fits, "step_seconds": r.step_seconds,
                           "overflow_nbytes": r.overflow_nbytes,
                           "overflow_kernels": r.overflow_kernels, "seconds": r.seconds}
                          for r in fitted.rounds],
    }
    return facts


def large_facts(result: Any, *, all_fast: float, baselines: list[dict[str, Any]],
                top: int = 10) -> dict[str, Any]:
    """As :func:`solve_facts`, for a :class:`~autotm_core.large.planner.LargePlanResult`."""
    facts = _plan_and_baselines(result.simulation, all_fast, baselines, top)
    facts["solve"] = {
        "solver": "highs (approximate)",
        "solver_version": f"plan from {result.source}",
        "termination": result.termination,
        "status": "feasible",
        "proven_optimal": False,
        "interrupted": False,
        "objective_seconds": result.step_seconds,
        "bound_seconds": result.bound_seconds,
        "gap": result.gap,
        "build_seconds": result.build_seconds + result.greedy_seconds,
        "handoff_seconds": 0.0,
        "solve_seconds": result.solve_seconds,
        "warm_started": True,
    }
    facts["model"] = {
        "formulation": result.plan.planner,
        "variables": result.n_variables,
        "binaries": result.n_binaries,
        "constraints": None,
        "nonzeros": result.n_nonzeros,
    }
    facts["plan_source"] = {"ilp": "ilp", "rolling": "ilp, by stretches"}.get(result.source,
                                                                            result.source)
    facts["reductions"] = result.reductions.summary()
    facts["addresses"] = None
    return facts


def render_solve(sim: Any, facts: dict[str, Any], *, width: int = 72) -> RenderableType:
    """The solve, the comparison with the baselines and the address fitting, then the plan."""
    s, m = facts["solve"], facts["model"]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    status = s["termination"].replace("_", " ")
    if not s["proven_optimal"]:
        status += " — [bold yellow]not proven optimal[/]: the best plan found"
        if s["interrupted"]:
            status += " before Ctrl-C"
    head.add_row("solver", f"{s['solver']} {s['solver_version']}".strip())
    head.add_row("termination", status)
    if s["objective_seconds"] is not None:
        head.add_row("objective", format_seconds(s["objective_seconds"]))
    if s["bound_seconds"] is not None:
        head.add_row("bound", format_seconds(s["bound_seconds"]))
    head.add_row("gap", "-" if s["gap"] is None else f"{s['gap']:.2%}")
    constraints = "" if m["constraints"] is None else f"{m['constraints']:,} constraints, "
    head.add_row("model", f"{m['formulation']}: {m['variables']:,} variables "
                 f"({m['binaries']:,} binary), {constraints}{m['nonzeros']:,} nonzeros")
    if "reductions" in facts:
        r = facts["reductions"]
        head.add_row("reductions", f"{r['fixed_binaries']:,} of {r['binaries']:,} binaries fixed "
                     f"({r['always_fast_tensors']:,} tensors always fast, "
                     f"{r['never_fast_slots']:,} slots never fast, "
                     f"{r['unprofitable_fetches']:,} unprofitable fetches)")
    total = s["build_seconds"] + s["handoff_seconds"] + s["solve_seconds"]
    head.add_row("time", f"build {format_seconds(s['build_seconds'])}, hand-off "
                 f"{format_seconds(s['handoff_seconds'])}, solve "
                 f"{format_seconds(s['solve_seconds'])} (total {format_seconds(total)})"
                 + ("" if s["warm_started"] else ", no warm start"))
    a = facts["addresses"]
    if a is None:
        head.add_row("addresses", "not assigned (--no-addresses, or --mode approximate)")
    else:
        rounds = f"{a['rounds']} round{'s' if a['rounds'] != 1 else ''}"
        verdict = "fit" if a["fits"] else "[bold red]do not fit[/] (plan kept without offsets)"
        head.add_row("addresses", f"{verdict} after {rounds}; fragmentation "
                     f"{format_bytes(a['fragmentation_nbytes'])} "
                     f"({a['fragmentation_nbytes']:,} bytes)")

    compared = Table(title="predicted step time", title_justify="left")
    for column in ("plan", "step", "slowdown vs all-fast", "ILP speedup over it"):
        compared.add_column(column, justify="left" if column == "plan" else "right")
    compared.add_row(f"{facts.get('plan_source', 'ilp')} (this plan)",
                     format_seconds(facts["step_seconds"]),
                     _ratio(facts["slowdown"]), "")
    compared.add_row("all-fast (no limit)", format_seconds(facts["all_fast_seconds"]), "1.000x", "")
    for b in facts["baselines"]:
        if b["step_seconds"] is None:
            compared.add_row(b["name"], "-", "cannot exist here", "")
            continue
        compared.add_row(b["name"], format_seconds(b["step_seconds"]), _ratio(b["slowdown"]),
                         _ratio(b["plan_speedup"]))

    parts: list[RenderableType] = [head, "", compared, ""]
    if a is not None and a["rounds"] > 1:
        rounds_table = Table(title="address-fitting rounds", title_justify="left")
        for column in ("round", "step", "overflow", "at kernels", "seconds"):
            rounds_table.add_column(column, justify="right")
        for r in a["round_details"]:
            rounds_table.add_row(str(r["round"]), format_seconds(r["step_seconds"]),
                                 format_bytes(r["overflow_nbytes"]) if not r["fits"] else "fits",
                                 f"{r['overflow_kernels']:,}", f"{r['seconds']:.2f}")
        parts += [rounds_table, ""]
    return Group(*parts, render_simulation(sim, facts, width=width))


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


__all__ = ["COMPARED_BASELINES", "all_fast_seconds", "baseline_facts", "large_facts",
           "render_solve", "solve_facts"]
