"""Writing the evaluation's report: docs/results.md and its figures."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from benchmarks.paper.markdown import render
from benchmarks.paper.rows import Row
from benchmarks.paper.summary import of_experiment

from autotm_core.sweep.grid import Grid
from autotm_core.sweep.results import versions

logger = logging.getLogger(__name__)

DIFFERENCES = """\
- **Costs are modelled, not measured.** The paper profiled every nGraph kernel in every
  DRAM/PMM placement of its tensors on the real machine. Here each kernel costs
  max(FLOPs / compute rate, sum over its tensors of bytes / bandwidth of the pool they are
  in) plus latency (the roofline model, `costs.roofline_costs`), with the published
  bandwidths of the preset (`optane-2019`: DRAM 100 GB/s, PMM 39 GB/s read, 14 GB/s write)
  and an assumed 2 TFLOP/s. Real Optane loses more than its bandwidth says (write
  bandwidth collapses under many threads, reads and writes interfere, some kernels are
  latency-bound), so first-touch and 2LM, which leave hot tensors in PMM, look better here
  than measured; kernels that are compute-bound in the model lose nothing in PMM at all.
- **Graphs and sizes.** Zoo graphs (framework-like kernels, exact sizes) stand in for
  nGraph's; the `quick` grid runs smaller batches and ResNet-50 / DenseNet-121 for
  ResNet-200 / DenseNet-264 (same block types, fewer blocks; the ILP's size is the number
  of kernels, which the batch does not change). PMM:DRAM ratios are taken over each graph's
  own peak live bytes as in the paper, and the large networks keep the paper's
  live/DRAM ratio (about 650 GB over 185 GB) rather than its absolute size.
- **Parameters count.** AutoTM pinned parameters, inputs and outputs in DRAM and left them
  out of the capacity; here every tensor counts and may move, so a limit is slightly
  tighter for the same ratio (the planners may also put parameters in slow memory).
- **Solver.** The paper used Gurobi with a 1 hour limit and a 1% gap; here HiGHS runs
  with the per-solve limit above, started from the best verified plan already held
  (greedy's, first-touch's, a simpler formulation's) when that start fits. Where the
  limit stopped it, the gap column says how far from proven optimal the plan may be; a
  cell whose solve found no plan in time is listed under *Cells without a plan* and left
  out of the means (the count is shown next to a mean when cells are missing).
- **2LM** is a cache simulation (direct-mapped as the hardware, but 4 KiB lines instead of
  64 B for speed, warmed by one step) under the same roofline costs, not Intel's Memory
  Mode measured on the machine; what the real cache costs beyond its hits and misses
  (tag and metadata traffic, the memory controller's scheduling) is not modelled.
- **Large networks.** The paper's 2x over 2LM came from measured Memory Mode, whose
  64 B direct-mapped lines suffer conflict misses and write each dirty line back to PMM at
  its poor write bandwidth. Under the roofline model, a compute-bound network (VGG) loses little to
  any cache, so our ratio is smaller; the `quick` grid also runs only two stand-ins
  (ResNet-50 for ResNet-200, VGG-19 for VGG-416), not DenseNet, where the paper saw 3x.
- **AutoTM's headline** is compared with the better of our static and synchronous plans
  at each point (the paper's Optane results used those two formulations); the
  asynchronous formulation, which the paper used on the GPU, is shown separately."""


def write_report(results: list[Row], grid: Grid, *,
                 docs_dir: str | os.PathLike[str], command: str, plots: bool = True,
                 wall_seconds: float | None = None) -> Path:
    """Write ``docs_dir``/results.md (and the figures under ``docs_dir``/figures)."""
    docs = Path(docs_dir)
    figures: list[str] = []
    if plots:
        figures = write_figures(results, grid, docs / "figures")
    text = render(results, grid, command=command, versions=versions(),
                  wall_seconds=wall_seconds, figures=figures, differences=DIFFERENCES)
    path = docs / "results.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    logger.info("wrote %s", path)
    return path


def write_figures(results: list[Row], grid: Grid,
                  folder: Path) -> list[str]:
    """The PNG figures; returns their file names."""
    from benchmarks.paper.plots import slowdown_per_ratio, slowdown_vs_size

    names = []
    for experiment in grid.experiments:
        chosen = [r for r in of_experiment(results, experiment.name)
                  if r.result.slowdown is not None]
        if not chosen:
            continue
        name = f"slowdown-{experiment.name}.png"
        if experiment.name == "sweep":
            slowdown_vs_size(chosen, folder / name, title=experiment.title)
        elif len(experiment.limits) > 1 or experiment.name == "conventional":
            slowdown_per_ratio(chosen, folder / name,
                               title=f"{experiment.title}: geometric mean over networks")
        else:
            continue
        names.append(name)
    return names
