"""Sweeps: plan graphs over limits and planners, or a grid file's experiments; trade-off curves.

Nothing here imports a solver or Dask until a point is planned or a cluster is used.
"""

from autotm_core.sweep.grid import Experiment, Grid, GridGraph, load_grid, save_grid
from autotm_core.sweep.knee import find_knee
from autotm_core.sweep.point import PointResult, SweepPoint, run_point
from autotm_core.sweep.price import PAPER_PRICE_RATIO, PriceModel
from autotm_core.sweep.results import Curve, SweepResults, load_results, save_results, write_csv
from autotm_core.sweep.run import run_sweep, sweep_points

__all__ = [
    "PAPER_PRICE_RATIO",
    "Curve",
    "Experiment",
    "Grid",
    "GridGraph",
    "PointResult",
    "PriceModel",
    "SweepPoint",
    "SweepResults",
    "find_knee",
    "load_grid",
    "load_results",
    "run_point",
    "run_sweep",
    "save_grid",
    "save_results",
    "sweep_points",
    "write_csv",
]
