"""Kernel cost models: explicit tables and the separable (roofline) form, and the op table.

Plugin API: frontends may import every name of ``__all__`` (docs/writing-a-frontend.md,
"What a plugin may import"); the op table (:data:`OPS`, :func:`op_info`,
:func:`op_flops`, :func:`normalise_op`, :func:`flops_per_element`) is how a frontend
names op kinds and counts their FLOPs.
"""

from autotm_core.costs.costfile import costs_to_document, load_costs, save_costs
from autotm_core.costs.estimators import Basis, Estimator, PerElement, numel
from autotm_core.costs.flops import FlopsEstimate, estimate_flops
from autotm_core.costs.model import CostTable, KernelCosts, SeparableCosts, TableCosts
from autotm_core.costs.ops import (
    OPS,
    Dialect,
    OpInfo,
    flops_per_element,
    normalise_op,
    op_flops,
    op_info,
)
from autotm_core.costs.resolve import resolve_costs
from autotm_core.costs.roofline import roofline_costs

__all__ = [
    "OPS",
    "Basis",
    "CostTable",
    "Dialect",
    "Estimator",
    "FlopsEstimate",
    "KernelCosts",
    "OpInfo",
    "PerElement",
    "SeparableCosts",
    "TableCosts",
    "costs_to_document",
    "estimate_flops",
    "flops_per_element",
    "load_costs",
    "normalise_op",
    "numel",
    "op_flops",
    "op_info",
    "resolve_costs",
    "roofline_costs",
    "save_costs",
]
