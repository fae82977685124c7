"""How a point is planned: one typed record from the command line to the search.

:class:`PlanSettings` is what :func:`autotm_core.planning.plan` takes (the
command line builds it from its options, a grid from its file, a library user
directly). Every field is checked when the record is made: one
:class:`~autotm_core.errors.SettingError` names the first setting out of range.
The solver is named here and resolved once, by ``plan``, before any work.
"""

from __future__ import annotations

import math

import attrs

from autotm_core.errors import SettingError
from autotm_core.ilp.fitting import DEFAULT_MAX_ROUNDS
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy
from autotm_core.planning.mode import PlanMode
from autotm_core.solvers.base import DEFAULT_SOLVER
from autotm_core.units import PAGE_NBYTES

DEFAULT_RELATIVE_GAP = 0.01
"""Relative gap at which an ILP solve stops (the paper's 1%)."""


def _relative_gap(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or not 0 <= value < 1:
        percent = (f" ({value:g} is {value * 100:g}%)" if isinstance(value, int | float)
                   and math.isfinite(value) and value >= 1 else "")
        raise SettingError("relative_gap", f"{value} is out of range{percent}",
                           hint="give a relative gap from 0 up to (not including) 1: 0.01 is 1%")


def _time_limit(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not (math.isfinite(value) and value > 0):
        raise SettingError("time_limit_seconds", f"{value} is out of range",
                           hint="give a time limit in seconds, more than 0")


def _max_rounds(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingError("max_rounds", f"{value} is out of range", hint="give at least 1")


def _async_window(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingError("async_window", f"{value} is out of range", hint="give at least 1")


def _mode(value: PlanMode | str) -> PlanMode:
    return PlanMode.parse(value)


@attrs.frozen(kw_only=True)
class CacheOptions:
    """How the 2LM baseline models the hardware cache."""

    line_nbytes: int = attrs.field(default=PAGE_NBYTES, validator=attrs.validators.ge(1))
    """Cache line size (4 KiB pages by default, for speed; 64 for hardware lines)."""
    ways: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    """Lines per set, LRU (1: direct-mapped, as the hardware)."""
    warm: bool = True
    """Start from a cache warmed by one step (a training loop's steady state)."""


@attrs.frozen(kw_only=True)
class PlanSettings:
    """How a point is planned (baselines read only :attr:`cache`)."""

    mode: PlanMode = attrs.field(default=PlanMode.AUTO, converter=_mode)
    """Exact, approximate, or chosen by the graph's size."""
    addresses: bool = True
    """Give every tensor in a bounded pool an offset that fits (exact planning only)."""
    solver: str = DEFAULT_SOLVER
    """The solver plugin's name, resolved (and refused when unknown) before any work."""
    time_limit_seconds: float | None = attrs.field(default=None, validator=_time_limit)
    """The whole call's time limit (``None``: none; approximate planning then takes the
    strategy's :attr:`~Strategy.approximate_seconds`)."""
    relative_gap: float = attrs.field(default=DEFAULT_RELATIVE_GAP, validator=_relative_gap)
    """Relative gap at which a solve stops."""
    max_rounds: int = attrs.field(default=DEFAULT_MAX_ROUNDS, validator=_max_rounds)
    """Address-fitting solves before giving up."""
    pin_to_fast: bool = False
    """Keep parameters, inputs and outputs in the fastest pool (as AutoTM)."""
    recompute: bool = True
    """Let the ILP planner recompute activations instead of keeping or moving them (reruns;
    ``--no-recompute`` turns it off): it holds the practitioners' recomputing plans, and the
    exact search solves each formulation's recomputing model after its keeping and moving one
    wherever the graph has something to recompute and that can pay."""
    async_window: int = attrs.field(default=15, validator=_async_window)
    """Asynchronous models: how many kernels ahead of a use a fetch may be issued, and after
    one an eviction may complete (:attr:`~autotm_core.ilp.FormulationOptions.async_window`)."""
    async_spans: bool = True
    """Asynchronous models: copies in flight over several kernels (``--no-async-spans``:
    each overlaps one kernel, for a runtime that cannot keep copies in flight)."""
    insist: bool = False
    """Plan even when the model looks too big for this machine's memory."""
    cache: CacheOptions = CacheOptions()
    """How the 2LM baseline models the cache."""
    strategy: Strategy = DEFAULT_STRATEGY
    """Every knob of the anytime search."""


__all__ = ["DEFAULT_RELATIVE_GAP", "CacheOptions", "PlanSettings"]
