"""A physical lower bound on the step time: seconds no plan of a problem can beat.

It holds for every valid plan, whatever the formulation that made it, under every cost
model :mod:`autotm_core.costs` can express (the roofline, any separable form, a measured
table with arbitrary times per configuration), and for copies that span any number of
kernels (issued at one kernel, complete before a later one). It rests on these facts of
the timeline the simulator prices, and on nothing else:

1. **Kernels.** Kernels run one after another, each for at least its least time over
   the configurations its costs allow (:func:`~.bound_rates.least_seconds`: read from the
   costs, not the all-fast time, since a slower pool may be better in some respect, e.g.
   a lower latency). A rerun runs at least its kernel's least time too.
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
also be outside by being dropped (``xr``, part of ``x``): it then crosses neither way, but
before its next read its producer reruns, which takes at least the producer's least
time once (a producer's outputs share a rerun); the step lasts at least the whole compute
plus those reruns. The crossing rows count only the part moved (``x - xr``), so a byte
over capacity costs a crossing or a rerun, whichever is cheaper; chains of reruns are
counted as one rerun each (a relaxation).

It ignores page rounding, pinned tensors, tensors' allowed pools, the capacity of every
pool but the fastest, copies between other pools, the kernels' slowdown beyond their
least time (but for the accesses of fact 4), a kernel waiting for a copy, and the
deadline of each fetch (before the read), each of which only raises the true optimum: it
is valid, not tight.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import attrs
import numpy as np
from scipy import sparse

from autotm_core.arrays import BoolArray, FloatArray, IntArray
from autotm_core.ir.liveness import Liveness
from autotm_core.planning.bound_rates import CrossingRate, crossing_rates, least_seconds
from autotm_core.planning.problem import Problem

logger = logging.getLogger(__name__)


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
    largest split of the step (see the module docstring); 0 without an excess."""
    split_after: int
    """The kernel after which the largest split falls (-1: before the first kernel; the
    last kernel's position: after it; either means one direction alone binds)."""

    @property
    def seconds(self) -> float:
        """The bound: no plan's step is shorter."""
        return max(self.compute_seconds, self.traffic_seconds)


def physical_lower_bound(problem: Problem, *, recompute: bool = False) -> LowerBound:
    """The physical lower bound of ``problem`` under its limit (see the module docstring);
    with ``recompute``, valid also for plans that recompute activations (reruns)."""
    system = problem.limited_system
    liveness = problem.graph.liveness
    least = least_seconds(problem.costs, liveness)
    compute = float(least.sum())
    rate_in, rate_out = crossing_rates(system, problem.costs, liveness)
    capacity = system.fast.capacity_nbytes
    if capacity is None or (np.isinf(rate_in.bytes_per_second)
                            and np.isinf(rate_out.bytes_per_second)):
        # no limit, or the costs let kernels touch other pools in no time: compute alone
        return LowerBound(compute_seconds=compute, rate_in=rate_in, rate_out=rate_out,
                          traffic_seconds=0.0, split_after=-1)
    droppable = problem.graph.recompute.recomputable if recompute else None
    seconds, split_after = _least_split(liveness, capacity, rate_in, rate_out, least,
                                        droppable)
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


_NO_EXCESS = (0.0, -1)
"""What :func:`_least_split` gives when no kernel's live bytes exceed the capacity."""


def _least_split(liveness: Liveness, capacity: int, rate_in: CrossingRate,
                 rate_out: CrossingRate,
                 kernel_seconds: FloatArray,
                 droppable: BoolArray | None = None) -> tuple[float, int]:
    """The LP of the module docstring: the least largest split's seconds, and the kernel
    after which it falls (0 seconds without an excess)."""
    n_kernels = liveness.n_kernels
    excess = (liveness.live_nbytes - capacity).astype(np.float64)
    if not n_kernels or excess.max() <= 0:
        return _NO_EXCESS
    # units near 1 for the solver's tolerances: bytes in the largest excess, seconds in
    # the longer of the compute and that excess's crossing
    unit_nbytes = float(excess.max())
    compute_before = np.concatenate([[0.0], np.cumsum(kernel_seconds)])
    unit_seconds = max(float(compute_before[-1]),
                       unit_nbytes / min(rate_in.bytes_per_second, rate_out.bytes_per_second))
    small = _small_tensors(liveness, unit_nbytes)
    need = excess - _live_nbytes(liveness, small)
    if need.max() <= 0:
        return _NO_EXCESS
    program = _SplitProgram(
        liveness=liveness, need=need, pairs=_lp_pairs(liveness, need, np.flatnonzero(~small)),
        rate_in=rate_in, rate_out=rate_out, unit_nbytes=unit_nbytes, unit_seconds=unit_seconds,
        compute_before=compute_before, kernel_seconds=kernel_seconds,
        droppable=np.zeros(len(liveness.nbytes), dtype=bool) if droppable is None
        else droppable)
    return program.solve()


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


@attrs.frozen(kw_only=True)
class _Pairs:
    """The LP's (tensor, row kernel) pairs: one ``x`` column each, by tensor, then time."""

    over: IntArray
    """The kernels whose excess the LP covers, ascending (:func:`_row_kernels`)."""
    tensor: IntArray
    """Each pair's tensor."""
    row: IntArray
    """Each pair's row: its kernel is ``over[row]``."""
    ahead: BoolArray
    """Whether a read of the tensor is ahead at the pair's kernel (it must cross back in)."""
    follows: IntArray
    """The pairs ``p`` whose next pair ``p + 1`` is of the same tensor."""


def _lp_pairs(liveness: Liveness, need: FloatArray, big: IntArray) -> _Pairs:
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
    return _Pairs(over=over, tensor=tensor, row=np.repeat(lo, span) + _ranks(span),
                  ahead=np.repeat(seg_ahead, span),
                  follows=np.flatnonzero(tensor[1:] == tensor[:-1]))


class _Columns(NamedTuple):
    """Where each group of the LP's columns begins, for ``n_pairs`` pairs, ``n_rows`` rows
    and ``n_splits`` splits: ``x`` (outside), ``c`` (out so far: nondecreasing, >= x),
    ``d`` (in from here on: nonincreasing, >= x where a read is ahead), one each per
    pair; ``out_by[j]`` and ``in_from[j]`` (bytes) per row; per split ``b = -1 .. n-1``
    its two sides' seconds ``before[b + 1]`` and ``after[b + 1]``; the step's ``z``."""

    n_pairs: int
    n_rows: int
    n_splits: int
    x: int
    c: int
    d: int
    out_by: int
    in_from: int
    before: int
    after: int
    z: int
    xr: int
    rerun: int
    n_cols: int

    @classmethod
    def of(cls, n_pairs: int, n_rows: int, n_splits: int) -> _Columns:
        """The layout: the groups in the order above, each after the one before; then
        ``xr`` (the part of ``x`` dropped, per pair) and ``rerun`` (per kernel: whether it
        reruns, ``n_splits - 1`` kernels)."""
        before = 3 * n_pairs + 2 * n_rows
        z = before + 2 * n_splits
        return cls(n_pairs, n_rows, n_splits, x=0, c=n_pairs, d=2 * n_pairs,
                   out_by=3 * n_pairs, in_from=3 * n_pairs + n_rows, before=before,
                   after=before + n_splits, z=z, xr=z + 1, rerun=z + 1 + n_pairs,
                   n_cols=z + 1 + n_pairs + n_splits - 1)


@attrs.frozen(kw_only=True)
class _SplitProgram:
    """The LP of the module docstring over given pairs, in the units of
    :func:`_least_split` (bytes in ``unit_nbytes``, seconds in ``unit_seconds``)."""

    liveness: Liveness
    need: FloatArray
    """Per kernel, the bytes the big tensors must cover (above 0: over capacity)."""
    pairs: _Pairs
    rate_in: CrossingRate
    rate_out: CrossingRate
    unit_nbytes: float
    unit_seconds: float
    compute_before: FloatArray
    """Per split ``b = -1 .. n-1``, the least compute of the kernels up to ``b``."""
    kernel_seconds: FloatArray
    """Per kernel, its least time (what a rerun of it takes at least)."""
    droppable: BoolArray
    """Per tensor: a plan may drop it and recompute it (all False without recomputation)."""

    @property
    def cols(self) -> _Columns:
        """Where the LP's columns are."""
        return _Columns.of(len(self.pairs.tensor), len(self.pairs.over),
                           self.liveness.n_kernels + 1)

    @property
    def compute_after(self) -> FloatArray:
        """Per split, the least compute of the kernels after it."""
        return self.compute_before[-1] - self.compute_before

    @property
    def splits(self) -> IntArray:
        """The kernel each split falls after (-1: before the first)."""
        return np.arange(-1, self.liveness.n_kernels)

    @property
    def done(self) -> IntArray:
        """Per split, how many rows are at kernels up to it."""
        return np.searchsorted(self.pairs.over, self.splits, side="right")

    def sizes(self) -> tuple[FloatArray, FloatArray]:
        """Per tensor, its size in units, and its size when it must cross out (0 for one
        from before the step: it never has to)."""
        size = self.liveness.nbytes.astype(np.float64) / self.unit_nbytes
        return size, np.where(self.liveness.producer >= 0, size, 0.0)

    def solve(self) -> tuple[float, int]:
        """The least largest split's seconds and the kernel it falls after, by HiGHS's
        interior-point method; :data:`_NO_EXCESS` when the LP has no solution."""
        from scipy.optimize import linprog

        cols = self.cols
        ub, eq = _Rows(), _Rows()
        self._cover_rows(ub)
        self._split_rows(ub)
        self._rerun_rows(ub)
        self._crossing_rows(eq)
        cost = np.zeros(cols.n_cols)
        cost[cols.z] = 1.0
        solved = linprog(cost, A_ub=ub.matrix(cols.n_cols), b_ub=ub.rhs(),
                         A_eq=eq.matrix(cols.n_cols), b_eq=eq.rhs(), bounds=self._bounds(),
                         method="highs-ipm")
        if solved.status != 0:  # infeasible: some excess no tensor can cover (workspace alone)
            if solved.status != 2:
                logger.warning("the physical bound's LP stopped unsolved (%s): compute alone",
                               solved.message)
            return _NO_EXCESS
        return float(solved.fun) * self.unit_seconds, self._largest_split(solved.x)

    def _cover_rows(self, ub: _Rows) -> None:
        """Every excess covered by the pairs at its kernel; ``c`` and ``d`` at least ``x``
        (``d`` where a read is ahead), ``c`` nondecreasing and ``d`` nonincreasing in time."""
        p, cols = self.pairs, self.cols
        x, c, d = cols.x, cols.c, cols.d
        pairs = np.arange(cols.n_pairs)
        read, follows = pairs[p.ahead], p.follows
        size, _ = self.sizes()
        r = ub.block(cols.n_rows, -self.need[p.over] / self.unit_nbytes)
        ub.add(r + p.row, x + pairs, -size[p.tensor])
        r = ub.block(cols.n_pairs)
        ub.add(r + pairs, x + pairs, 1.0)
        ub.add(r + pairs, cols.xr + pairs, -1.0)
        ub.add(r + pairs, c + pairs, -1.0)
        r = ub.block(len(follows))
        ub.add(r + np.arange(len(follows)), c + follows, 1.0)
        ub.add(r + np.arange(len(follows)), c + follows + 1, -1.0)
        r = ub.block(len(read))
        ub.add(r + np.arange(len(read)), x + read, 1.0)
        ub.add(r + np.arange(len(read)), cols.xr + read, -1.0)
        ub.add(r + np.arange(len(read)), d + read, -1.0)
        r = ub.block(len(follows))
        ub.add(r + np.arange(len(follows)), d + follows + 1, 1.0)
        ub.add(r + np.arange(len(follows)), d + follows, -1.0)

    def _split_rows(self, ub: _Rows) -> None:
        """Per split after kernel ``b``: ``before[b]`` at least the crossings out of the
        rows up to ``b`` with that side's compute (:func:`_side_seconds`), ``after[b]``
        the crossings in of the rows after it with its compute, and ``z`` their sum."""
        cols, done = self.cols, self.done
        m, n_splits = cols.n_rows, cols.n_splits
        s_out, s_in = np.flatnonzero(done >= 1), np.flatnonzero(done < m)
        # rate * side >= bytes + sync_excess * compute, in units
        out, into = self.rate_out, self.rate_in
        r = ub.block(len(s_out), -out.sync_excess / out.bytes_per_second
                     * self.compute_before[s_out] / self.unit_seconds)
        ub.add(r + np.arange(len(s_out)), cols.out_by + done[s_out] - 1,
               self.unit_nbytes / out.bytes_per_second / self.unit_seconds)
        ub.add(r + np.arange(len(s_out)), cols.before + s_out, -1.0)
        r = ub.block(len(s_in), -into.sync_excess / into.bytes_per_second
                     * self.compute_after[s_in] / self.unit_seconds)
        ub.add(r + np.arange(len(s_in)), cols.in_from + done[s_in],
               self.unit_nbytes / into.bytes_per_second / self.unit_seconds)
        ub.add(r + np.arange(len(s_in)), cols.after + s_in, -1.0)
        r = ub.block(n_splits)
        ub.add(r + np.arange(n_splits), cols.before + np.arange(n_splits), 1.0)
        ub.add(r + np.arange(n_splits), cols.after + np.arange(n_splits), 1.0)
        ub.add(r + np.arange(n_splits), np.full(n_splits, cols.z), -1.0)

    def _rerun_rows(self, ub: _Rows) -> None:
        """The dropped part of a pair is at most the pair's ``x`` and at most its producer's
        rerun; the step is at least the whole compute plus the reruns' least times."""
        p, cols = self.pairs, self.cols
        pairs = np.flatnonzero(self.droppable[p.tensor] & p.ahead)
        if not len(pairs):
            return
        rows = np.arange(len(pairs))
        r = ub.block(len(pairs))
        ub.add(r + rows, cols.xr + pairs, 1.0)
        ub.add(r + rows, cols.x + pairs, -1.0)
        producer = self.liveness.producer[p.tensor[pairs]]
        r = ub.block(len(pairs))
        ub.add(r + rows, cols.xr + pairs, 1.0)
        ub.add(r + rows, cols.rerun + producer, -1.0)
        kernels = np.unique(producer)
        r = ub.block(1, -self.compute_before[-1] / self.unit_seconds)
        ub.add(np.full(len(kernels), r), cols.rerun + kernels,
               self.kernel_seconds[kernels] / self.unit_seconds)
        ub.add(np.array([r]), cols.z, -1.0)

    def _crossing_rows(self, eq: _Rows) -> None:
        """``out_by[j] - out_by[j-1]``: the bytes out first needed at row ``j``;
        ``in_from`` alike from the end."""
        p, cols = self.pairs, self.cols
        c, d, out_by, in_from = cols.c, cols.d, cols.out_by, cols.in_from
        pairs, follows, j = np.arange(cols.n_pairs), p.follows, p.row
        size, out_size = self.sizes()
        rows = np.arange(cols.n_rows)
        r = eq.block(cols.n_rows)
        eq.add(r + rows, out_by + rows, 1.0)
        eq.add(r + rows[1:], out_by + rows[:-1], -1.0)
        eq.add(r + j, c + pairs, -out_size[p.tensor])
        eq.add(r + j[follows + 1], c + follows, out_size[p.tensor[follows]])
        r = eq.block(cols.n_rows)
        eq.add(r + rows, in_from + rows, 1.0)
        eq.add(r + rows[:-1], in_from + rows[1:], -1.0)
        eq.add(r + j, d + pairs, -size[p.tensor])
        eq.add(r + j[follows], d + follows + 1, size[p.tensor[follows + 1]])

    def _bounds(self) -> FloatArray:
        """Per column, its bounds: fractions in 0..1, each side of a split at least its
        compute."""
        cols = self.cols
        bounds = np.zeros((cols.n_cols, 2))
        bounds[:, 1] = np.inf
        bounds[: 3 * cols.n_pairs, 1] = 1.0
        # only a droppable tensor's pairs with a read ahead may be dropped; reruns are 0..1
        bounds[cols.xr: cols.xr + cols.n_pairs, 1] = (self.droppable[self.pairs.tensor]
                                                      & self.pairs.ahead).astype(np.float64)
        bounds[cols.rerun: cols.n_cols, 1] = 1.0
        # after the last read nothing needs to come back
        bounds[cols.d + np.arange(cols.n_pairs)[~self.pairs.ahead], 1] = 0.0
        bounds[cols.before: cols.before + cols.n_splits, 0] = (self.compute_before
                                                               / self.unit_seconds)
        bounds[cols.after: cols.after + cols.n_splits, 0] = self.compute_after / self.unit_seconds
        return bounds

    def _largest_split(self, v: FloatArray) -> int:
        """The kernel after which the largest split of the solution ``v`` falls."""
        cols, done, m = self.cols, self.done, self.cols.n_rows
        out_nbytes = np.concatenate([[0.0], v[cols.out_by: cols.out_by + m] * self.unit_nbytes])
        in_nbytes = np.concatenate([v[cols.in_from: cols.in_from + m] * self.unit_nbytes, [0.0]])
        sides = (_side_seconds(out_nbytes[done], self.compute_before, self.rate_out)
                 + _side_seconds(in_nbytes[done], self.compute_after, self.rate_in))
        return int(self.splits[sides.argmax()])


def _side_seconds(nbytes: FloatArray, compute: FloatArray, rate: CrossingRate) -> FloatArray:
    """The least a stretch of the step lasts that runs kernels of ``compute`` seconds at least
    and moves ``nbytes`` across at ``rate``: blocking copies add to the kernels' time, so
    ``rate * L >= nbytes + rate.sync_excess * compute`` (see the module docstring)."""
    return np.maximum(compute, (nbytes + rate.sync_excess * compute) / rate.bytes_per_second)


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


class _Rows:
    """Rows of a sparse constraint matrix, added a block at a time."""

    def __init__(self) -> None:
        self._rows: list[IntArray] = []
        self._cols: list[IntArray] = []
        self._vals: list[FloatArray] = []
        self._rhs: list[FloatArray] = []
        self._n = 0

    def block(self, n_rows: int, rhs: FloatArray | float = 0.0) -> int:
        """Open ``n_rows`` rows with right-hand side ``rhs``; the first one's position."""
        first = self._n
        self._n += n_rows
        self._rhs.append(np.broadcast_to(np.asarray(rhs, dtype=np.float64), (n_rows,)))
        return first

    def add(self, rows: IntArray, cols: IntArray | int, vals: FloatArray | float) -> None:
        """Add ``vals`` at ``(rows, cols)`` (repeated entries add up)."""
        rows = np.asarray(rows, dtype=np.int64)
        self._rows.append(rows)
        self._cols.append(np.broadcast_to(np.asarray(cols, dtype=np.int64), rows.shape))
        self._vals.append(np.broadcast_to(np.asarray(vals, dtype=np.float64), rows.shape))

    def matrix(self, n_cols: int) -> sparse.csr_matrix:
        """The rows so far as a CSR matrix."""
        return sparse.csr_matrix((np.concatenate(self._vals), (np.concatenate(self._rows),
                                                               np.concatenate(self._cols))),
                                 shape=(self._n, n_cols))

    def rhs(self) -> FloatArray:
        """The right-hand sides so far."""
        return np.concatenate(self._rhs)


def _ranks(span: np.ndarray) -> np.ndarray:
    """``0, 1, ..., span[i] - 1`` for each ``i``, concatenated."""
    total = int(span.sum())
    starts = np.repeat(np.cumsum(span) - span, span)
    return np.arange(total, dtype=np.int64) - starts


__all__ = ["LowerBound", "physical_lower_bound"]
