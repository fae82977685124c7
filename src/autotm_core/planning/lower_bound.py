"""A physical lower bound on the step time: seconds no plan of a problem can beat.

It holds for every valid plan, whatever the formulation that made it, under every cost
model :mod:`autotm_core.costs` can express (the roofline, any separable form, a measured
table with arbitrary times per configuration), and for copies that span any number of
kernels (issued at one kernel, complete before a later one). It rests on these facts of
the timeline the simulator prices, and on nothing else:

1. **Kernels.** Kernels run one after another, each for at least its least time over
   the configurations its costs allow (:func:`~.bound_rates.least_seconds`: read from the
   costs, not the all-fast time, since a slower pool may be better in some respect, e.g.
   a lower latency) in which the tensors it touches in the fastest pool fit that pool's
   capacity: a tensor lives whole in one pool, and every tensor a kernel touches is live
   during it, so a tensor larger than the fastest pool is always elsewhere and each kernel
   touching it pays for that. A rerun runs at least its kernel's least time too (it
   touches every tensor in the fastest pool, where they fit).
2. **Blocking copies.** A synchronous copy or a rerun holds the step: no kernel runs
   meanwhile, and no other copy moves bytes (the link's blocking rate is "nothing else
   runs"). Blocking copies run one at a time, each at most at its link's blocking rate.
3. **Overlapping copies.** Every other byte crossing to or from the fastest pool moves
   while kernels run (or wait for copies), over a copy channel
   (:attr:`~autotm_core.memory.MemorySystem.link_channels`), which carries at most its
   fastest link's overlapping rate *at every moment*, whichever kernels its copies span:
   over any stretch of the step lasting ``L``, at most ``rate * L`` bytes. This is the
   only fact about overlap used; no copy is assumed to overlap one kernel only.
4. **Kernels' own accesses.** A kernel that uses a tensor from another pool crosses its
   bytes itself. Over a link that carries kernel traffic they share the channel (fact 3);
   otherwise the costs alone limit them: a kernel touches at most ``access`` bytes there
   per second of its time, the most any configuration its costs allow touches
   (:func:`~.bound_rates.crossing_rates`; a table that prices a large remote read at
   nothing makes this infinite, and the traffic term then vanishes).
5. **Residency.** At a kernel whose live bytes exceed the fastest pool's capacity, the
   tensors making up the excess hold no bytes there during the kernel. A copy in flight
   holds both ends (destination reserved from issue, source kept until completion), so
   such a tensor, if produced in the step, finished crossing *out* (by a copy, or by its
   producer writing it elsewhere) by the end of the first such kernel, counted once (a
   copy outside stays valid until the tensor is written again); and if a kernel reads it
   at or after such a kernel, its bytes cross back *in* (a copy issued later, or the
   reader's own access) after the kernel before that one ends.

**The order term.** Split the step after any kernel ``b``: the stretch up to the end of
``b`` runs kernels ``0..b`` and every crossing out their rows need; the stretch after it,
the other kernels and every crossing in needed from ``b + 1`` on. The stretches do not
overlap, so the step lasts at least the two together; so the evictions a forward pass
needs and the fetches its backward pass needs cannot hide behind each other, even on a
duplex link. By facts 1-4 a stretch of length ``L`` with kernels of least time ``C`` spends
``S <= L - C`` on blocking copies and moves at most ``sync * S + overlap * (L - S)`` bytes,
where ``sync`` is the fastest blocking rate and ``overlap`` the channels' rates plus the
accesses' (:class:`~.bound_rates.CrossingRate`); so ``max(sync, overlap) * L >= bytes +
max(sync - overlap, 0) * C``, and ``L >= C``. Each direction is counted on its own (as if
it had its own channel), and the rates of several other pools add up: both only weaken it.

**The window term.** The same holds for any window of kernels ``a..b``, from the end of
kernel ``a - 1`` to the end of ``b``: it lasts at least its kernels' least times, and at
least what it must move each way with them, where it must move out every tensor produced
in it (at ``a`` or later: its value did not exist before) that is outside at some kernel up
to ``b``, and move in every tensor read at a kernel of it that was outside at some kernel
from ``a - 1`` on since its read before (a copy in flight holds both ends, so the tensor
crosses after that kernel ends, and by the read's end: the read itself, or a copy before
it). The LP takes the ends of the kernels as columns: kernel ``k`` ends at least its least
time after kernel ``k - 1``, each split's stretches and each window of at most
``window_kernels`` kernels (:data:`MAX_LP_WINDOWS`) last at least their crossings, and the
step is the last kernel's end. So crossings one kernel forces and the next cannot hide
(VGG-19 b128 at 4:1: each of the first block's ReLU, convolution and ReLU writes or reads
1.5 GiB over the host link, and the pooling after them reads in what the last one wrote
out) add up where the splits saw only the whole step's bytes: its bound keeping and moving
rose from 466.4 to 533.0 ms.

**Each kernel's own operands.** Four more facts bound a kernel's stretch (from the end of
the kernel before to its end):

- a kernel reads and writes each tensor it uses where the tensor is, so one holding no
  bytes in the fastest pool during it is touched in another pool, and no configuration
  its costs allow touches more such bytes per second of its time than
  :func:`~.bound_rates.touch_rate` (reads and writes together): it lasts at least its
  outside operands' bytes over that rate;
- no copy overlaps a kernel writing its tensor (the copy would race the write), so a tensor
  its producer writes into the fastest pool that holds no bytes there during the next
  kernel (and is not dropped) left by a blocking copy at the boundary, which holds the step
  before the next kernel runs;
- a tensor holding no bytes in the fastest pool during kernel ``k - 1`` (and not dropped)
  that holds some during ``k``, which reads it and does not write it, is being copied in
  from the boundary (a copy holds its destination from issue): either ``k`` starts after
  that copy (a blocking copy, or ``k`` waiting for the copy it reads), or ``k`` reads it in
  another pool while the copy moves it, and its bytes cross in twice between the end of
  ``k - 1`` and the end of its next read (which reads the copy, or another pool again);
- more generally, a tensor read at ``k`` that holds bytes in the fastest pool during ``k``
  but held none at a kernel from ``a - 1`` on since its read before was copied in after
  that kernel: the copy completed before ``k`` starts (its bytes cross within the window
  ``a..k-1``, beside that window's own crossings), or ``k`` starts after it (a blocking copy
  or a wait, lengthening ``k``'s stretch), or ``k`` reads the tensor where the copy comes
  from (among what ``k`` touches outside); a droppable tensor may have been restored by a
  rerun instead, so this holds only where it was dropped nowhere in between, and only
  where no kernel in between writes it (a new value needs no copy).

**The integral bound.** In a plan's own point every ``x``, ``xr``, the crossings' maxima,
each rerun and each of the three facts' choices is 0 or 1 (a tensor holds bytes in the
fastest pool during a kernel or none). With ``integral_seconds``, branch and bound on the
LP with those columns integral for every tensor of at least
:data:`~.bound_lp.INTEGRAL_FRACTION` of the largest excess proves a larger bound, valid
whenever it stops (HiGHS's proven dual bound, never its incumbent): where tensors are as
large as the fastest pool, the LP's fractions (1.25 of VGG-19's 1.5 GiB activations in
1.92 GiB of HBM) hide crossings whole tensors must make. VGG-19 b128 on ``gpu-h200`` at
4:1, recomputing: 475.5 ms from the LP, 518.6 ms integral (optimal in 90-270 s by load).

With ``x[t, k]`` the fraction of tensor ``t`` outside the fastest pool at kernel ``k``
(over-capacity kernels only), the bytes out by kernel ``k`` are at least
``max(x[t, k'] for k' <= k)`` and the bytes in from ``k`` on at least
``max(x[t, k'] for k' >= k)`` over kernels with a read ahead. The LP relaxation that
covers every kernel's excess and minimises the largest split is a lower bound on every
plan's step: a plan's own residencies give a feasible point no longer than its step.
To keep it small, tensors far smaller than the excess are taken as free to be outside,
and on large graphs only the neediest over-capacity kernels keep their rows
(:data:`SMALL_TENSOR_FRACTION`, :data:`MAX_LP_PAIRS`): both weaken it, neither makes it
wrong. HiGHS's interior-point method solves it (2-20 s on the paper's networks, where
its dual simplex took 50-320 s).

With recomputation (``recompute=True``), a tensor the graph lets a plan recompute may
also be outside by being dropped (``xr``, part of ``x``), but not at a kernel that reads
or writes it (it is in some pool then): it then crosses neither way, but
before its next read its producer reruns, which takes at least the producer's least
time once (a producer's outputs share a rerun). A rerun holds the step and no copy moves
meanwhile (fact 2), so the kernels' ends are counted without the reruns' time, and the
step lasts at least the last kernel's end plus those reruns. A rerun reads its inputs in
the fastest pool at its boundary, where an input no longer live can only be the output of
an earlier rerun there: a tensor dropped at kernel ``k`` is restored after ``k``, so for
every input of its producer last live before ``k`` a kernel writing that input reruns too
(and back through inputs with one writer); with no such kernel the tensor is not dropped
there. The crossing rows count only the part moved (``x - xr``), so a byte over capacity
costs a crossing or a rerun, whichever is cheaper; each kernel's reruns are counted as
one (a relaxation).

It ignores page rounding, pinned tensors, tensors' allowed pools, the capacity of every
pool but the fastest, copies between other pools, the kernels' slowdown beyond their
least time (but for the accesses of fact 4), a kernel waiting for a copy, and the
deadline of each fetch (before the read), each of which only raises the true optimum: it
is valid, not tight.
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, FloatArray, IntArray
from autotm_core.ir.liveness import Liveness
from autotm_core.planning.bound_lp import NO_EXCESS, Pairs, SplitProgram, ranks
from autotm_core.planning.bound_rates import CrossingRate, crossing_rates, least_seconds, touch_rate
from autotm_core.planning.problem import Problem


@attrs.frozen(kw_only=True)
class LowerBound:
    """A physical lower bound on a problem's step time, and its parts."""

    compute_seconds: float
    """Every kernel at its least time over the configurations its costs allow."""
    rate_in: CrossingRate
    """How fast bytes can cross into the fastest pool."""
    rate_out: CrossingRate
    """How fast bytes can cross out of it."""
    traffic_seconds: float
    """The least time the crossings take with the compute they cannot hide behind: the
    step of the LP over the kernels' ends, splits and windows (see the module docstring),
    with ``recompute`` plus the reruns that stand in for crossings; 0 without an excess."""
    split_after: int
    """The kernel after which the largest split falls (-1: before the first kernel; the
    last kernel's position: after it; either means one direction alone binds)."""

    @property
    def seconds(self) -> float:
        """The bound: no plan's step is shorter."""
        return max(self.compute_seconds, self.traffic_seconds)


def physical_lower_bound(problem: Problem, *, recompute: bool = False,
                         integral_seconds: float = 0.0) -> LowerBound:
    """The physical lower bound of ``problem`` under its limit (see the module docstring);
    with ``recompute``, valid also for plans that recompute activations (reruns); with
    ``integral_seconds``, raised by up to that long of branch and bound on the LP with the
    big tensors' columns integral (the integral bound of the module docstring)."""
    system = problem.limited_system
    liveness = problem.graph.liveness
    capacity = system.fast.capacity_nbytes
    least = least_seconds(problem.costs, liveness, capacity)
    compute = float(least.sum())
    rate_in, rate_out = crossing_rates(system, problem.costs, liveness)
    if capacity is None or (np.isinf(rate_in.bytes_per_second)
                            and np.isinf(rate_out.bytes_per_second)):
        # no limit, or the costs let kernels touch other pools in no time: compute alone
        return LowerBound(compute_seconds=compute, rate_in=rate_in, rate_out=rate_out,
                          traffic_seconds=0.0, split_after=-1)
    droppable = problem.graph.recompute.recomputable if recompute else None
    seconds, split_after = _least_split(liveness, capacity, rate_in, rate_out, least,
                                        droppable, touch_rate(system, problem.costs, liveness),
                                        integral_seconds=integral_seconds)
    return LowerBound(compute_seconds=compute, rate_in=rate_in, rate_out=rate_out,
                      traffic_seconds=seconds, split_after=split_after)


SMALL_TENSOR_FRACTION = 1e-4
"""Tensors smaller than this fraction of the largest excess enter the LP as free to be
outside (their crossings cost nothing): a relaxation, so still a bound, with fewer
columns and coefficients the solver does not drop as zeros."""
MAX_LP_PAIRS = 20_000
"""Most (tensor, kernel) columns of the LP. Beyond, it keeps the rows of fewer
over-capacity kernels: the one with the largest excess in each of as many runs of
consecutive ones as fit. Dropping rows gives a weaker bound, never a wrong one."""


MAX_LP_WINDOWS = 10_000
"""Most windows of kernels whose own crossings bound their time: windows of at most this
over the kernels' count each (70 kernels on VGG-19's 142, as tight there as every window;
15 on GPT-2 12 layers' 642). At 20,000 HiGHS's interior-point method took over 6 minutes on
GPT-2 12 layers, against 13-16 s now. Fewer windows give a weaker bound, never a wrong
one."""


def _least_split(liveness: Liveness, capacity: int, rate_in: CrossingRate,
                 rate_out: CrossingRate,
                 kernel_seconds: FloatArray,
                 droppable: BoolArray | None = None,
                 touch_bytes_per_second: float = float("inf"), *,
                 integral_seconds: float = 0.0) -> tuple[float, int]:
    """The LP of the module docstring: the least largest split's seconds, and the kernel
    after which it falls (0 seconds without an excess)."""
    n_kernels = liveness.n_kernels
    excess = (liveness.live_nbytes - capacity).astype(np.float64)
    if not n_kernels or excess.max() <= 0:
        return NO_EXCESS
    # units near 1 for the solver's tolerances: bytes in the largest excess, seconds in
    # the longer of the compute and that excess's crossing
    unit_nbytes = float(excess.max())
    compute_before = np.concatenate([[0.0], np.cumsum(kernel_seconds)])
    unit_seconds = max(float(compute_before[-1]),
                       unit_nbytes / min(rate_in.bytes_per_second, rate_out.bytes_per_second))
    small = _small_tensors(liveness, unit_nbytes)
    need = excess - _live_nbytes(liveness, small)
    if need.max() <= 0:
        return NO_EXCESS
    program = SplitProgram(
        liveness=liveness, need=need, pairs=_lp_pairs(liveness, need, np.flatnonzero(~small)),
        rate_in=rate_in, rate_out=rate_out, unit_nbytes=unit_nbytes, unit_seconds=unit_seconds,
        compute_before=compute_before, kernel_seconds=kernel_seconds,
        droppable=np.zeros(len(liveness.nbytes), dtype=bool) if droppable is None
        else droppable, window_kernels=min(n_kernels, MAX_LP_WINDOWS // n_kernels),
        touch_bytes_per_second=touch_bytes_per_second)
    return program.solve(integral_seconds)


def _small_tensors(liveness: Liveness, unit_nbytes: float) -> BoolArray:
    """The tensors the LP takes as free to be outside (:data:`SMALL_TENSOR_FRACTION`)."""
    small = liveness.nbytes < unit_nbytes * SMALL_TENSOR_FRACTION
    # a tensor that never exists (empty life) covers nothing
    return small & (liveness.last.astype(np.int64) >= liveness.first.astype(np.int64))


def _live_nbytes(liveness: Liveness, tensors: BoolArray) -> FloatArray:
    """Per kernel, the live bytes of the ``tensors`` marked."""
    first, last = liveness.first.astype(np.int64), liveness.last.astype(np.int64)
    live = np.zeros(liveness.n_kernels + 1)  # as differences from the kernel before
    np.add.at(live, first[tensors], liveness.nbytes[tensors])
    np.add.at(live, last[tensors] + 1, -liveness.nbytes[tensors])
    return np.cumsum(live)[:liveness.n_kernels]


def _lp_pairs(liveness: Liveness, need: FloatArray, big: IntArray) -> Pairs:
    """The pairs of the ``big`` tensors at the kernels whose ``need`` the LP covers."""
    first, last = liveness.first.astype(np.int64), liveness.last.astype(np.int64)
    # each tensor's life in two segments: while a read is ahead (it crosses back in
    # too), and after its last read; segments by tensor, then time
    entry_kernel = liveness.entry_kernels()
    reads = np.asarray(liveness.kernel_reads, dtype=bool)
    last_read = np.full(len(liveness.nbytes), -1, dtype=np.int64)
    np.maximum.at(last_read, liveness.kernel_tensors[reads], entry_kernel[reads])
    seg_tensor = np.concatenate([big, big])
    seg_first = np.concatenate([first[big], np.maximum(first[big], last_read[big] + 1)])
    seg_last = np.concatenate([np.minimum(last[big], last_read[big]), last[big]])
    seg_ahead = np.arange(2 * len(big)) < len(big)
    over = _row_kernels(need, seg_first, seg_last)
    lo = np.searchsorted(over, seg_first, side="left")
    hi = np.searchsorted(over, seg_last, side="right")
    keep = hi > lo
    order = np.lexsort((~seg_ahead[keep], seg_tensor[keep]))
    seg_tensor, lo, hi = seg_tensor[keep][order], lo[keep][order], hi[keep][order]
    seg_ahead = seg_ahead[keep][order]
    span = hi - lo
    tensor = np.repeat(seg_tensor, span)
    return Pairs(over=over, tensor=tensor, row=np.repeat(lo, span) + ranks(span),
                  ahead=np.repeat(seg_ahead, span),
                  follows=np.flatnonzero(tensor[1:] == tensor[:-1]))


def _row_kernels(need: FloatArray, seg_first: IntArray, seg_last: IntArray) -> IntArray:
    """The kernels whose excess the LP covers, ascending: every one with ``need`` above 0
    when the (segment, kernel) pairs stay within :data:`MAX_LP_PAIRS`, else the neediest
    of each of as many runs of consecutive ones as keep them within it."""
    over = np.flatnonzero(need > 0)

    def neediest(n_runs: int) -> IntArray:
        run = np.arange(len(over)) * n_runs // len(over)
        order = np.lexsort((-need[over], run))
        return np.sort(over[order[np.flatnonzero(np.diff(run[order], prepend=-1))]])

    def n_pairs(rows: IntArray) -> int:
        return int(np.maximum(np.searchsorted(rows, seg_last, side="right")
                              - np.searchsorted(rows, seg_first, side="left"), 0).sum())

    if n_pairs(over) <= MAX_LP_PAIRS:
        return over
    least, most = 1, len(over) - 1
    while least < most:  # the most runs whose pairs fit (one run always does)
        mid = (least + most + 1) // 2
        if n_pairs(neediest(mid)) <= MAX_LP_PAIRS:
            least = mid
        else:
            most = mid - 1
    return neediest(least)


__all__ = ["LowerBound", "physical_lower_bound"]
