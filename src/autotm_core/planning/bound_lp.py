"""The physical lower bound's LP (:mod:`.lower_bound` states what it bounds and why):
the columns, the rows and their solution by HiGHS's interior-point method.

Bytes are in units of the largest excess and seconds in units of the longer of the
compute and that excess's crossing, so that the solver's tolerances see values near 1.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import attrs
import numpy as np
from scipy import sparse

from autotm_core.arrays import BoolArray, FloatArray, IntArray
from autotm_core.ir.liveness import Liveness
from autotm_core.planning.bound_rates import CrossingRate

logger = logging.getLogger(__name__)


NO_EXCESS = (0.0, -1)
"""The split's seconds and kernel when no kernel's live bytes exceed the capacity."""


@attrs.frozen(kw_only=True)
class Pairs:
    """The LP's (tensor, row kernel) pairs: one ``x`` column each, by tensor, then time."""

    over: IntArray
    """The kernels whose excess the LP covers, ascending."""
    tensor: IntArray
    """Each pair's tensor."""
    row: IntArray
    """Each pair's row: its kernel is ``over[row]``."""
    ahead: BoolArray
    """Whether a read of the tensor is ahead at the pair's kernel (it must cross back in)."""
    follows: IntArray
    """The pairs ``p`` whose next pair ``p + 1`` is of the same tensor."""


class Columns(NamedTuple):
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
    def of(cls, n_pairs: int, n_rows: int, n_splits: int) -> Columns:
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
class SplitProgram:
    """The LP of :mod:`.lower_bound`'s docstring over given pairs, in the units of this
    module's docstring (bytes in ``unit_nbytes``, seconds in ``unit_seconds``)."""

    liveness: Liveness
    need: FloatArray
    """Per kernel, the bytes the big tensors must cover (above 0: over capacity)."""
    pairs: Pairs
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
    def cols(self) -> Columns:
        """Where the LP's columns are."""
        return Columns.of(len(self.pairs.tensor), len(self.pairs.over),
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
        interior-point method; :data:`NO_EXCESS` when the LP has no solution."""
        from scipy.optimize import linprog

        cols = self.cols
        ub, eq = Rows(), Rows()
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
            return NO_EXCESS
        return float(solved.fun) * self.unit_seconds, self._largest_split(solved.x)

    def _cover_rows(self, ub: Rows) -> None:
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

    def _split_rows(self, ub: Rows) -> None:
        """Per split after kernel ``b``: ``before[b]`` at least the crossings out of the
        rows up to ``b`` with that side's compute (:func:`side_seconds`), ``after[b]``
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

    def _rerun_rows(self, ub: Rows) -> None:
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

    def _crossing_rows(self, eq: Rows) -> None:
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
        # only a droppable tensor's pairs with a read ahead may be dropped, and not at a
        # kernel that reads or writes it (it is then in some pool); reruns are 0..1
        bounds[cols.xr: cols.xr + cols.n_pairs, 1] = (
            self.droppable[self.pairs.tensor] & self.pairs.ahead & ~self._used_there()
        ).astype(np.float64)
        bounds[cols.rerun: cols.n_cols, 1] = 1.0
        # after the last read nothing needs to come back
        bounds[cols.d + np.arange(cols.n_pairs)[~self.pairs.ahead], 1] = 0.0
        bounds[cols.before: cols.before + cols.n_splits, 0] = (self.compute_before
                                                               / self.unit_seconds)
        bounds[cols.after: cols.after + cols.n_splits, 0] = self.compute_after / self.unit_seconds
        return bounds

    def _used_there(self) -> BoolArray:
        """Per pair: whether its kernel reads or writes its tensor."""
        live, p = self.liveness, self.pairs
        n = np.int64(max(live.n_kernels, 1))
        used = np.asarray(live.kernel_tensors, dtype=np.int64) * n + live.entry_kernels()
        return np.isin(p.tensor.astype(np.int64) * n + p.over[p.row].astype(np.int64), used)

    def _largest_split(self, v: FloatArray) -> int:
        """The kernel after which the largest split of the solution ``v`` falls."""
        cols, done, m = self.cols, self.done, self.cols.n_rows
        out_nbytes = np.concatenate([[0.0], v[cols.out_by: cols.out_by + m] * self.unit_nbytes])
        in_nbytes = np.concatenate([v[cols.in_from: cols.in_from + m] * self.unit_nbytes, [0.0]])
        sides = (side_seconds(out_nbytes[done], self.compute_before, self.rate_out)
                 + side_seconds(in_nbytes[done], self.compute_after, self.rate_in))
        return int(self.splits[sides.argmax()])


def side_seconds(nbytes: FloatArray, compute: FloatArray, rate: CrossingRate) -> FloatArray:
    """The least a stretch of the step lasts that runs kernels of ``compute`` seconds at least
    and moves ``nbytes`` across at ``rate``: blocking copies add to the kernels' time, so
    ``rate * L >= nbytes + rate.sync_excess * compute`` (see :mod:`.lower_bound`)."""
    return np.maximum(compute, (nbytes + rate.sync_excess * compute) / rate.bytes_per_second)


class Rows:
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


__all__ = ["NO_EXCESS", "Columns", "Pairs", "Rows", "SplitProgram", "side_seconds"]
