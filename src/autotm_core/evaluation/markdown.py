"""docs/results.md: the evaluation's tables, side by side with the paper's figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from autotm_core.evaluation import paper
from autotm_core.evaluation.cells import CellResult
from autotm_core.evaluation.experiments import ILP_POLICIES, Profile
from autotm_core.evaluation.summary import (
    best_ilp,
    geomean,
    lookup,
    mean_slowdown,
    of_experiment,
    ordered,
    percent,
    speedups_over,
)
from autotm_core.units import format_bytes


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def grid_section(results: Sequence[CellResult]) -> str:
    """Slowdown of each policy per workload, one table per limit, geometric means below."""
    if not results:
        return "_not run_"
    policies = ordered(r.cell.policy for r in results)
    labels = ordered(r.cell.label for r in results)
    limits = ordered(r.cell.limit for r in results)
    cells = lookup(results)
    if len(labels) == 1:
        rows = [[_limit_text(limit), format_bytes(_capacity(results, limit))]
                + [percent(cells[(labels[0], limit, p)].slowdown)
                   if (labels[0], limit, p) in cells else "-" for p in policies]
                for limit in limits]
        return f"{labels[0]}:\n\n" + table(["fast memory", "fast limit", *policies], rows)
    parts = []
    for limit in limits:
        rows = [[label] + [percent(cells[(label, limit, p)].slowdown)
                           if (label, limit, p) in cells else "-" for p in policies]
                for label in labels]
        at = [r for r in results if r.cell.limit == limit]
        rows.append(["**geometric mean**"] + [_mean(at, p) for p in policies])
        parts.append(f"Fast memory at {_limit_text(limit)}:\n\n"
                     + table(["network", *policies], rows))
    if len(limits) > 1:
        rows = [["all limits"] + [_mean(results, p) for p in policies]]
        parts.append("Geometric mean over every network and limit:\n\n"
                     + table(["", *policies], rows))
    return "\n\n".join(parts)


def _mean(results: Sequence[CellResult], policy: str) -> str:
    mean = mean_slowdown(results, policy=policy)
    text = percent(mean.value)
    return text if mean.n == mean.of else f"{text} ({mean.n} of {mean.of})"


def _limit_text(limit: str) -> str:
    if ":" in limit:
        return f"slow:fast {limit} (peak live / ({limit.split(':')[0]}/{limit.split(':')[1]} + 1))"
    return limit


def _capacity(results: Sequence[CellResult], limit: str) -> int:
    return next(r.fast_capacity_nbytes for r in results if r.cell.limit == limit)


def scale_section(results: Sequence[CellResult], profile: Profile) -> str:
    """Each workload: zoo spec, the paper's setting, kernels, peak live bytes."""
    rows, seen = [], set()
    paper_of = {w.spec: w.paper for e in profile.experiments for w in e.workloads}
    for r in results:
        if r.cell.spec in seen:
            continue
        seen.add(r.cell.spec)
        rows.append([r.cell.label, f"`{r.cell.spec}`", paper_of.get(r.cell.spec, ""),
                     str(r.n_kernels), format_bytes(r.peak_nbytes)])
    return table(["workload", "zoo spec", "stands for (paper)", "kernels", "peak live"], rows)


def ilp_section(results: Sequence[CellResult]) -> str:
    """Model size, solve time and gap of every ILP cell."""
    rows = [[r.cell.experiment, r.cell.label, r.cell.limit, r.cell.policy, str(r.n_kernels),
             _count(r.n_variables), _count(r.n_binaries), _count(r.n_constraints),
             _count(r.n_nonzeros), _seconds(r.build_seconds), _seconds(r.solve_seconds),
             _seconds(r.plan_seconds), "-" if r.gap is None else f"{r.gap * 100:.2f}%",
             r.termination or r.status]
            for r in results if r.cell.policy in ILP_POLICIES]
    return table(["experiment", "network", "limit", "formulation", "kernels", "variables",
                  "binaries", "rows", "nonzeros", "build s", "solve s", "total s", "gap",
                  "stopped"], rows)


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def large_section(results: Sequence[CellResult]) -> str:
    """The large networks: slowdowns and the ILP's speedup over 2LM."""
    if not results:
        return "_not run_"
    cells = lookup(results)
    speedups = speedups_over(results, baseline="2lm", policy="synchronous")
    rows = []
    for r in results:
        if r.cell.policy != "synchronous":
            continue
        row = [r.cell.label, format_bytes(r.peak_nbytes), format_bytes(r.fast_capacity_nbytes)]
        for p in ("synchronous", "first-touch", "2lm"):
            other = cells.get((r.cell.label, r.cell.limit, p))
            row.append(percent(other.slowdown) if other else "-")
        s = speedups.get(r.cell.label)
        row.append("-" if s is None else f"{s:.2f}x")
        rows.append(row)
    return table(["network", "peak live", "fast limit", "synchronous ILP", "first-touch",
                  "2LM", "2LM time / ILP time"], rows)


def paper_section(conventional: Sequence[CellResult], large: Sequence[CellResult]) -> str:
    """Our headline figures next to the paper's."""
    best = best_ilp(conventional, ("static", "synchronous"))
    ours_ilp = geomean(r.slowdown for r in best if r.slowdown is not None)
    ours_ft = mean_slowdown(conventional, policy="first-touch")
    speed = [s for s in speedups_over(large, baseline="2lm", policy="synchronous").values()
             if s is not None]
    g = geomean(speed)
    rows = [
        ["AutoTM (ILP, better of static and synchronous) geometric-mean slowdown, "
         "1:1 / 4:1 / 8:1", f"{paper.PAPER_AUTOTM_GEOMEAN_SLOWDOWN * 100:.1f}%",
         percent(ours_ilp)],
        ["First-touch NUMA geometric-mean slowdown",
         f"{paper.PAPER_FIRST_TOUCH_GEOMEAN_SLOWDOWN * 100:.1f}%", percent(ours_ft.value)],
        ["Synchronous ILP alone", "-", percent(mean_slowdown(conventional,
                                                             policy="synchronous").value)],
        ["Asynchronous ILP alone", "-", percent(mean_slowdown(conventional,
                                                              policy="asynchronous").value)],
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
probabilities (13 GB each per layer; the zoo's `attention=fused` variant removes them)."""


def solver_notes(results: Sequence[CellResult]) -> str:
    """How many ILP solves the time limit stopped, and how many did no better than greedy."""
    greedy = {(r.cell.experiment, r.cell.label, r.cell.limit): r.step_seconds
              for r in results if r.cell.policy == "greedy" and r.step_seconds}
    ilp = [r for r in results if r.cell.policy in ILP_POLICIES and r.status == "ok"]
    stopped = [r for r in ilp if r.termination not in ("", "optimal", "gap_reached")]
    no_better = [r for r in ilp if r.step_seconds is not None
                 and (r.cell.experiment, r.cell.label, r.cell.limit) in greedy
                 and r.step_seconds >= greedy[r.cell.experiment, r.cell.label, r.cell.limit]
                 * (1 - 1e-3)]
    return (f"Of {len(ilp)} ILP plans, {len(stopped)} were stopped by the time limit before "
            f"reaching the gap asked for, and {len(no_better)} are no better than the greedy "
            "plan (offered to the solver as its warm start) at the same point: there, at this "
            "scale and time limit, the figure is the greedy heuristic's, not the ILP optimum. A "
            "synchronous or asynchronous plan slower than the static one at the same point "
            "(the static plans are among theirs) is the same effect.")


def failures_section(results: Sequence[CellResult]) -> str:
    """Cells without a plan, and why."""
    rows = [[r.cell.experiment, r.cell.label, r.cell.limit, r.cell.policy, r.message]
            for r in results if r.status != "ok"]
    if not rows:
        return "Every cell has a plan."
    return table(["experiment", "network", "limit", "policy", "why no plan"], rows)


def render(results: Sequence[CellResult], profile: Profile, *, command: str,
           versions: Mapping[str, str], wall_seconds: float | None,
           figures: Sequence[str], differences: str) -> str:
    """The whole of docs/results.md."""
    by = {e.name: of_experiment(results, e.name) for e in profile.experiments}
    titles = {e.name: e.title for e in profile.experiments}
    version_text = ", ".join(f"{k} {v}" for k, v in versions.items())
    out = [
        "# Results: the paper's evaluation, reproduced and extended",
        "",
        "Generated by `benchmarks/paper_eval.py`; do not edit by hand. Every figure is a "
        "**prediction** of the simulator under the analytic roofline cost model of each "
        "memory-system preset, not a measurement (see *Differences from the paper*).",
        "",
        f"- Command: `{command}` (also `python -m autotm_core evaluate`, or `nox -s paper`); "
        "an interrupted run resumes from its results file `docs/results-PROFILE.json`. The "
        "paper's own networks: `--profile full-depth --time-limit 300`; its exact batch "
        "sizes: `--profile paper` (hours).",
        f"- Versions: {version_text}",
        f"- Profile `{profile.name}`: {profile.description}.",
        f"- ILP: HiGHS, {profile.relative_gap * 100:g}% relative gap, "
        f"{profile.time_limit_seconds:g} s limit per solve; the greedy plan is offered as a "
        "warm start. Slowdown = predicted step time / step time with everything in the "
        "fastest pool (no limit). The fast limit for PMM:DRAM ratio r is peak live / (r + 1).",
    ]
    planning = sum(r.plan_seconds for r in results)
    out.append(f"- Planning time summed over the {len(results)} cells: {planning / 60:.1f} min"
               " (graph building, cost tables and all-fast simulations not included)"
               + ("" if wall_seconds is None else
                  f"; wall time of the last invocation: {wall_seconds / 60:.1f} min") + ".")
    out += ["", "## Side by side with the paper", "",
            paper_section(by.get("conventional", []), by.get("large", [])), "",
            "## Differences from the paper", "", differences, "", solver_notes(results), "",
            "## Reading the systems beyond the paper", "", BEYOND, "",
            "## Workloads and their scale", "", scale_section(results, profile)]
    for name in by:
        body = large_section(by[name]) if name == "large" else grid_section(by[name])
        out += ["", f"## {titles[name]}", "", body]
    out += ["", "## ILP model sizes, solve times and gaps", "", ilp_section(results),
            "", "## Cells without a plan", "", failures_section(results)]
    if figures:
        out += ["", "## Figures", ""] + [f"![{f}](figures/{f})" for f in figures]
    return "\n".join(out) + "\n"
