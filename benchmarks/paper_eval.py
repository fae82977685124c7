"""The paper's evaluation, reproduced and extended: plan a grid, then write docs/results.md.

    python benchmarks/paper_eval.py                      # the quick grid, about 20 min
    python benchmarks/paper_eval.py --grid full-depth --time-limit 300
    python benchmarks/paper_eval.py --grid deep --docs docs/deep   # ResNet-200, DenseNet-264
    python benchmarks/paper_eval.py --report-only        # rewrite docs/results.md

``--grid`` names a grid of ``benchmarks/grids/`` (quick, full-depth, paper, deep) or any grid
file. Planning is ``python -m autotm_core sweep --grid FILE -o RESULTS``: every finished
point is written to the results file (default docs/results-GRID.json), so an interrupted
run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

GRIDS = Path(__file__).resolve().parent / "grids"


def grid_path(name: str) -> Path:
    """A grid of ``benchmarks/grids/`` by name, or a grid file's path."""
    named = GRIDS / f"{name}.json"
    return named if named.exists() else Path(name)


def main(argv: list[str] | None = None) -> int:
    from autotm_core.cli.main import main as cli

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", default="quick", help="quick (default), full-depth, paper, deep, "
                        "or a grid file")
    parser.add_argument("--only", action="append", metavar="EXPERIMENT",
                        help="run only this experiment (repeatable)")
    parser.add_argument("--time-limit", type=float, metavar="SECONDS",
                        help="ILP time limit per point (default: the grid's)")
    parser.add_argument("--results", metavar="FILE",
                        help="results file to resume from and write (default "
                        "docs/results-GRID.json)")
    parser.add_argument("--docs", default="docs", metavar="DIR",
                        help="where results.md and figures/ are written (default docs)")
    parser.add_argument("--no-plots", action="store_true", help="write no PNG figures")
    parser.add_argument("--report-only", action="store_true",
                        help="plan nothing; write the report from the results file")
    args = parser.parse_args(argv)
    path = grid_path(args.grid)
    results = args.results or f"{args.docs}/results-{path.stem}.json"
    started = time.perf_counter()
    if not args.report_only:
        sweep = ["sweep", "--grid", str(path), "-o", results]
        sweep += [f"--only={name}" for name in args.only or ()]
        if args.time_limit is not None:
            sweep += ["--time-limit", str(args.time_limit)]
        status = cli(sweep)
        if status != 0:
            return status
    wall = None if args.report_only else time.perf_counter() - started
    return _report(path, results, args, wall)


def _report(grid_file: Path, results_file: str, args: argparse.Namespace,
            wall: float | None) -> int:
    from benchmarks.paper.report import write_report
    from benchmarks.paper.rows import grid_rows

    from autotm_core.cli.main import run_reporting_errors
    from autotm_core.sweep import load_results
    from autotm_core.sweep.grid import load_grid

    def write() -> None:
        grid = load_grid(grid_file).select(experiments=args.only).with_settings(
            time_limit_seconds=args.time_limit)
        done = load_results(results_file) if Path(results_file).exists() else []
        rows = grid_rows(grid, done)
        command = "python benchmarks/paper_eval.py " + shlex.join(sys.argv[1:])
        page = write_report(rows, grid, docs_dir=args.docs, command=command.strip(),
                            plots=not args.no_plots, wall_seconds=wall)
        print(f"{len(rows)} cells; results in {results_file}; report in {page}")

    return run_reporting_errors(write)


if __name__ == "__main__":
    # run as a script, its own folder is on the path, not the repository's root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
