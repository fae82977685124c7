"""Plans: the records, their file format, their verifier.

Plugin API: plugins may import the names of ``__all__`` (see docs/writing-a-frontend.md)."""

from autotm_core.plans.build import kernel_configs, make_plan
from autotm_core.plans.model import Move, MoveKind, Plan, Rerun, Residency
from autotm_core.plans.plan_json import load_plan, save_plan
from autotm_core.plans.verify import check_plan, verify_plan

__all__ = ["Move", "MoveKind", "Plan", "Rerun", "Residency", "check_plan", "kernel_configs",
           "load_plan", "make_plan", "save_plan", "verify_plan"]
