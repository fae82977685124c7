"""The physical lower bound's LP (:mod:`.lower_bound` states what it bounds and why):
the columns, the rows and their solution by HiGHS's interior-point method.

Bytes are in units of the largest excess and seconds in units of the longer of the
compute and that excess's crossing, so that the solver's tolerances see values near 1.
"""

from __future__ import annotations

import functools
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


class Refetches(NamedTuple):
    """The reads at a kernel ``k`` (not writing the tensor) of a tensor with pairs at
    ``k - 1`` and ``k`` (:meth:`SplitProgram._refetch_rows`): the pair at ``k``, the
    tensor's next read after ``k`` (-1: none) and its size in units."""

    pair: IntArray
    next_read: IntArray
    size: FloatArray


class Arrivals(NamedTuple):
    """The reads :meth:`SplitProgram._arrival_rows` covers, at a kernel ``k`` not writing the
    tensor, which has a pair there: per read, that ``pair`` and the tensor's ``size`` in
    units; per window ``a..k-1`` of such a read (at most :data:`ARRIVAL_KERNELS` kernels), its
    ``read``, its ``window`` (index ``a * width + (k - 1 - a)``) and ``first``, the
    tensor's first pair from kernel ``a - 1`` on after its read before."""

    pair: IntArray
    size: FloatArray
    read: IntArray
    window: IntArray
    first: IntArray


class Columns(NamedTuple):
    """Where each group of the LP's columns begins, for ``n_pairs`` pairs, ``n_rows`` rows,
    ``n_splits`` splits (``b = -1 .. n-1``) and ``n_windows`` windows: ``x`` (outside),
    ``c`` (out so far: nondecreasing, >= x), ``d`` (in from here on: nonincreasing, >= x
    where a read is ahead), ``e`` (in before the next read: ``d`` up to that read only),
    one each per pair; ``out_by[j]`` and ``in_from[j]`` (bytes) per row; ``end[b + 1]``,
    when kernel ``b`` ends (``end[0]``: the step's start, 0); the step's ``z``; ``xr``
    (the part of ``x`` dropped, per pair); ``rerun`` (per kernel: whether it reruns);
    ``window_out`` and ``window_in`` (bytes) per window of kernels; ``evict`` per pair
    whose kernel produces its tensor, with a pair at the next kernel: the part moved out by a
    blocking copy at the boundary after it (:meth:`SplitProgram._born_fast_rows`); ``wait``
    and ``twice`` per read of a tensor outside at the kernel before
    (:meth:`SplitProgram._refetch_rows`); ``source`` and ``late`` per read of a tensor
    with a pair at its kernel, and ``arrive`` per such read and window ending just before it
    (:meth:`SplitProgram._arrival_rows`)."""

    n_pairs: int
    n_rows: int
    n_splits: int
    n_windows: int
    n_births: int
    n_refetches: int
    n_arriving: int
    n_arrivals: int
    x: int
    c: int
    d: int
    e: int
    out_by: int
    in_from: int
    end: int
    z: int
    xr: int
    rerun: int
    window_out: int
    window_in: int
    evict: int
    wait: int
    twice: int
    source: int
    late: int
    arrive: int
    n_cols: int

    @classmethod
    def of(cls, n_pairs: int, n_rows: int, n_splits: int, n_windows: int,
           n_births: int = 0, n_refetches: int = 0, n_arriving: int = 0,
           n_arrivals: int = 0) -> Columns:
        """The layout: the groups in the order above, each after the one before."""
        end = 4 * n_pairs + 2 * n_rows
        z = end + n_splits
        rerun = z + 1 + n_pairs
        window_out = rerun + n_splits - 1
        evict = window_out + 2 * n_windows
        wait = evict + n_births
        source = wait + 2 * n_refetches
        return cls(n_pairs, n_rows, n_splits, n_windows, n_births, n_refetches, n_arriving,
                   n_arrivals, x=0, c=n_pairs, d=2 * n_pairs, e=3 * n_pairs,
                   out_by=4 * n_pairs, in_from=4 * n_pairs + n_rows, end=end, z=z, xr=z + 1,
                   rerun=rerun, window_out=window_out, window_in=window_out + n_windows,
                   evict=evict, wait=wait, twice=wait + n_refetches, source=source,
                   late=source + n_arriving, arrive=source + 2 * n_arriving,
                   n_cols=source + 2 * n_arriving + n_arrivals)


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
    window_kernels: int
    """The most kernels of a window whose own crossings bound how long it lasts (0: none)."""
    touch_bytes_per_second: float = float("inf")
    """The most bytes outside the fastest pool a kernel touches per second of its time
    (:func:`~.bound_rates.touch_rate`; infinite: no such limit)."""

    @property
    def cols(self) -> Columns:
        """Where the LP's columns are."""
        n = self.liveness.n_kernels
        return Columns.of(len(self.pairs.tensor), len(self.pairs.over), n + 1,
                          n * self.window_kernels, len(self.births),
                          len(self.refetches.pair), len(self.arrivals.pair),
                          len(self.arrivals.read))

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

    def solve(self, integral_seconds: float = 0.0) -> tuple[float, int]:
        """The least largest split's seconds and the kernel it falls after, by HiGHS's
        interior-point method; :data:`NO_EXCESS` when the LP has no solution. With
        ``integral_seconds``, then also by branch and bound for up to that long with the
        big tensors' columns integral (:meth:`_integral_bound`), the larger of the two."""
        from scipy.optimize import linprog

        cols = self.cols
        ub, eq = Rows(), Rows()
        self._cover_rows(ub)
        self._next_read_rows(ub)
        self._end_rows(ub)
        self._touch_rows(ub)
        self._born_fast_rows(ub)
        self._refetch_rows(ub)
        self._arrival_rows(ub)
        self._split_rows(ub)
        self._window_rows(ub)
        self._rerun_rows(ub)
        self._crossing_rows(eq)
        cost = np.zeros(cols.n_cols)
        cost[cols.z] = 1.0
        a_ub, a_eq, bounds = ub.matrix(cols.n_cols), eq.matrix(cols.n_cols), self._bounds()
        solved = linprog(cost, A_ub=a_ub, b_ub=ub.rhs(), A_eq=a_eq, b_eq=eq.rhs(),
                         bounds=bounds, method="highs-ipm")
        if solved.status != 0:  # infeasible: some excess no tensor can cover (workspace alone)
            if solved.status != 2 and self.window_kernels:
                logger.warning("the physical bound's LP stopped unsolved (%s): again "
                               "without windows", solved.message)
                return attrs.evolve(self, window_kernels=0).solve(integral_seconds)
            if solved.status != 2:
                logger.warning("the physical bound's LP stopped unsolved (%s): compute alone",
                               solved.message)
            return NO_EXCESS
        least = float(solved.fun)
        if integral_seconds > 0:
            least = max(least, self._integral_bound(cost, (a_ub, ub.rhs()), (a_eq, eq.rhs()),
                                                    bounds, integral_seconds))
        return least * self.unit_seconds, self._largest_split(solved.x)

    def _integral_bound(self, cost: FloatArray, upper: tuple[sparse.csr_matrix, FloatArray],
                        equal: tuple[sparse.csr_matrix, FloatArray], bounds: FloatArray,
                        seconds: float) -> float:
        """The proven bound of branch and bound within ``seconds`` on this program (its rows
        ``upper`` and ``equal``, each a matrix and its right-hand sides) with the columns of
        every big tensor's pairs (:data:`INTEGRAL_FRACTION`) integral (``x``, ``xr``, ``c``,
        ``d``, ``e``), and the reruns, blocking evictions, waits and second crossings: in
        every plan's own point each is 0 or 1 (a tensor holds bytes in the fastest pool
        during a kernel or none), so this is a bound still; -inf when the solver proves
        none."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        cols, p = self.cols, self.pairs
        size, _ = self.sizes()
        big = np.flatnonzero(size[p.tensor] >= INTEGRAL_FRACTION)
        integral = np.zeros(cols.n_cols)
        for first in (cols.x, cols.xr, cols.c, cols.d, cols.e):
            integral[first + big] = 1
        integral[cols.rerun: cols.window_out] = 1
        integral[cols.evict: cols.arrive] = 1
        constraints = [LinearConstraint(upper[0], -np.inf, upper[1]),
                       LinearConstraint(equal[0], equal[1], equal[1])]
        solved = milp(cost, integrality=integral, bounds=Bounds(bounds[:, 0], bounds[:, 1]),
                      constraints=constraints, options={"time_limit": seconds})
        dual = getattr(solved, "mip_dual_bound", None)
        if dual is None or not np.isfinite(dual):
            logger.warning("the physical bound's integral program proved no bound (%s): the "
                           "LP's is kept", solved.message)
            return -np.inf
        return float(dual)

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

    def _next_read_rows(self, ub: Rows) -> None:
        """``e`` at least ``x`` where a read is ahead, and nonincreasing in time up to the
        next read of its tensor (a read ends the stretch ``e`` covers)."""
        p, cols = self.pairs, self.cols
        x, e = cols.x, cols.e
        read = np.flatnonzero(p.ahead)
        r = ub.block(len(read))
        ub.add(r + np.arange(len(read)), x + read, 1.0)
        ub.add(r + np.arange(len(read)), cols.xr + read, -1.0)
        ub.add(r + np.arange(len(read)), e + read, -1.0)
        # per pair, the reads before it in key order: two pairs of a tensor have the same
        # count exactly when no read of it falls between them (the earlier one's included)
        gap = np.searchsorted(self._read_keys[2], self._pair_keys, side="left")
        chained = p.follows[p.ahead[p.follows + 1] & (gap[p.follows] == gap[p.follows + 1])]
        r = ub.block(len(chained))
        ub.add(r + np.arange(len(chained)), e + chained + 1, 1.0)
        ub.add(r + np.arange(len(chained)), e + chained, -1.0)

    def _end_rows(self, ub: Rows) -> None:
        """Kernel ``k`` ends at least its least time after kernel ``k - 1`` (the step lasts
        the last kernel's end and the reruns: :meth:`_rerun_rows`)."""
        cols, n = self.cols, self.liveness.n_kernels
        k = np.arange(n)
        r = ub.block(n, -self.kernel_seconds / self.unit_seconds)
        ub.add(r + k, cols.end + k, 1.0)
        ub.add(r + k, cols.end + k + 1, -1.0)
        births, p = self.births, self.pairs
        rate = self.rate_out.sync_bytes_per_second
        if len(births) and np.isfinite(rate):
            # a blocking copy out at the boundary before kernel k + 1 holds the step
            size, _ = self.sizes()
            ub.add(r + p.over[p.row[births]] + 1, cols.evict + np.arange(len(births)),
                   size[p.tensor[births]] * self.unit_nbytes / rate / self.unit_seconds)
        # a kernel starting after what it reads finishes arriving (a blocking copy or a wait)
        arrivals = self.arrivals
        ub.add(r + p.over[p.row[arrivals.pair]], cols.late + np.arange(len(arrivals.pair)),
               arrivals.size * self.unit_nbytes / self.rate_in.bytes_per_second
               / self.unit_seconds)
        # a kernel starting after a copy of what it reads, issued at the boundary before it
        refetch = self.refetches
        ub.add(r + p.over[p.row[refetch.pair]], cols.wait + np.arange(len(refetch.pair)),
               refetch.size * self.unit_nbytes / self.rate_in.bytes_per_second
               / self.unit_seconds)

    def _touch_rows(self, ub: Rows) -> None:
        """A kernel touches every tensor it reads or writes where it is: one holding no bytes
        in the fastest pool during it, in another pool, at most ``touch_bytes_per_second``
        such bytes per second of the kernel's time (whatever its configuration); so kernel
        ``k`` lasts at least the bytes of its pairs outside over that rate."""
        touch = self.touch_bytes_per_second
        if not np.isfinite(touch) or touch <= 0:
            return
        p, cols, live = self.pairs, self.cols, self.liveness
        n = live.n_kernels
        used = np.unique(live.kernel_tensors.astype(np.int64) * (n + 1) + live.entry_kernels())
        pairs = np.flatnonzero(np.isin(self._pair_keys, used))
        if not len(pairs):
            return
        kernels, row = np.unique(p.over[p.row[pairs]], return_inverse=True)
        size, _ = self.sizes()
        r = ub.block(len(kernels))
        ub.add(r + row, cols.x + pairs,
               size[p.tensor[pairs]] * self.unit_nbytes / touch / self.unit_seconds)
        ub.add(r + np.arange(len(kernels)), cols.end + kernels, 1.0)
        ub.add(r + np.arange(len(kernels)), cols.end + kernels + 1, -1.0)
        # ... and what it reads in the pool an arriving copy comes from
        arrivals = self.arrivals
        ub.add(r + np.searchsorted(kernels, p.over[p.row[arrivals.pair]]),
               cols.source + np.arange(len(arrivals.pair)),
               arrivals.size * self.unit_nbytes / touch / self.unit_seconds)

    def _born_fast_rows(self, ub: Rows) -> None:
        """A tensor its producer writes into the fastest pool (holding bytes there during
        it) cannot be copied out during it (no copy overlaps a kernel writing its tensor), so
        if it holds none there during the next kernel and is not dropped, a blocking copy
        moved it out at the boundary between them (``evict``, whose seconds lengthen the
        next kernel's stretch: :meth:`_end_rows`):
        ``x[t, k + 1] - xr[t, k + 1] - x[t, k] <= evict[t, k]`` for ``k`` its producer."""
        births, cols = self.births, self.cols
        rows = np.arange(len(births))
        r = ub.block(len(rows))
        ub.add(r + rows, cols.x + births + 1, 1.0)
        ub.add(r + rows, cols.xr + births + 1, -1.0)
        ub.add(r + rows, cols.x + births, -1.0)
        ub.add(r + rows, cols.evict + rows, -1.0)

    def _refetch_rows(self, ub: Rows) -> None:
        """A tensor holding no bytes in the fastest pool during kernel ``k - 1`` (nor dropped
        there) that holds some during ``k``, which reads it and does not write it, is being
        copied in from the boundary between them (a copy holds its destination from issue).
        Then either kernel ``k`` starts after that copy (``wait``: a blocking copy, or a
        kernel waiting for the copy it reads), lasting its least time after the copy
        (:meth:`_end_rows`); or kernel ``k`` reads the tensor in another pool while the copy
        moves it (``twice``): its bytes cross in twice from the end of kernel ``k - 1`` to the
        end of its next read (which reads the copy, once complete, or another pool again):
        :meth:`_window_rows`. ``wait + twice >= x[t, k - 1] - xr[t, k - 1] - x[t, k]``."""
        refetch, cols = self.refetches, self.cols
        rows = np.arange(len(refetch.pair))
        r = ub.block(len(rows))
        ub.add(r + rows, cols.x + refetch.pair - 1, 1.0)
        ub.add(r + rows, cols.xr + refetch.pair - 1, -1.0)
        ub.add(r + rows, cols.x + refetch.pair, -1.0)
        ub.add(r + rows, cols.wait + rows, -1.0)
        ub.add(r + rows, cols.twice + rows, -1.0)

    def _arrival_rows(self, ub: Rows) -> None:
        """A tensor read at kernel ``k`` (which does not write it) that holds bytes in the
        fastest pool during ``k`` but held none at a kernel from ``a - 1`` on since its read
        before (``e`` of its first pair there, the moved part) was copied in from the boundary
        after the last such kernel: the copy completed before ``k`` starts, its bytes
        crossing within the window ``a..k-1`` (``arrive``); or ``k`` starts after it
        (``late``: a blocking copy at the boundary or ``k`` waiting, whose seconds lengthen
        ``k``'s stretch: :meth:`_end_rows`); or ``k`` reads the tensor in the pool it comes
        from (``source``: its bytes count among what ``k`` touches outside,
        :meth:`_touch_rows`). A droppable tensor may instead be restored by a rerun, so its
        parts dropped from there to ``k`` are taken off, and its pairs must cover every kernel
        between; and no kernel from there to ``k - 1`` may write it (a new value needs no
        copy). ``arrive >= e[first] - x[t, k] - late - source (- xr between)``, and each
        window ``a..b`` lasts at least its ``window_in`` and the arrivals before reads at
        ``b + 1`` together, with its compute."""
        arrivals, cols = self.arrivals, self.cols
        if not len(arrivals.read):
            return
        terms = np.arange(len(arrivals.read))
        r = ub.block(len(terms))
        ub.add(r + terms, cols.e + arrivals.first, 1.0)
        ub.add(r + terms, cols.x + arrivals.pair[arrivals.read], -1.0)
        ub.add(r + terms, cols.late + arrivals.read, -1.0)
        ub.add(r + terms, cols.source + arrivals.read, -1.0)
        ub.add(r + terms, cols.arrive + terms, -1.0)
        # ... less the parts dropped on the way (a rerun may restore those, no copy)
        dropped = np.flatnonzero(self.droppable[self.pairs.tensor[arrivals.first]])
        span = arrivals.pair[arrivals.read[dropped]] - arrivals.first[dropped]
        ub.add(np.repeat(r + dropped, span),
               cols.xr + np.repeat(arrivals.first[dropped], span) + ranks(span), -1.0)
        width = self.window_kernels
        windows, row = np.unique(arrivals.window, return_inverse=True)
        a, o = np.divmod(windows, width)
        b = a + o
        compute = (self.compute_before[b + 1] - self.compute_before[a]) / self.unit_seconds
        rate = self.rate_in
        r = ub.block(len(windows), -rate.sync_excess / rate.bytes_per_second * compute)
        scale = self.unit_nbytes / rate.bytes_per_second / self.unit_seconds
        ub.add(r + np.arange(len(windows)), cols.window_in + windows, scale)
        ub.add(r + row, cols.arrive + terms, arrivals.size[arrivals.read] * scale)
        ub.add(r + np.arange(len(windows)), cols.end + b + 1, -1.0)
        ub.add(r + np.arange(len(windows)), cols.end + a, 1.0)

    @functools.cached_property
    def arrivals(self) -> Arrivals:
        """The reads and windows :meth:`_arrival_rows` covers."""
        n, p = self.liveness.n_kernels, self.pairs
        width = min(self.window_kernels, ARRIVAL_KERNELS)
        tensor, kernel, _ = self._read_keys
        keys = self._pair_keys
        reads, pair = self._plain_reads
        if not len(reads) or not width:
            empty = np.zeros(0, dtype=np.int64)
            return Arrivals(empty, np.zeros(0), empty, empty, empty)
        t, k = tensor[reads], kernel[reads]
        tt, kk, pk = (np.repeat(v, width) for v in (t, k, pair))
        a = (k[:, None] - np.arange(1, width + 1)).ravel()  # windows a..k-1
        read = np.repeat(np.arange(len(reads)), width)
        lo = np.maximum(a - 1, np.repeat(self._read_before[reads], width) + 1)
        first = np.searchsorted(keys, tt * (n + 1) + lo, side="left")
        good = (a >= 0) & (first < len(keys))
        good[good] &= (p.tensor[first[good]] == tt[good]) & (first[good] < pk[good])
        since = p.over[p.row[np.minimum(first, len(keys) - 1)]]  # the first pair's kernel
        # a droppable tensor's pairs must cover every kernel from there to the read (a
        # kernel without one could be where it was dropped)
        good &= ((pk - first) == (kk - since)) | ~self.droppable[tt]
        # a kernel writing the tensor between could have written it into the fastest pool
        # (a new value needs no copy): no write from the outside kernel's on to k - 1
        good &= (np.searchsorted(self._write_keys, tt * (n + 1) + kk)
                 == np.searchsorted(self._write_keys, tt * (n + 1) + since))
        size, _ = self.sizes()
        return Arrivals(pair, size[t], read[good],
                        (a * self.window_kernels + (kk - 1 - a))[good], first[good])

    @functools.cached_property
    def refetches(self) -> Refetches:
        """The reads :meth:`_refetch_rows` covers."""
        tensor, kernel, key = self._read_keys
        keys = self._pair_keys
        reads, pair = self._plain_reads
        ok = (kernel[reads] >= 1) & (pair >= 1)
        ok[ok] &= keys[pair[ok] - 1] == key[reads[ok]] - 1
        following = np.full(len(key), -1, dtype=np.int64)
        same = np.flatnonzero(tensor[1:] == tensor[:-1])
        following[same] = kernel[same + 1]
        size, _ = self.sizes()
        return Refetches(pair[ok], following[reads[ok]], size[tensor[reads[ok]]])

    def _twice_terms(self) -> tuple[IntArray, IntArray, FloatArray]:
        """The ``twice`` terms of ``window_in``: per refetch at ``k`` with a next read
        ``k'``, the windows ``a..k'`` with ``a <= k``, its column and its size in units."""
        refetch, p, width = self.refetches, self.pairs, self.window_kernels
        has = np.flatnonzero(refetch.next_read >= 0)
        k, b = p.over[p.row[refetch.pair[has]]], refetch.next_read[has]
        o = np.arange(width)
        a = (b[:, None] - o).ravel()
        column = np.repeat(has, width)
        ok = (a >= 0) & (a <= np.repeat(k, width))
        b = np.repeat(b, width)
        return (a * width + (b - a))[ok], column[ok], refetch.size[column[ok]]

    @functools.cached_property
    def births(self) -> IntArray:
        """The pairs at their tensor's producer whose next pair is at the next kernel."""
        p = self.pairs
        kernel = p.over[p.row]
        f = p.follows
        return f[(kernel[f] == self.liveness.producer[p.tensor[f]])
                 & (kernel[f + 1] == kernel[f] + 1)]

    def _split_rows(self, ub: Rows) -> None:
        """Per split after kernel ``b``: the stretch up to ``b``'s end at least the crossings
        out of the rows up to ``b`` with that side's compute (:func:`side_seconds`), the
        stretch after it the crossings in of the rows after it with its compute."""
        cols, done = self.cols, self.done
        m = cols.n_rows
        s_out, s_in = np.flatnonzero(done >= 1), np.flatnonzero(done < m)
        # rate * side >= bytes + sync_excess * compute, in units
        out, into = self.rate_out, self.rate_in
        r = ub.block(len(s_out), -out.sync_excess / out.bytes_per_second
                     * self.compute_before[s_out] / self.unit_seconds)
        ub.add(r + np.arange(len(s_out)), cols.out_by + done[s_out] - 1,
               self.unit_nbytes / out.bytes_per_second / self.unit_seconds)
        ub.add(r + np.arange(len(s_out)), cols.end + s_out, -1.0)
        r = ub.block(len(s_in), -into.sync_excess / into.bytes_per_second
                     * self.compute_after[s_in] / self.unit_seconds)
        ub.add(r + np.arange(len(s_in)), cols.in_from + done[s_in],
               self.unit_nbytes / into.bytes_per_second / self.unit_seconds)
        step = np.full(len(s_in), cols.end + self.liveness.n_kernels)
        ub.add(r + np.arange(len(s_in)), step, -1.0)
        ub.add(r + np.arange(len(s_in)), cols.end + s_in, 1.0)

    def _window_rows(self, ub: Rows) -> None:
        """Per window of kernels ``a..b`` (at most :attr:`window_kernels`): it lasts at least
        the crossings out of the tensors produced in it that are outside by ``b``, and the
        crossings in before reads in it of tensors outside from ``a - 1`` on, each with
        its compute."""
        cols, n, width = self.cols, self.liveness.n_kernels, self.window_kernels
        if not width:
            return
        a, o = np.divmod(np.arange(n * width), width)
        b = a + o
        real = b < n
        w, a, b = np.flatnonzero(real), a[real], b[real]
        compute = (self.compute_before[b + 1] - self.compute_before[a]) / self.unit_seconds
        for first, rate in ((cols.window_out, self.rate_out), (cols.window_in, self.rate_in)):
            r = ub.block(len(w), -rate.sync_excess / rate.bytes_per_second * compute)
            ub.add(r + np.arange(len(w)), first + w,
                   self.unit_nbytes / rate.bytes_per_second / self.unit_seconds)
            ub.add(r + np.arange(len(w)), cols.end + b + 1, -1.0)
            ub.add(r + np.arange(len(w)), cols.end + a, 1.0)
        # window_out[a..b] >= window_out[a+1..b] + the tensors produced at a, outside by b
        r = ub.block(len(w))
        ub.add(r + np.arange(len(w)), cols.window_out + w, -1.0)
        longer = np.flatnonzero(b > a)
        ub.add(r + longer, cols.window_out + w[longer] + width - 1, 1.0)
        window, pair, nbytes = self._produced_terms()
        ub.add(r + np.searchsorted(w, window), cols.c + pair, nbytes)
        # window_in[a..b] >= window_in[a..b-1] + the reads at b after being outside
        r = ub.block(len(w))
        ub.add(r + np.arange(len(w)), cols.window_in + w, -1.0)
        ub.add(r + longer, cols.window_in + w[longer] - 1, 1.0)
        window, pair, nbytes = self._read_terms()
        ub.add(r + np.searchsorted(w, window), cols.e + pair, nbytes)
        # ... and the second crossing of a tensor read while copied in at a kernel from a on
        window, column, nbytes = self._twice_terms()
        ub.add(r + np.searchsorted(w, window), cols.twice + column, nbytes)

    @functools.cached_property
    def _pair_keys(self) -> IntArray:
        """Per pair, ``tensor * (n + 1) + kernel``: ascending (pairs by tensor, then time)."""
        n = self.liveness.n_kernels
        return self.pairs.tensor * (n + 1) + self.pairs.over[self.pairs.row]

    @functools.cached_property
    def _read_keys(self) -> tuple[IntArray, IntArray, IntArray]:
        """Every read of a tensor the pairs hold: its tensor and kernel, by tensor then
        kernel, and its key as :attr:`_pair_keys`'."""
        live, n = self.liveness, self.liveness.n_kernels
        reads = np.asarray(live.kernel_reads, dtype=bool)
        tensor = live.kernel_tensors[reads].astype(np.int64)
        kernel = live.entry_kernels()[reads]
        keep = np.isin(tensor, self.pairs.tensor)
        key = np.sort(tensor[keep] * (n + 1) + kernel[keep])
        return key // (n + 1), key % (n + 1), key

    @functools.cached_property
    def _read_before(self) -> IntArray:
        """Per read of :attr:`_read_keys`, the kernel of the tensor's read before (-1:
        none)."""
        tensor, kernel, _ = self._read_keys
        before = np.full(len(tensor), -1, dtype=np.int64)
        same = np.flatnonzero(tensor[1:] == tensor[:-1]) + 1
        before[same] = kernel[same - 1]
        return before

    @functools.cached_property
    def _write_keys(self) -> IntArray:
        """Every write of a tensor, keyed as :attr:`_pair_keys`, ascending."""
        live, n = self.liveness, self.liveness.n_kernels
        writes = np.asarray(live.kernel_writes, dtype=bool)
        return np.sort(live.kernel_tensors[writes].astype(np.int64) * (n + 1)
                       + live.entry_kernels()[writes])

    @functools.cached_property
    def _plain_reads(self) -> tuple[IntArray, IntArray]:
        """The reads of :attr:`_read_keys` at a kernel with a pair of the tensor that does
        not write it: their positions there, and each one's pair."""
        _, _, key = self._read_keys
        keys = self._pair_keys
        if not len(keys) or not len(key):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
        plain = np.flatnonzero((keys[at] == key) & ~np.isin(key, self._write_keys))
        return plain, at[plain]

    def _produced_terms(self) -> tuple[IntArray, IntArray, FloatArray]:
        """``window_out``'s terms: per window ``a..b`` and tensor produced at ``a`` with a
        pair by ``b``, its last such pair and its size in units."""
        n, width, keys = self.liveness.n_kernels, self.window_kernels, self._pair_keys
        _, out_size = self.sizes()
        tensor = np.unique(self.pairs.tensor)
        tensor = tensor[self.liveness.producer[tensor] >= 0]
        produced = self.liveness.producer[tensor]
        o = np.arange(width)
        t, b = np.repeat(tensor, width), (produced[:, None] + o).ravel()
        a = np.repeat(produced, width)
        last = np.searchsorted(keys, t * (n + 1) + b, side="right") - 1
        ok = (b < n) & (last >= 0)
        ok[ok] &= self.pairs.tensor[last[ok]] == t[ok]
        return a[ok] * width + (b - a)[ok], last[ok], out_size[t[ok]]

    def _read_terms(self) -> tuple[IntArray, IntArray, FloatArray]:
        """``window_in``'s terms: per window ``a..b`` and read of a tensor at ``b``, the
        first pair of the tensor from kernel ``a - 1`` on after its read before, if it is
        no later than ``b``, and the tensor's size in units."""
        n, width, keys = self.liveness.n_kernels, self.window_kernels, self._pair_keys
        size, _ = self.sizes()
        tensor, kernel, _ = self._read_keys
        before = self._read_before
        o = np.arange(width)
        t, b = np.repeat(tensor, width), np.repeat(kernel, width)
        a = (kernel[:, None] - o).ravel()
        lo = np.maximum(a - 1, np.repeat(before, width) + 1)
        first = np.searchsorted(keys, t * (n + 1) + lo, side="left")
        ok = (a >= 0) & (first < len(keys))
        ok[ok] &= ((self.pairs.tensor[first[ok]] == t[ok])
                   & (keys[first[ok]] <= t[ok] * (n + 1) + b[ok]))
        return a[ok] * width + (b - a)[ok], first[ok], size[t[ok]]

    def _rerun_rows(self, ub: Rows) -> None:
        """The dropped part of a pair is at most the pair's ``x``, at most its producer's
        rerun and at most the reruns its producer's inputs need (:meth:`_dead_input_rows`);
        the step is at least the last kernel's end plus the reruns' least times."""
        p, cols = self.pairs, self.cols
        pairs = np.flatnonzero(self.droppable[p.tensor] & p.ahead)
        rows = np.arange(len(pairs))
        r = ub.block(len(pairs))
        ub.add(r + rows, cols.xr + pairs, 1.0)
        ub.add(r + rows, cols.x + pairs, -1.0)
        producer = self.liveness.producer[p.tensor[pairs]]
        r = ub.block(len(pairs))
        ub.add(r + rows, cols.xr + pairs, 1.0)
        ub.add(r + rows, cols.rerun + producer, -1.0)
        self._dead_input_rows(ub, pairs)
        kernels = np.arange(self.liveness.n_kernels)
        r = ub.block(1)
        ub.add(np.full(len(kernels), r), cols.rerun + kernels,
               self.kernel_seconds[kernels] / self.unit_seconds)
        ub.add(np.array([r, r]), np.array([cols.end + self.liveness.n_kernels, cols.z]),
               np.array([1.0, -1.0]))

    def _dead_input_rows(self, ub: Rows, pairs: IntArray) -> None:
        """A rerun reads each input in the fastest pool at its boundary, which an input no
        longer live there can only be as the output of an earlier rerun at the same
        boundary: a tensor dropped at kernel ``k`` is restored after ``k``, so every input
        of its producer last live before ``k`` is rewritten then by a rerun of a kernel
        writing it (of none: the tensor cannot be dropped there), and so on back through
        inputs with one writer (:data:`RERUN_CHAIN_DEPTH` kernels at most)."""
        p, cols, live = self.pairs, self.cols, self.liveness
        kernel = p.over[p.row]
        entry = live.entry_kernels()
        reads = np.asarray(live.kernel_reads, dtype=bool)
        writes = np.asarray(live.kernel_writes, dtype=bool)
        order = np.argsort(live.kernel_tensors[writes], kind="stable")
        writer_tensor = live.kernel_tensors[writes][order]
        writer_kernel = entry[writes][order]
        needs: dict[int, list[tuple[IntArray, int]]] = {}  # by producer: outputs share them
        for t in np.unique(p.tensor[pairs]).tolist():
            producer = int(live.producer[t])
            if producer not in needs:
                needs[producer] = _chain_needs(producer, live, reads, writer_tensor,
                                               writer_kernel)
            mine = pairs[p.tensor[pairs] == t]
            for writers, after in needs[producer]:
                needing = mine[kernel[mine] > after]
                if not len(needing):
                    continue
                # xr[pair] <= the sum of the writers' reruns (0 with none)
                r = ub.block(len(needing)) + np.arange(len(needing))
                ub.add(r, cols.xr + needing, 1.0)
                ub.add(np.repeat(r, len(writers)), np.tile(cols.rerun + writers, len(needing)),
                       -1.0)

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
        bounds[: 4 * cols.n_pairs, 1] = 1.0
        # only a droppable tensor's pairs with a read ahead may be dropped, and not at a
        # kernel that reads or writes it (it is then in some pool); reruns are 0..1
        bounds[cols.xr: cols.xr + cols.n_pairs, 1] = (
            self.droppable[self.pairs.tensor] & self.pairs.ahead & ~self._used_there()
        ).astype(np.float64)
        bounds[cols.rerun: cols.window_out, 1] = 1.0
        bounds[cols.evict:, 1] = 1.0
        # a second crossing is bounded only before a next read
        bounds[cols.twice + np.flatnonzero(self.refetches.next_read < 0), 1] = 0.0
        # after the last read nothing needs to come back
        bounds[cols.d + np.arange(cols.n_pairs)[~self.pairs.ahead], 1] = 0.0
        bounds[cols.e + np.arange(cols.n_pairs)[~self.pairs.ahead], 1] = 0.0
        bounds[cols.end, 1] = 0.0  # the step starts at 0
        n, width = self.liveness.n_kernels, self.window_kernels
        if width:
            _, o = np.divmod(np.arange(n * width), width)
            unreal = np.flatnonzero(np.arange(n * width) // width + o >= n)
            bounds[cols.window_out + unreal, 1] = 0.0
            bounds[cols.window_in + unreal, 1] = 0.0
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


INTEGRAL_FRACTION = 0.05
"""The tensors whose columns the integral program of :meth:`SplitProgram._integral_bound`
keeps integral: those of at least this fraction of the largest excess (the unit of bytes).
On VGG-19 b128 at 4:1 on gpu-h200 (recomputing) HiGHS solves the program at 0.05 to
optimality in 90-270 s by load (518.6 ms). Measured before the arrival rows
(:meth:`SplitProgram._arrival_rows`): at 0.05, 2,596 integral columns, optimal in 181 s
(509.4 ms); at 0.01, without ``c``, ``d`` and ``e`` integral, a proven bound after 300 s
lower than that (500.3 ms); at 0.05 with only ``x``, ``xr`` and the reruns integral,
502.4 ms in 73 s."""

ARRIVAL_KERNELS = 16
"""How many windows before a read :meth:`SplitProgram._arrival_rows` gives the crossing of a
tensor arriving for it (the windows ``k - 16 .. k - 1`` to ``k - 1 .. k - 1``); fewer rows
only weaken the bound."""

RERUN_CHAIN_DEPTH = 16
"""How many kernels back :meth:`SplitProgram._dead_input_rows` follows a chain of reruns;
fewer rows only weaken the bound."""


def _chain_needs(producer: int, live: Liveness, reads: BoolArray, writer_tensor: IntArray,
                 writer_kernel: IntArray) -> list[tuple[IntArray, int]]:
    """What restoring an output of ``producer`` needs at a boundary after kernel ``k``: per
    input found dead there, the kernels writing it (one of which reruns then) and the
    kernel ``k`` must be after for it (the input, and each one on the way to it through
    inputs with one writer, last live before ``k``)."""
    needs: list[tuple[IntArray, int]] = []
    after = {producer: -1}
    frontier = [producer]
    for _ in range(RERUN_CHAIN_DEPTH):
        if not frontier:
            break
        nxt: list[int] = []
        for w in frontier:
            span = live.kernel_tensor_slice(w)
            for u in live.kernel_tensors[span][reads[span]].tolist():
                last = max(after[w], int(live.last[u]))
                if last >= live.n_kernels - 1:
                    continue
                lo, hi = np.searchsorted(writer_tensor, [u, u + 1])
                writers = writer_kernel[lo:hi]
                needs.append((writers, last))
                if len(writers) == 1:
                    v = int(writers[0])
                    if v not in after or after[v] > last:
                        after[v] = last
                        nxt.append(v)
        frontier = nxt
    return needs


def ranks(span: IntArray) -> IntArray:
    """``0, 1, ..., span[i] - 1`` for each ``i``, concatenated."""
    total = int(span.sum())
    starts = np.repeat(np.cumsum(span) - span, span)
    return np.arange(total, dtype=np.int64) - starts


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


__all__ = ["NO_EXCESS", "Columns", "Pairs", "Rows", "SplitProgram", "ranks", "side_seconds"]
