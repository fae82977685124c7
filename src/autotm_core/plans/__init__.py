"""Plans: the records, their file format, their verifier."""

from autotm_core.plans.build import kernel_configs, make_plan
from autotm_core.plans.model import Move, MoveKind, Plan, Residency

__all__ = ["Move", "MoveKind", "Plan", "Residency", "kernel_configs", "make_plan"]
