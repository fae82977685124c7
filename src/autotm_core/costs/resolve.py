"""Where the kernel costs of a run come from: a cost file when one is given, else the roofline."""

from __future__ import annotations

import logging
import os

from autotm_core.costs.costfile import load_costs
from autotm_core.costs.model import KernelCosts
from autotm_core.costs.roofline import roofline_costs
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

logger = logging.getLogger(__name__)


def resolve_costs(
    graph: Graph, system: MemorySystem, *, costs_path: str | os.PathLike[str] | None = None
) -> KernelCosts:
    """The cost table in ``costs_path`` when given, else the analytic roofline (separable)."""
    if costs_path is not None:
        logger.info("kernel costs from %s", costs_path)
        return load_costs(costs_path, graph=graph, system=system)
    logger.info("kernel costs from the roofline model of %r", system.name)
    return roofline_costs(graph, system)
