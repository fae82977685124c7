"""Kernel cost models: explicit tables and the separable (roofline) form."""

from autotm_core.costs.costfile import costs_to_document, load_costs, save_costs
from autotm_core.costs.flops import FlopsEstimate, estimate_flops
from autotm_core.costs.model import CostTable, KernelCosts, SeparableCosts, TableCosts
from autotm_core.costs.resolve import resolve_costs
from autotm_core.costs.roofline import roofline_costs

__all__ = [
    "CostTable",
    "FlopsEstimate",
    "KernelCosts",
    "SeparableCosts",
    "TableCosts",
    "costs_to_document",
    "estimate_flops",
    "load_costs",
    "resolve_costs",
    "roofline_costs",
    "save_costs",
]
