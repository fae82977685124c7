"""Every knob of the anytime search, in one frozen record.

The search (:mod:`autotm_core.ilp.search`) splits time between formulations and
steps, sizes windows and stretches, and decides when a step does not pay. Each of
those choices is a field of :class:`Strategy`, documented where it is declared and
in docs/tuning.md with the measurement that set it. Tests and benchmarks pass a
strategy of their own (``attrs.evolve(DEFAULT_STRATEGY, ...)``) instead of patching
module constants.
"""

from __future__ import annotations

import attrs

from autotm_core.ilp.options import Formulation

_positive = attrs.validators.gt(0.0)
_non_negative = attrs.validators.ge(0.0)
_share = [attrs.validators.gt(0.0), attrs.validators.le(1.0)]
_count = attrs.validators.ge(1)
_size = attrs.validators.ge(0)


@attrs.frozen(kw_only=True)
class Strategy:
    """How the anytime search spends its time (see docs/tuning.md for what set each value)."""

    # -- the formulation chain (planning.ilp) ------------------------------------------------
    static_weight: float = attrs.field(default=1.0, validator=_positive)
    """The static stage's weight: each formulation of the chain gets its weight's share, against
    the weights of the stages after it, of the time left when it starts."""
    synchronous_weight: float = attrs.field(default=3.0, validator=_positive)
    """The synchronous stage's weight (see :attr:`static_weight`)."""
    asynchronous_weight: float = attrs.field(default=3.0, validator=_positive)
    """The asynchronous stage's weight (see :attr:`static_weight`)."""
    recompute_factor: float = attrs.field(default=1.0, validator=_positive)
    """With recomputation, each formulation's stage that may recompute, after its stage that
    keeps and moves only, weighs this many times that one (see :attr:`static_weight`)."""
    held_reruns_share: float = attrs.field(default=0.5, validator=_share)
    """With recomputation, the stage that chooses among the held plans' reruns only (between
    a formulation's keeping-and-moving stage and its recomputing stage) gets this share of
    the time the recomputing stage would get when it starts; the recomputing stage then gets
    its share of what is left, and no other stage gets less. Its model is about the
    keeping-and-moving one's size (Hugging Face GPT-2 at 0.92 GiB, synchronous: 40,316
    columns against 95,687 with every option; to its gap in 12 s). Weighed as a stage of its
    own (half its formulation's weight), it took the asynchronous stage's time: VGG-19 b128
    gpu-h200 4:1 asynchronous, 60 s, answered with its synchronous plan, 0.717 s against
    0.672 s before."""
    untimed_recompute_seconds: float = attrs.field(default=60.0, validator=_positive)
    """Without a time limit, a recomputing stage still stops after this long: its model's
    bound is weak, so its solve may not close the gap for a long time (zoo:resnet50:batch=64
    optane-2019 4:1, static: 230 s of a 300 s limit without closing it or finding a rerun,
    where keeping and moving reached the gap in seconds); the keeping-and-moving stages run
    to the gap as before."""
    rerun_options_per_kernel: float = attrs.field(default=2.0, validator=_positive)
    """A recomputing model's rerun chains reach as deep as they may (up to
    :attr:`~autotm_core.ilp.options.FormulationOptions.recompute_depth`) while their options
    number at most this many per kernel: the model's size and build grow with them
    (zoo:inception_v4:batch=64, 1,627 kernels: 10,907 options and a 7.2 s build at depth 8,
    955 and 1.8 s at depth 1, on a 20 s point)."""
    setup_factor: float = attrs.field(default=20.0, validator=_non_negative)
    """A richer formulation's stage is not started with less time left than this many times
    the simpler model's build: even cut short it builds its model, reads a start, solves,
    checks and packs (Inception v4 b64 optane-2019 4:1: 19x)."""

    # -- every solve ------------------------------------------------------------------------
    min_solve_seconds: float = attrs.field(default=0.5, validator=_positive)
    """The least time limit a solve is given, even past the deadline (a solver needs a moment
    to load the start it is offered)."""
    min_grace_seconds: float = attrs.field(default=1.0, validator=_non_negative)
    """A planning call with a time limit ends within the limit plus its grace: this many
    seconds or :attr:`grace_share` of the limit, the larger (:meth:`grace_seconds`). A solve
    still running then (less the time kept to check its plan and :attr:`answer_seconds`)
    is abandoned with the last solution it reported. No margin on the solver's own limit
    bounds it: HiGHS checks its limit only between some of its steps (the Llama-7B-shaped
    step's whole model at 4:1, 861,339 nonzeros, ran 13.7 s past a 273 s limit without
    checking it; retiming GPT-2 12 layers' start 27 s on a 9 s limit), and stops within
    0.04-1.3 s of a cancellation when it does check (load 2-3.5)."""
    grace_share: float = attrs.field(default=0.02, validator=_share)
    """See :attr:`min_grace_seconds`: 6 s at a 300 s limit, of which the solve is cancelled
    after a quarter (``solvers.highs.CANCEL_SHARE``), leaving 4.5 s to stop."""
    answer_seconds: float = attrs.field(default=0.1, validator=_non_negative)
    """Seconds of the grace kept, besides the time each step keeps to check its plan, for
    making the answer after an abandoned solve (the formulation chain's outcome, the
    approximate answer verified again): 6-17 ms at chain-8 (2 cores, load 1.5)."""

    # -- one model's search (ilp.planner) -----------------------------------------------------
    relax_and_fix_share: float = attrs.field(default=0.25, validator=_share)
    """Share of the time left (after the check reserve) each of relax-and-fix's two solves
    gets."""
    retime_share: float = attrs.field(default=0.25, validator=_share)
    """Share of the time left that retiming the asynchronous start gets before the full MIP
    (VGG-19 b128 gpu-h200 4:1: the synchronous plan 2.7% faster in 1.4 s)."""
    windows_share: float = attrs.field(default=0.5, validator=_share)
    """Share of the time left that windows get before the full MIP (VGG-19 b128 optane-2019
    4:1, 60 s: the full MIP alone found nothing better than its start; 30 s of windows
    gained 1.3%)."""
    improve_above_columns: int = attrs.field(default=100_000, validator=_size)
    """Asynchronous models with more columns start from a held plan improved (windows, else
    retiming) instead of relax-and-fix, whose LP relaxation does not pay there (Inception v4
    b64: 441,470 columns, the LP unfinished after 20 s; VGG-19 b128: 30,958 columns, cheap)."""
    test_every_gain_seconds: float = attrs.field(default=0.3, validator=_non_negative)
    """Windows hold every gain to the caller's test (address packing) when one test took no
    longer than this; else only their final plan and its fallbacks meet it (VGG-19 b128
    gpu-h200 4:1: a test took 0.07 s; unchecked windows reached 0.957x but no plan packed,
    checked ones 0.974x, all packing)."""

    interrupt_decode_seconds: float = attrs.field(default=0.5, validator=_non_negative)
    """After Ctrl-C, an interrupted solve's best solution is decoded, checked and offered only
    when its model built in at most this long (decoding and checking take about as long as
    the build); a larger model's search stops at once with the plans already held, so that
    Ctrl-C ends planning within 2 s (Inception v4 b64's asynchronous model: 6.5 s to build)."""

    # -- windows (ilp.neighbourhood) ----------------------------------------------------------
    window_kernels: int = attrs.field(default=60, validator=_count)
    """The most kernels per window (Inception v4 b64 optane-2019 4:1: sub-models of
    15,000-20,000 columns, 0.3-1 s each; 40 s reached 0.981x with 60, 0.985x with 100,
    0.987x with 150)."""
    model_windows: int = attrs.field(default=4, validator=_count)
    """A window has no more than the model's kernels over this (VGG-19 b128, 142 kernels:
    windows of 30 kernels gained 1.3% in 30 s, of 60 kernels 1.0%)."""
    window_seconds: float = attrs.field(default=3.0, validator=_positive)
    """The most one window's solve may take."""
    trail_length: int = attrs.field(default=8, validator=_size)
    """Replaced incumbents a window search keeps as fallbacks for the caller's test, newest
    (each a full copy of the values: 3.5 MB at 441,470 columns)."""
    min_search_seconds: float = attrs.field(default=15.0, validator=_non_negative)
    """Windows are not started with less time than this: a window or two rarely gain, where
    retiming the whole model does (GPT-2 4 layers b256 gpu-h200 4:1, 7 s: retiming 9.691 s,
    windows nothing over the synchronous 9.859 s)."""
    retime_build_factor: float = attrs.field(default=1.0, validator=_non_negative)
    """The whole model is retimed (held plan, too little time for windows) only with this many
    times its build left after the reserve: HiGHS's presolve of the whole model cannot be
    stopped and takes about as long (Inception v4 b64 optane-2019 4:1: an asynchronous model
    of 870,358 columns built in 7.9 s, its retime abandoned in presolve after 8 s with 7 s
    given, and the solve after it could not start while that one ran)."""
    improvement_tolerance: float = attrs.field(default=1e-7, validator=_non_negative)
    """A window's solution replaces the incumbent only when better by this fraction of it."""

    # -- address fitting (ilp.fitting) ------------------------------------------------------
    tighten_kernels: int = attrs.field(default=10, validator=_size)
    """Kernels on each side of an overflowing kernel whose limit is lowered too (AutoTM's
    +-10)."""
    room_attempts: int = attrs.field(default=4, validator=_size)
    """Times a round's plan that overflows its packing is given more room by copying idle
    tensors out of the full pool (:func:`~autotm_core.addresses.room.make_room`), each time by
    what the last attempt still overflowed, before the next round solves again (0: never).
    Hugging Face GPT-2 on ``gpu-h200`` at 0.92 GiB packed after 1 attempt (synchronous) and
    the static plan's overflow, given moves, after 3."""

    # -- approximate planning (ilp.approximate) ---------------------------------------------
    approximate_above_kernels: int = attrs.field(default=2000, validator=_size)
    """``--mode auto`` plans graphs with more kernels approximately (2 cores: the exact
    planner took about 5 s at 1,000 kernels and 45 s at 5,000)."""
    approximate_seconds: float = attrs.field(default=60.0, validator=_positive)
    """The approximate planner's budget when no time limit is given."""
    stretch_kernels: int = attrs.field(default=1000, validator=_count)
    """Kernels planned at once by the rolling planner; the second pass's groups of tensors
    take about as many binaries as such a stretch (chain:20000 4:1, 60 s: half as many
    3.101 s, as many 3.106 s, twice as many 3.166 s)."""
    static_start_share: float = attrs.field(default=0.4, validator=[_non_negative,
                                                                    attrs.validators.le(1.0)])
    """Share of the time left that the synchronous and asynchronous approximate searches give
    the static formulation's whole model (relax-and-fix) before their own model is built,
    for graphs of more than :attr:`stretch_kernels` and at most :attr:`static_start_kernels`
    kernels: its model is a third of the synchronous one's size and sees the whole step, and
    its plan is one of theirs (chain:20000 optane-2019 4:1: its LP and fixed MIP in 6.5 s, a
    plan of 2.9969 s where the stretches and their second pass reached 3.106 s in 60 s;
    chain:50000: 38 s, 7.4922 s). What it does not use goes on; a share, not the time it
    needs, so that load (which doubles the LP's seconds) does not leave it without a plan.
    0: not planned."""
    static_start_kernels: int = attrs.field(default=50_000, validator=_size)
    """The most kernels for which the static formulation's whole model is planned first
    (:attr:`static_start_share`): its LP relaxation (HiGHS's simplex) grows as the square of
    the kernels, 0.5 s at chain:5000, 5.7 s at 20,000, 36 s at 50,000, not solved in 150 s at
    100,000 (and the process then held 7.8 GiB, against 6.4 GiB without it)."""
    margin_kernels: int = attrs.field(default=250, validator=_size)
    """Kernels after each stretch that its slice sees, relaxed."""
    bound_reserve_seconds: float = attrs.field(default=6.0, validator=_non_negative)
    """The stretches stop this long before the budget's end (or :attr:`bound_reserve_share`
    of the budget, the smaller), leaving time for the bound, decoding and verifying."""
    bound_reserve_share: float = attrs.field(default=0.1, validator=_share)
    """See :attr:`bound_reserve_seconds`."""
    completion_build_share: float = attrs.field(default=0.35, validator=_non_negative)
    """The stretches also stop this share of the model's build seconds before that, for
    joining what they planned, when out of time, to the held plan (its values in the
    model, the join, the joined plan verified and simulated); a join that would start
    later than that before the budget's end is not made. Measured against the build, no
    load: chain:20000 1.6 + 0.4 + 1.0 s against 13 s (0.23), example:chain-20000 (60,001
    kernels) 7.7 + 0.8 + 4.4 s against 37 s (0.35)."""
    finish_seconds: float = attrs.field(default=2.0, validator=_non_negative)
    """The Lagrangian bound stops this long before the budget's end (decoding, verifying and
    simulating take about a second at 20,000 kernels); the whole model's solve too, or twice
    the longest decoding seen, the longer (0.1-0.2 s at the Llama-7B-shaped step, where an
    abandoned solve's threads ran on beside the decoding at load 3-7)."""
    lagrangian_steps: int = attrs.field(default=1000, validator=_count)
    """Most subgradient steps of the Lagrangian bound (the budget usually stops it first)."""
    full_solve_lagrangian_steps: int = attrs.field(default=100, validator=_count)
    """As many, when the whole model is solved afterwards (it gets the rest of the budget)."""
    full_solve_kernels: int = attrs.field(default=50_000, validator=_size)
    """Up to this many kernels, the whole model is solved after the stretches, from them,
    when the time left fits it (:attr:`full_solve_stretch_factor`). The Llama-7B-shaped
    step (9,264 kernels, gpu-h200, 300 s) went from 2.755 to 2.729 s at 1:1 (gap 3.3% to
    0.3%, 67 s) and from 4.626 to 4.590 s at 4:1 (4.1% to 0.1%); the cap was 6,000."""
    min_full_solve_seconds: float = attrs.field(default=1.0, validator=_positive)
    """The approximate planner does not start the whole-model solve with less time left."""
    full_solve_stretch_factor: float = attrs.field(default=6.0, validator=_non_negative)
    """Nor the whole model's relax-and-fix or solve with less than this many times the seconds
    the stretches took: their LP relaxation alone outlasts them (2 cores, HiGHS's simplex:
    chain:5000 on optane-2019 4:1, stretches 9.5 s, whole LP 50 s; the Llama-7B-shaped step
    on gpu-h200 1:1, stretches 13-20 s, relax-and-fix of the whole model 60 s)."""
    revisit_share: float = attrs.field(default=0.75, validator=_share)
    """Share of the time left after the stretches (less the reserve) that their second pass
    may take; the Lagrangian bound gets the rest. Barely measured: chain:20000 at 60 s gave
    gaps of 5.5% and 9.4% in two runs with all of it, 8.0% at 0.5 and at 0.75 (what the
    second pass gains depends on how far it gets before its deadline)."""
    stall_steps: int = attrs.field(default=30, validator=_count)
    """The Lagrangian subgradient halves its step after this many steps without a better
    bound."""
    deflection: float = attrs.field(default=0.5, validator=_non_negative)
    """Weight of the previous subgradient in the next direction (deflected subgradient)."""

    def grace_seconds(self, limit_seconds: float | None) -> float:
        """How far past ``limit_seconds`` a planning call may end (see
        :attr:`min_grace_seconds`; 0 without a limit)."""
        if limit_seconds is None:
            return 0.0
        return max(self.min_grace_seconds, self.grace_share * limit_seconds)

    def stage_weight(self, formulation: Formulation, *, recompute: bool = False) -> float:
        """The weight of ``formulation``'s stage in the chain (its recomputing stage's, with
        ``recompute``)."""
        weight = {Formulation.STATIC: self.static_weight,
                  Formulation.SYNCHRONOUS: self.synchronous_weight,
                  Formulation.ASYNCHRONOUS: self.asynchronous_weight}[formulation]
        return weight * self.recompute_factor if recompute else weight


DEFAULT_STRATEGY = Strategy()
"""The strategy every planning call uses unless given another."""

__all__ = ["DEFAULT_STRATEGY", "Strategy"]
