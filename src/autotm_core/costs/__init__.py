"""Kernel cost models: explicit tables and the separable (roofline) form."""

from autotm_core.costs.model import CostTable, KernelCosts, SeparableCosts, TableCosts

__all__ = ["CostTable", "KernelCosts", "SeparableCosts", "TableCosts"]
