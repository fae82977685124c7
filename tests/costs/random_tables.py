"""Measured cost tables with arbitrary times, for tests that must hold under any costs.

A table may say anything a profiler could: the same time for every placement, slower
pools faster than the fastest, or no pattern at all. :func:`measured` builds a complete
table (every configuration of every kernel) whose times one of :data:`TABLES` draws.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autotm_core import Graph
from autotm_core.costs.model import CostTable, TableCosts

Table = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""Seconds of each configuration (rows of pool positions) of one kernel."""


def scale(rng: np.random.Generator) -> float:
    """A kernel's time, from far below to far above its tensors' copy times."""
    return float(10 ** rng.uniform(-8, -3))


def uniform(configs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Every placement of the kernel alike."""
    return np.full(len(configs), scale(rng))


def slower_pools_faster(configs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each tensor in a slower pool saves time: the opposite of a roofline."""
    return scale(rng) / (1.0 + configs.sum(axis=1))


def arbitrary(configs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Any time for any placement."""
    return scale(rng) * rng.uniform(0.01, 1.0, len(configs))


TABLES: dict[str, Table] = {"uniform": uniform, "slower-faster": slower_pools_faster,
                            "arbitrary": arbitrary}
"""The kinds of table, by name."""


def measured(graph: Graph, n_pools: int, seconds: Table, seed: int) -> TableCosts:
    """A complete cost table of ``graph`` whose times ``seconds`` draws."""
    rng = np.random.default_rng(seed)
    live = graph.liveness
    tables = []
    for k in range(live.n_kernels):
        width = int(live.kernel_ptr[k + 1] - live.kernel_ptr[k])
        configs = np.indices((n_pools,) * width).reshape(width, -1).T.astype(np.int8)
        tables.append(CostTable(configs=configs, seconds=seconds(configs, rng)))
    return TableCosts(n_pools=n_pools, kernel_ptr=live.kernel_ptr, tables=tuple(tables))
