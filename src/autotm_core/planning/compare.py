"""A plan against the baselines: each baseline planned at the same point, or why it cannot be."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs

from autotm_core.errors import AutotmError
from autotm_core.planning.outcome import Outcome
from autotm_core.planning.planners import COMPARED_BASELINES
from autotm_core.planning.problem import Problem

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True, eq=False)
class Comparison:
    """One baseline at the point: its outcome, or why it has none."""

    planner: str
    """The baseline's name."""
    outcome: Outcome | None
    """Its verified, simulated plan (``None`` when it cannot exist at this limit)."""
    reason: str = ""
    """Why there is no plan, when there is none."""
    packs: bool | None = None
    """Whether its plan's tensors pack at addresses in the limited pools (``None``: not
    asked): a plan that does not pack is not comparable with one that carries addresses."""

    @property
    def step_seconds(self) -> float | None:
        """The baseline's predicted step time (``None`` without a plan)."""
        return None if self.outcome is None else self.outcome.step_seconds


def compare_baselines(problem: Problem, planners: Sequence[str] = COMPARED_BASELINES, *,
                      addresses: bool = False) -> tuple[Comparison, ...]:
    """Each of ``planners`` (baselines) planned at ``problem``, in order; with ``addresses``,
    whether each plan packs at addresses (compared with a plan that carries them).

    A baseline that cannot plan there (no plan fits, or its plan fails the verifier)
    is kept with its reason instead of an outcome.
    """
    from autotm_core.addresses import assign_offsets
    from autotm_core.planning.plan import plan

    out = []
    for name in planners:
        try:
            outcome = plan(problem, name)
            packs = None
            if addresses and name != "2lm":  # 2LM's slow pool is a cache's backing store
                packs = bool(assign_offsets(outcome.plan, problem.graph,
                                            problem.limited_system).fits)
            out.append(Comparison(planner=name, outcome=outcome, packs=packs))
        except AutotmError as exc:
            logger.info("baseline %s skipped: %s", name, exc.message)
            out.append(Comparison(planner=name, outcome=None, reason=exc.message))
    return tuple(out)
