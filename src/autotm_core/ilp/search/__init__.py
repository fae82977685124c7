"""The anytime search: one budget, one pool of held plans, one strategy, one runner.

Every ILP step of a planning call runs through this package:

- :mod:`.budget`: :class:`Budget`, the only unit of time (deadline, solve limits, the
  reserve for checking, a model's build estimated before it is built, phase records);
- :mod:`.pool`: :class:`IncumbentPool`, the only place plans are held (verified,
  simulated and tested once, with a typed :class:`Source`), and the one gap formula;
- :mod:`.strategy`: :class:`Strategy`, every knob, documented in docs/tuning.md;
- :mod:`.runner`: steps and :func:`run_steps`, which records phases, tells the listener
  and turns Ctrl-C into :class:`SearchInterrupted`;
- :mod:`.events`: what the search tells its caller;
- :mod:`.model`: one model's exact search as steps (the approximate planner's steps are
  in :mod:`autotm_core.ilp.approximate.planner`, the formulation chain's in
  :mod:`autotm_core.planning.ilp`).
"""

from autotm_core.ilp.search.budget import Budget, Phase
from autotm_core.ilp.search.events import (
    IncumbentFound,
    Listener,
    ModelBuilt,
    PhaseStarted,
    SearchEvent,
)
from autotm_core.ilp.search.pool import (
    Held,
    IncumbentPool,
    Origin,
    Source,
    WarmStart,
    allowed,
    gap_of,
)
from autotm_core.ilp.search.runner import SearchInterrupted, Step, run_steps
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy

__all__ = [
    "DEFAULT_STRATEGY",
    "Budget",
    "Held",
    "IncumbentFound",
    "IncumbentPool",
    "Listener",
    "ModelBuilt",
    "Origin",
    "Phase",
    "PhaseStarted",
    "SearchEvent",
    "SearchInterrupted",
    "Source",
    "Step",
    "Strategy",
    "WarmStart",
    "allowed",
    "gap_of",
    "run_steps",
]
