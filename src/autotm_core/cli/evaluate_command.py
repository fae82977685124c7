"""``evaluate``: the paper's evaluation (and beyond), resumable, written to docs/results.md."""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from rich.console import Console

from autotm_core.evaluation.cells import Cell, CellResult
from autotm_core.evaluation.experiments import PROFILES
from autotm_core.evaluation.runner import Progress


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate", help="run the paper's evaluation and more; write docs/results.md",
        description=(
            "Plan the paper's networks at its PMM:DRAM ratios with every ILP formulation and "
            "baseline, then the large networks against 2LM, a fast-memory sweep, and the CXL, "
            "GPU and three-pool systems. Each finished cell is saved to the results file, so "
            "an interrupted run resumes where it stopped."
        ),
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the evaluation (shared with benchmarks/paper_eval.py)."""
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick",
                        help="scale: quick (about 20 min on two cores), full-depth (the "
                        "paper's networks, smaller batches), paper (its exact batches)")
    parser.add_argument("--only", action="append", metavar="EXPERIMENT",
                        help="run only this experiment (repeatable): conventional, large, "
                        "sweep, cxl, gpu, three-pool, transformer")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                        help="ILP time limit per solve (default: the profile's)")
    parser.add_argument("--results", metavar="FILE",
                        help="results file to resume from and write (default: "
                        "docs/results-PROFILE.json)")
    parser.add_argument("--docs", default="docs", metavar="DIR",
                        help="where results.md and figures/ are written (default: docs)")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG figures")
    parser.add_argument("--report-only", action="store_true",
                        help="plan nothing; write the report from the results file")


def run(args: argparse.Namespace, console: Console) -> int:
    from autotm_core.evaluation.experiments import get_profile
    from autotm_core.evaluation.report import write_report
    from autotm_core.evaluation.runner import profile_cells, run_evaluation, select
    from autotm_core.evaluation.store import load_results

    profile = select(get_profile(args.profile), experiments=args.only,
                     time_limit_seconds=args.time_limit)
    results_path = args.results or f"{args.docs}/results-{profile.name}.json"
    started = time.perf_counter()
    if args.report_only:
        done = load_results(results_path)
        results = [done[c.key] for c in profile_cells(profile) if c.key in done]
        wall = None
    else:
        planned: list[str] = []
        results = run_evaluation(profile, results_path=results_path,
                                 progress=_progress(console, started, planned))
        wall = time.perf_counter() - started if planned else None
    command = "python benchmarks/paper_eval.py " + shlex.join(
        a for a in sys.argv[1:] if a != "evaluate") if sys.argv else "evaluate"
    path = write_report(results, profile, docs_dir=args.docs, command=command.strip(),
                        plots=not args.no_plots, wall_seconds=wall)
    console.print(f"{len(results)} cells; results in {results_path}; report in {path}")
    return 0


def _progress(console: Console, started: float, planned: list[str]) -> Progress:
    def report(index: int, total: int, cell: Cell, result: CellResult | None) -> None:
        if result is None:
            planned.append(cell.key)
            return
        elapsed = time.perf_counter() - started
        slowdown = "-" if result.slowdown is None else f"{result.slowdown:.3f}x"
        gap = "" if result.gap is None else f" gap {result.gap * 100:.2f}%"
        console.print(f"[{index + 1}/{total}] {elapsed:7.0f} s  {cell.experiment:<12} "
                      f"{cell.spec:<28} {cell.system:<13} {cell.limit:<8} {cell.policy:<13} "
                      f"{result.status:<8} {slowdown}{gap}", highlight=False)
    return report
