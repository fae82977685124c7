"""Keep, move or recompute (issue 27): each cell planned without and with recomputation.

Per cell: the synchronous plan by :func:`autotm_core.planning.plan` under the same
``--time-limit``, once with ``recompute=False`` (keep or move only) and once with
``recompute=True`` (keep, move or rerun producers), each with addresses fitted; the
all-fast step; the number of reruns; the planning seconds; and the physical lower bound
valid for recomputing plans (:func:`~autotm_core.planning.lower_bound.physical_lower_bound`
with ``recompute=True``). Prints the load average beside the table.

    python benchmarks/bench_recompute.py                          # every cell, 20 s a point
    python benchmarks/bench_recompute.py --cells gpt2-b256-1:1 --time-limit 60
    python benchmarks/bench_recompute.py --smoke                  # example:cnn, 5 s
"""

from __future__ import annotations

import argparse
import json
import os
import time

from rich.console import Console
from rich.table import Table

from autotm_core.planning import PlanSettings, load_problem, plan
from autotm_core.planning.lower_bound import physical_lower_bound

GPT2_B256 = "zoo:gpt2:batch=256,seq=1024,layers=4"
CELLS = {
    "gpt2-b256-141GB": (GPT2_B256, "gpu-h200", "hbm=141GB"),
    "gpt2-b256-1:1": (GPT2_B256, "gpu-h200", "1:1"),
    "gpt2-b256-4:1": (GPT2_B256, "gpu-h200", "4:1"),
    "gpt2-12-1:1": ("zoo:gpt2:batch=8,seq=1024,layers=12", "gpu-h200", "1:1"),
    "cnn-1:1": ("example:cnn", "gpu-h200", "1:1"),
    "cnn-4:1": ("example:cnn", "gpu-h200", "4:1"),
    "resnet50-4:1": ("zoo:resnet50:batch=64", "optane-2019", "4:1"),
}
SMOKE = ("cnn-1:1",)


def measure(cell: str, time_limit: float, addresses: bool) -> dict[str, object]:
    """One cell's row."""
    source, system, limit = CELLS[cell]
    problem = load_problem(source, system, limit=limit)
    row: dict[str, object] = {"cell": cell, "kernels": len(problem.graph.kernels),
                              "all_fast_ms": (problem.all_fast_seconds or 0.0) * 1e3}
    for recompute in (False, True):
        start = time.perf_counter()
        outcome = plan(problem, "synchronous", PlanSettings(
            time_limit_seconds=time_limit, recompute=recompute, addresses=addresses))
        key = "recompute" if recompute else "keep_move"
        row[f"{key}_ms"] = outcome.step_seconds * 1e3
        row[f"{key}_seconds"] = time.perf_counter() - start
        row[f"{key}_reruns"] = len(outcome.plan.reruns)
    row["bound_ms"] = physical_lower_bound(problem, recompute=True).seconds * 1e3
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", choices=sorted(CELLS), default=list(CELLS))
    parser.add_argument("--time-limit", type=float, default=20.0, metavar="SECONDS",
                        help="per plan() call (default 20: the quick grid's time per point)")
    parser.add_argument("--no-addresses", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="example:cnn at 5 s")
    parser.add_argument("--json", action="store_true", help="the rows as JSON")
    args = parser.parse_args()
    cells, limit = (SMOKE, 5.0) if args.smoke else (args.cells, args.time_limit)
    rows = [measure(cell, limit, not args.no_addresses) for cell in cells]
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rows": rows, "load": load}))
        return
    table = Table(title=f"keep/move against keep/move/recompute, synchronous, {limit:g} s "
                  f"a plan (load {load[0]:.2f})")
    for name in ("cell", "kernels", "all-fast", "keep/move", "s", "recompute", "reruns", "s",
                 "ratio", "bound"):
        table.add_column(name, justify="left" if name == "cell" else "right")
    for r in rows:
        fast = float(r["all_fast_ms"])  # type: ignore[arg-type]
        keep, rec = float(r["keep_move_ms"]), float(r["recompute_ms"])  # type: ignore[arg-type]
        table.add_row(str(r["cell"]), str(r["kernels"]), f"{fast:.3f} ms",
                      f"{keep:.3f} ms ({keep / fast:.2f}x)", f"{r['keep_move_seconds']:.0f}",
                      f"{rec:.3f} ms ({rec / fast:.2f}x)", str(r["recompute_reruns"]),
                      f"{r['recompute_seconds']:.0f}", f"{keep / rec:.2f}x",
                      f"{float(r['bound_ms']):.3f} ms")  # type: ignore[arg-type]
    Console().print(table)


if __name__ == "__main__":
    main()
