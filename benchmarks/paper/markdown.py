"""docs/results.md: the evaluation's tables, side by side with the paper's figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchmarks.paper import figures as paper
from benchmarks.paper.rows import Row
from benchmarks.paper.summary import (
    best_ilp,
    geomean,
    lookup,
    mean_slowdown,
    of_experiment,
    ordered,
    percent,
    speedups_over,
)

from autotm_core.planning import ILP_PLANNERS
from autotm_core.sweep.grid import Grid
from autotm_core.units import format_bytes


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def grid_section(results: Sequence[Row]) -> str:
    """Slowdown of each planner per workload, one table per limit, geometric means below."""
    if not results:
        return "_not run_"
    planners = ordered(r.cell.planner for r in results)
    labels = ordered(r.cell.label for r in results)
    limits = ordered(r.cell.limit for r in results)
    cells = lookup(results)
    if len(labels) == 1:
        rows = [[_limit_text(limit), format_bytes(_capacity(results, limit))]
                + [percent(cells[(labels[0], limit, p)].result.slowdown)
                   if (labels[0], limit, p) in cells else "-" for p in planners]
                for limit in limits]
        return f"{labels[0]}:\n\n" + table(["fast memory", "fast limit", *planners], rows)
    parts = []
    for limit in limits:
        rows = [[label] + [percent(cells[(label, limit, p)].result.slowdown)
                           if (label, limit, p) in cells else "-" for p in planners]
                for label in labels]
        at = [r for r in results if r.cell.limit == limit]
        rows.append(["**geometric mean**"] + [_mean(at, p) for p in planners])
        parts.append(f"Fast memory at {_limit_text(limit)}:\n\n"
                     + table(["network", *planners], rows))
    if len(limits) > 1:
        rows = [["all limits"] + [_mean(results, p) for p in planners]]
        parts.append("Geometric mean over every network and limit:\n\n"
                     + table(["", *planners], rows))
    return "\n\n".join(parts)


def _mean(results: Sequence[Row], planner: str) -> str:
    mean = mean_slowdown(results, planner=planner)
    text = percent(mean.value)
    return text if mean.n == mean.of else f"{text} ({mean.n} of {mean.of})"


def _limit_text(limit: str) -> str:
    if "=" in limit:
        return f"{limit} (each pool named: peak live / (r + 1))"
    if ":" in limit:
        return f"slow:fast {limit} (peak live / ({limit.split(':')[0]}/{limit.split(':')[1]} + 1))"
    return limit


def _capacity(results: Sequence[Row], limit: str) -> int:
    return next(r.result.fast_capacity_nbytes for r in results if r.cell.limit == limit)


def scale_section(results: Sequence[Row], grid: Grid) -> str:
    """Each workload: zoo spec, the paper's setting, kernels, peak live bytes."""
    rows, seen = [], set()
    for r in results:
        if r.cell.source in seen:
            continue
        seen.add(r.cell.source)
        rows.append([r.cell.label, f"`{r.cell.source}`", r.cell.note,
                     str(r.result.n_kernels), format_bytes(r.result.peak_nbytes)])
    return table(["workload", "zoo spec", "stands for (paper)", "kernels", "peak live"], rows)


def ilp_section(results: Sequence[Row]) -> str:
    """Model size, solve time and gap of every ILP cell."""
    rows = []
    for r in results:
        if r.cell.planner not in ILP_PLANNERS:
            continue
        x = r.result
        rows.append([r.cell.experiment, r.cell.label, r.cell.limit, r.cell.planner,
                     str(x.n_kernels), _count(x.n_variables), _count(x.n_binaries),
                     _count(x.n_constraints), _count(x.n_nonzeros), _seconds(x.build_seconds),
                     _seconds(x.solve_seconds), _seconds(x.plan_seconds),
                     "-" if x.gap is None else f"{x.gap * 100:.2f}%", x.termination or x.status])
    return table(["experiment", "network", "limit", "formulation", "kernels", "variables",
                  "binaries", "rows", "nonzeros", "build s", "solve s", "total s", "gap",
                  "stopped"], rows)


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def large_section(results: Sequence[Row]) -> str:
    """The large networks: slowdowns and the ILP's speedup over 2LM."""
    if not results:
        return "_not run_"
    cells = lookup(results)
    speedups = speedups_over(results, baseline="2lm", planner="synchronous")
    rows = []
    for r in results:
        if r.cell.planner != "synchronous":
            continue
        row = [r.cell.label, format_bytes(r.result.peak_nbytes),
               format_bytes(r.result.fast_capacity_nbytes)]
        for p in ("synchronous", "first-touch", "2lm"):
            other = cells.get((r.cell.label, r.cell.limit, p))
            row.append(percent(other.result.slowdown) if other else "-")
        s = speedups.get(r.cell.label)
        row.append("-" if s is None else f"{s:.2f}x")
        rows.append(row)
    return table(["network", "peak live", "fast limit", "synchronous ILP", "first-touch",
                  "2LM", "2LM time / ILP time"], rows)


def paper_section(conventional: Sequence[Row], large: Sequence[Row]) -> str:
    """Our headline figures next to the paper's."""
    best = best_ilp(conventional, ("static", "synchronous"))
    ours_ilp = geomean(r.result.slowdown for r in best if r.result.slowdown is not None)
    ours_ft = mean_slowdown(conventional, planner="first-touch")
    speed = [s for s in speedups_over(large, baseline="2lm", planner="synchronous").values()
             if s is not None]
    g = geomean(speed)
    rows = [
        ["AutoTM (ILP, better of static and synchronous) geometric-mean slowdown, "
         "1:1 / 4:1 / 8:1", f"{paper.PAPER_AUTOTM_GEOMEAN_SLOWDOWN * 100:.1f}%",
         percent(ours_ilp)],
        ["First-touch NUMA geometric-mean slowdown",
         f"{paper.PAPER_FIRST_TOUCH_GEOMEAN_SLOWDOWN * 100:.1f}%", percent(ours_ft.value)],
        ["Synchronous ILP alone", "-", percent(mean_slowdown(conventional,
                                                             planner="synchronous").value)],
        ["Asynchronous ILP alone", "-", percent(mean_slowdown(conventional,
                                                              planner="asynchronous").value)],
        ["Speedup over 2LM, large networks (geometric mean)",
         f"{paper.PAPER_SPEEDUP_OVER_2LM:.0f}x (up to 3x, DenseNet)",
         "-" if g is None else f"{g:.2f}x"],
    ]
    return table(["figure", "paper (measured)", "here (modelled)"], rows)


BEYOND = """\
The fast pool's advantage sets the stakes. On `cxl-expander` DRAM is 5x faster than the
expander and on `hbm-dram-cxl` HBM is 3x faster than DRAM and 16x faster than CXL, so the
losses stay within tens of percent, as on Optane. On `gpu-h200` HBM (4.8 TB/s) is about 96x
faster than host memory across PCIe (50 GB/s) and the model's compute is 200 TFLOP/s, so
every byte a plan leaves in, or moves to and from, host memory costs a great deal: the
slowdowns are several-fold at 4:1, and what the ILP buys is measured against first-touch
and greedy, not against all-HBM. The GPT-2 runs put the limit at the H200's real 141 GB,
then at the ratios; its largest tensors are the logits and their gradient (batch x
sequence x 50,257 vocabulary, 53 GB each at batch 256) and the S x S attention scores and
probabilities (13 GB each per layer; the zoo's `attention=fused` variant removes them).

Three columns are what an ML engineer does by hand when a model does not fit
(docs/baselines.md): `checkpoint-layers` (gradient checkpointing of every block, the rest
spilled first-touch when that does not fit), `offload-activations` (torchtune's copy of
every saved activation to the slow pool and back) and `recompute-only` (the cheapest
recomputation that fits, with no moves). They recompute or copy activations; so do the
ILP columns (recomputation is on by default: each formulation's keeping-and-moving model,
then its recomputing one, both started from the plans held, these three among them). A
practitioner's baseline can still show a faster step than the ILP where its plan does not
pack into the addresses the ILP's plans must fit (the baselines' are not fitted) or where
the ILP ran out of time. A baseline that cannot exist at a limit (it does not fit) is
listed under *Cells without a plan*."""


def solver_notes(results: Sequence[Row]) -> str:
    """How many ILP solves the time limit stopped, how many did no better than greedy, and
    whether any richer formulation came out slower than a simpler one at the same point."""
    greedy = {(r.cell.experiment, r.cell.label, r.cell.limit): r.result.step_seconds
              for r in results if r.cell.planner == "greedy" and r.result.step_seconds}
    ilp = [r for r in results if r.cell.planner in ILP_PLANNERS and r.result.status == "ok"]
    stopped = [r for r in ilp if r.result.termination not in ("", "optimal", "gap_reached")]
    point = {(r.cell.experiment, r.cell.label, r.cell.limit, r.cell.planner): r.result.step_seconds
             for r in ilp if r.result.step_seconds is not None}
    no_better = slower = inverted = 0
    for (experiment, label, limit, planner), step in point.items():
        baseline = greedy.get((experiment, label, limit))
        if baseline is not None and step >= baseline * (1 - 1e-3):
            no_better += 1
            slower += step > baseline * (1 + 1e-9)
        for simpler in ILP_PLANNERS[:ILP_PLANNERS.index(planner)]:
            other = point.get((experiment, label, limit, simpler))
            inverted += other is not None and step > other * (1 + 1e-9)
    return (f"Of {len(ilp)} ILP plans, {len(stopped)} were stopped by the time limit before "
            f"reaching the gap asked for, and {no_better} are no better than the greedy plan "
            f"at the same point ({slower} of them slower): there, at this scale and time "
            "limit, the figure is at best the greedy heuristic's, not the ILP optimum. A "
            "slower one is not a plan the ILP could have returned: greedy's plan is offered to "
            "every moving formulation as a start and returned when the solve does not beat "
            "it, but only if its tensors can be given addresses that fit (the ILP's plans "
            "have them; the baselines' are not fitted), and a fragmented greedy plan cannot. "
            f"Richer formulations slower than a simpler one at the same point: {inverted} "
            "(each formulation is offered the simpler ones' plans, so there should be none).")


def failures_section(results: Sequence[Row]) -> str:
    """Cells without a plan, and why."""
    rows = [[r.cell.experiment, r.cell.label, r.cell.limit, r.cell.planner, r.result.message]
            for r in results if r.result.status != "ok"]
    if not rows:
        return "Every cell has a plan."
    return table(["experiment", "network", "limit", "planner", "why no plan"], rows)


def render(results: Sequence[Row], grid: Grid, *, command: str,
           versions: Mapping[str, str], wall_seconds: float | None,
           figures: Sequence[str], differences: str) -> str:
    """The whole of docs/results.md."""
    by = {e.name: of_experiment(results, e.name) for e in grid.experiments}
    titles = {e.name: e.title for e in grid.experiments}
    version_text = ", ".join(f"{k} {v}" for k, v in versions.items())
    out = [
        "# Results: the paper's evaluation, reproduced and extended",
        "",
        "Generated by `benchmarks/paper_eval.py`; do not edit by hand. Every figure is a "
        "**prediction** of the simulator under the analytic roofline cost model of each "
        "memory-system preset, not a measurement (see *Differences from the paper*).",
        "",
        f"- Command: `{command}` (or `nox -s paper`); "
        "an interrupted run resumes from its results file `docs/results-GRID.json`. The "
        "paper's own networks: `--grid full-depth --time-limit 300`; its exact batch "
        "sizes: `--grid paper` (hours). The grids are `benchmarks/grids/*.json`, planned by "
        "`python -m autotm_core sweep --grid FILE` like any other sweep.",
        f"- Versions: {version_text}",
        f"- Grid `{grid.name}`: {grid.description}.",
        f"- ILP: HiGHS, {grid.relative_gap * 100:g}% relative gap, "
        f"{grid.time_limit_seconds:g} s limit per point (the whole call: every formulation on "
        f"the way to the one asked for, every address-fitting round and solve), {grid.mode} "
        f"mode, addresses "
        f"{'fitted' if grid.addresses else 'not fitted'}; each solve is offered the "
        "first-touch and greedy plans, the simpler formulations' plans and the plans "
        "already made at the same point as starts, and returns the best of them when it "
        "does not beat it. Slowdown = predicted step time / step time with everything in the "
        "fastest pool (no limit). The fast limit for PMM:DRAM ratio r is peak live / (r + 1).",
    ]
    planning = sum(r.result.plan_seconds for r in results)
    out.append(f"- Planning time summed over the {len(results)} cells: {planning / 60:.1f} min"
               " (graph building, cost tables and all-fast simulations not included)"
               + ("" if wall_seconds is None else
                  f"; wall time of the last invocation: {wall_seconds / 60:.1f} min") + ".")
    out += ["", "## Side by side with the paper", "",
            paper_section(by.get("conventional", []), by.get("large", [])), "",
            "## Differences from the paper", "", differences, "", solver_notes(results), "",
            "## Reading the systems beyond the paper", "", BEYOND, "",
            "## Workloads and their scale", "", scale_section(results, grid)]
    for name in by:
        body = large_section(by[name]) if name == "large" else grid_section(by[name])
        out += ["", f"## {titles[name]}", "", body]
    out += ["", "## ILP model sizes, solve times and gaps", "", ilp_section(results),
            "", "## Cells without a plan", "", failures_section(results)]
    if figures:
        out += ["", "## Figures", ""] + [f"![{f}](figures/{f})" for f in figures]
    return "\n".join(out) + "\n"
