"""The report of ``solve``: the ILP's plan against all-fast and the baselines, the model and the
solve, the address fitting, then the simulated plan (moves, memory over time per pool).

It renders an :class:`~autotm_core.planning.Outcome` and the
:class:`~autotm_core.planning.Comparison` of each baseline; it plans and
simulates nothing itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table

from autotm_core.planning import Comparison, Outcome, PlanMode
from autotm_core.planning.breakdown import outcome_breakdown
from autotm_core.planning.lower_bound import LowerBound
from autotm_core.report.charts import CHART_MARGIN
from autotm_core.report.kinds_report import render_kinds
from autotm_core.report.plan_report import render_simulation, simulation_facts
from autotm_core.units import format_bytes, format_seconds


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _over(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def solve_facts(outcome: Outcome, comparisons: Sequence[Comparison], *,
                top: int = 10, physical: LowerBound | None = None) -> dict[str, Any]:
    """Everything ``solve`` reports, as plain data (the ``--json`` output); the physical
    lower bound when it is given (``physical_bound``, else ``None``)."""
    if outcome.solve is None:
        raise ValueError(f"the {outcome.planner.name} plan was not made by the ILP planner")
    facts = simulation_facts(outcome.simulation, all_fast_seconds=outcome.all_fast_seconds,
                             top=top, reruns=len(outcome.plan.reruns))
    facts["step_seconds"] = outcome.step_seconds
    facts["fast_capacity_nbytes"] = outcome.problem.fast_capacity_nbytes
    facts["limit"] = str(outcome.problem.limit)
    facts["baselines"] = [
        {"name": c.planner, "step_seconds": c.step_seconds, "skipped": c.reason or None,
         "slowdown": _over(c.step_seconds, outcome.all_fast_seconds),
         "plan_speedup": _over(c.step_seconds, outcome.step_seconds), "packs": c.packs,
         "reruns": None if c.outcome is None else len(c.outcome.plan.reruns),
         "rerun_seconds": None if c.outcome is None
         else float(c.outcome.simulation.rerun_seconds.sum())}
        for c in comparisons]
    s, m = outcome.solve, outcome.model
    facts["solve"] = {
        "solver": s.solver, "solver_version": s.solver_version, "mode": s.mode.value,
        "termination": s.termination, "status": s.status,
        "proven_optimal": s.proven_optimal, "optimal_in_model": s.optimal_in_model,
        "restrictions": list(s.restrictions), "interrupted": s.interrupted,
        "objective_seconds": s.objective_seconds, "bound_seconds": s.bound_seconds,
        "bound_source": s.bound_source or None, "gap": s.gap,
        "build_seconds": s.build_seconds, "handoff_seconds": s.handoff_seconds,
        "solve_seconds": s.solve_seconds, "warm_started": s.warm_started,
    }
    facts["model"] = None if m is None else {
        "formulation": m.formulation, "recomputes": m.recomputes,
        "held_reruns": m.held_reruns, "variables": m.variables,
        "binaries": m.binaries, "constraints": m.constraints, "nonzeros": m.nonzeros}
    facts["by_kind"] = outcome_breakdown(outcome).to_json()
    facts["plan_source"] = outcome.source
    facts["note"] = outcome.note or None
    facts["plan_seconds"] = outcome.plan_seconds
    facts["phases"] = {phase.name: phase.seconds for phase in outcome.phases}
    facts["phases_seconds"] = sum(phase.seconds for phase in outcome.phases)
    facts["solve"]["covers"] = _solved(outcome)[1]
    facts["reductions"] = None if outcome.reductions is None else outcome.reductions.summary()
    facts["physical_bound"] = None if physical is None else {
        "seconds": physical.seconds, "compute_seconds": physical.compute_seconds,
        "traffic_seconds": physical.traffic_seconds, "split_after": physical.split_after,
        "plan_ratio": _over(outcome.step_seconds, physical.seconds)}
    a = outcome.addresses
    facts["addresses"] = None if a is None else {
        "fits": a.fits,
        "rounds": len(a.rounds),
        "fragmentation_nbytes": a.fragmentation_nbytes,
        "pools": [{"name": p.pool, "capacity_nbytes": p.capacity_nbytes,
                   "height_nbytes": p.height_nbytes, "lower_bound_nbytes": p.lower_bound_nbytes,
                   "fragmentation_nbytes": p.fragmentation_nbytes}
                  for p in a.assignment.pools],
        "round_details": [{"round": r.round, "fits": r.fits, "step_seconds": r.step_seconds,
                           "overflow_nbytes": r.overflow_nbytes,
                           "overflow_kernels": r.overflow_kernels,
                           "split_tensors": list(r.split_tensors), "seconds": r.seconds,
                           "room_copies": r.room_copies,
                           "room_step_seconds": r.room_step_seconds}
                          for r in a.rounds],
    }
    return facts


def _title(outcome: Outcome) -> str:
    """First line: graph, system, planner and the fast memory it had."""
    problem = outcome.problem
    fast = problem.fast_capacity_nbytes
    memory = problem.limited_system.pools[0].name
    size = "unbounded" if fast is None else format_bytes(fast)
    limit = f" ({escape(str(problem.limit))})" if str(problem.limit) else ""
    return (f"[bold]{escape(problem.graph.name)}[/] on {escape(problem.system.name)}: "
            f"{escape(outcome.planner.name)} plan, {escape(memory)} {size}{limit} of peak "
            f"{format_bytes(problem.peak_nbytes)}")


def _phase_lines(outcome: Outcome) -> list[tuple[str, str]]:
    """Per stage of planning (held plans, each formulation): its seconds and its steps'."""
    stages: dict[str, list[tuple[str, float]]] = {}
    for phase in outcome.phases:
        stage, _, step = phase.name.rpartition(": ")
        stages.setdefault(stage or step, []).append((step, phase.seconds))
    lines = []
    for stage, steps in stages.items():
        total = format_seconds(sum(seconds for _, seconds in steps))
        detail = ", ".join(f"{step} {format_seconds(seconds)}" for step, seconds in steps
                           if step != stage)
        lines.append((stage, f"{total} ({detail})" if detail else total))
    return lines


def _solved(outcome: Outcome) -> tuple[str, str]:
    """The row name and the words for the solve whose model and termination the report
    shows: the last model solved (exact; the last address-fitting round's), or the
    approximate planner's solves together. Its time is a part of the phases', not all."""
    assert outcome.solve is not None
    if outcome.model is None:
        return "last solve", "no model gave a plan (the plan is one the search held)"
    if outcome.solve.mode is PlanMode.APPROXIMATE:
        return "solves", "every stretch and model of the approximate planner"
    rounds = len(outcome.addresses.rounds) if outcome.addresses is not None else 0
    which = f", address-fitting round {rounds}" if rounds > 1 else ""
    return "last solve", f"the {outcome.model.name} model{which}"


def _physical(outcome: Outcome, bound: LowerBound) -> str:
    """The physical bound's row: its value, which term binds, the plan's distance to it."""
    why = "every kernel at its least time"
    if bound.traffic_seconds > bound.compute_seconds:
        split = bound.split_after
        why = "crossings of the fastest pool with the compute they cannot hide behind"
        if 0 <= split < len(outcome.problem.graph.kernels) - 1:
            why += f": out up to kernel {split}, in after it"
    ratio = _over(outcome.step_seconds, bound.seconds)
    return (f"{format_seconds(bound.seconds)} ({why}); this plan "
            + ("-" if ratio is None else f"{ratio:.3f}x") + " of it")


def _head(outcome: Outcome, physical: LowerBound | None = None) -> Table:
    assert outcome.solve is not None
    s, m = outcome.solve, outcome.model
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    status = s.termination.replace("_", " ")
    if s.optimal_in_model and s.restrictions:
        status += (" — optimal within the model's restrictions (below), not among every plan "
                   "the rules allow")
    elif not s.proven_optimal:
        status += " — [bold yellow]not proven optimal[/]: the best plan found"
        if s.interrupted:
            status += " before Ctrl-C"
    solver = f"{s.solver} {s.solver_version}".strip()
    if s.mode is PlanMode.APPROXIMATE:
        solver += f", approximate planning: the plan is from {outcome.source}"
    head.add_row("solver", solver)
    head.add_row("termination", status)
    if outcome.note:
        head.add_row("plan", f"from {outcome.source}: {escape(outcome.note)}")
    for i, restriction in enumerate(s.restrictions):
        head.add_row("restrictions" if i == 0 else "", f"- {escape(restriction)}")
    if s.objective_seconds is not None:
        head.add_row("objective", format_seconds(s.objective_seconds))
    if s.bound_seconds is not None:
        head.add_row("bound", format_seconds(s.bound_seconds)
                     + (f" ({s.bound_source})" if s.bound_source else ""))
    head.add_row("gap", "-" if s.gap is None else f"{s.gap:.2%}")
    if physical is not None:
        head.add_row("physical bound", _physical(outcome, physical))
    if m is not None:
        constraints = "" if m.constraints is None else f"{m.constraints:,} constraints, "
        head.add_row("model", f"{m.name}: {m.variables:,} variables "
                     f"({m.binaries:,} binary), {constraints}{m.nonzeros:,} nonzeros")
    if outcome.reductions is not None:
        r = outcome.reductions.summary()
        head.add_row("reductions", f"{r['fixed_binaries']:,} of {r['binaries']:,} binaries fixed "
                     f"({r['always_fast_tensors']:,} tensors always fast, "
                     f"{r['never_fast_slots']:,} slots never fast, "
                     f"{r['unprofitable_fetches']:,} unprofitable fetches)")
    # the whole planning time first, then where it went, then the one solve the model and
    # termination rows describe (part of one of those phases)
    phases = _phase_lines(outcome)
    head.add_row("time", f"{format_seconds(outcome.plan_seconds)} to plan, verify and simulate"
                 + (f"; the phases below {format_seconds(sum(p.seconds for p in outcome.phases))}"
                    if phases else ""))
    for i, (stage, line) in enumerate(phases):
        head.add_row("phases" if i == 0 else "", f"{stage}: {line}")
    name, what = _solved(outcome)
    head.add_row(name, f"{what}: build {format_seconds(s.build_seconds)}, hand-off "
                 f"{format_seconds(s.handoff_seconds)}, solve "
                 f"{format_seconds(s.solve_seconds)} ({format_seconds(s.total_seconds)} "
                 "together)" + ("" if s.warm_started else ", no warm start"))
    a = outcome.addresses
    if a is None:
        head.add_row("addresses", "not assigned (--no-addresses, or approximate planning)")
    else:
        rounds = f"{len(a.rounds)} round{'s' if len(a.rounds) != 1 else ''}"
        verdict = "fit" if a.fits else "[bold red]do not fit[/] (plan kept without offsets)"
        room = outcome.plan.attributes.get("room_copies")
        made = f", with {room} copies of idle tensors out of the full pool and back" if room else ""
        head.add_row("addresses", f"{verdict} after {rounds}{made}; fragmentation "
                     f"{format_bytes(a.fragmentation_nbytes)} ({a.fragmentation_nbytes:,} bytes)")
    return head


def _compared(outcome: Outcome, comparisons: Sequence[Comparison]) -> Table:
    ideal = outcome.all_fast_seconds
    table = Table(title="predicted step time", title_justify="left")
    for column in ("plan", "step", "slowdown vs all-fast", "ILP speedup over it"):
        table.add_column(column, justify="left" if column == "plan" else "right")
    table.add_row(f"{outcome.source} (this plan)", format_seconds(outcome.step_seconds),
                  _ratio(outcome.slowdown), "")
    table.add_row("all-fast (no limit)", "-" if ideal is None else format_seconds(ideal),
                  "1.000x", "")
    for c in comparisons:
        if c.step_seconds is None:
            table.add_row(c.planner, "-", "cannot exist here", "")
            continue
        # a plan that does not pack is not one a run could carry out as it is
        name = c.planner if c.packs is not False else f"{c.planner} (does not pack)"
        table.add_row(name, format_seconds(c.step_seconds),
                      _ratio(_over(c.step_seconds, ideal)),
                      _ratio(_over(c.step_seconds, outcome.step_seconds)))
    return table


def _rounds(outcome: Outcome) -> Table | None:
    a = outcome.addresses
    room = any(r.room_copies for r in a.rounds) if a is not None else False
    if a is None or (len(a.rounds) <= 1 and not room):
        return None
    table = Table(title="address-fitting rounds", title_justify="left")
    for column in ("round", "step", "overflow", "at kernels", "seconds"):
        table.add_column(column, justify="right")
    if room:
        table.add_column("packs with copies out and back", justify="right")
    split = any(r.split_tensors for r in a.rounds)
    if split:
        table.add_column("begin outside next round", justify="left")
    for r in a.rounds:
        row = [str(r.round), format_seconds(r.step_seconds),
               format_bytes(r.overflow_nbytes) if not r.fits else "fits",
               f"{r.overflow_kernels:,}", f"{r.seconds:.2f}"]
        if room:
            row.append("" if r.room_step_seconds is None else
                       f"{r.room_copies}: {format_seconds(r.room_step_seconds)}")
        if split:
            row.append(", ".join(r.split_tensors[:3])
                       + (f" and {len(r.split_tensors) - 3} more" if len(r.split_tensors) > 3
                          else ""))
        table.add_row(*row)
    return table


def render_solve(outcome: Outcome, comparisons: Sequence[Comparison], *, top: int = 10,
                 width: int = 72, physical: LowerBound | None = None) -> RenderableType:
    """The solve, the comparison with the baselines and the address fitting, then the plan;
    with ``physical``, the physical lower bound and the plan's distance to it."""
    parts: list[RenderableType] = [_title(outcome), "", _head(outcome, physical), "",
                                   _compared(outcome, comparisons), ""]
    rounds = _rounds(outcome)
    if rounds is not None:
        parts += [rounds, ""]
    facts = simulation_facts(outcome.simulation, all_fast_seconds=outcome.all_fast_seconds,
                             top=top, reruns=len(outcome.plan.reruns))
    kinds = render_kinds(outcome_breakdown(outcome), width=width + CHART_MARGIN)
    return Group(*parts, kinds, "", render_simulation(outcome.simulation, facts, width=width))


__all__ = ["render_solve", "solve_facts"]
