"""A physical lower bound on the step time: seconds no plan of a problem can beat.

Two facts hold for every plan, whatever the formulation that made it:

- **Compute.** A kernel never runs faster than with every tensor in the fastest pool,
  so the step takes at least the all-fast time (:attr:`Problem.all_fast_seconds`).
- **Traffic.** At a kernel whose live bytes exceed the fastest pool's capacity, the
  tensors making up the excess live outside it. Such a tensor crossed *out* of the
  fastest pool (written there by its producer, or evicted) unless it existed before
  the step, and it crosses back *in* (read from there, or fetched) when a kernel reads
  it later. The least bytes that must cross each way is a covering problem: choose
  tensors (each at most once per stretch of its life) whose bytes cover every kernel's
  excess. Its LP relaxation is a lower bound on the bytes of any plan; the step takes
  at least those bytes over the fastest rate that can move them.

The rates are upper bounds on the system's: per pool, the faster of a blocking copy
and an overlapping copy plus the kernels' own accesses (these run side by side unless
the link carries the kernels' traffic; see
:attr:`~autotm_core.memory.CopyLink.kernel_traffic`), summed over the pools. The two
directions count separately (as if each had its own channel); the step is no
shorter than either, nor than compute. Copies overlap compute at best, so the
bound is the largest of the three, not their sum.

It ignores page rounding, pinned tensors and the kernels' own slowdown from slow
operands, each of which only raises the true optimum: it is valid, not tight.
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.ir.liveness import Liveness
from autotm_core.memory import MemorySystem
from autotm_core.planning.problem import Problem

_GB = 1e9
"""Bytes are scaled to gigabytes in the covering LP (coefficients near 1)."""


@attrs.frozen(kw_only=True)
class LowerBound:
    """A physical lower bound on a problem's step time, and its parts."""

    compute_seconds: float
    """The all-fast step time (0 when the costs cannot price it)."""
    bytes_in: float
    """Least bytes that must cross into the fastest pool (LP relaxation)."""
    bytes_out: float
    """Least bytes that must cross out of it (same LP solution)."""
    rate_in: float
    """Fastest rate bytes can cross in, bytes per second (0: no other pool)."""
    rate_out: float
    """Fastest rate bytes can cross out, bytes per second."""
    traffic_seconds: float
    """The least time the crossings take, the slower direction's."""

    @property
    def seconds(self) -> float:
        """The bound: no plan's step is shorter."""
        return max(self.compute_seconds, self.traffic_seconds)


def physical_lower_bound(problem: Problem) -> LowerBound:
    """The physical lower bound of ``problem`` under its limit (see the module docstring)."""
    system = problem.limited_system
    compute = problem.all_fast_seconds or 0.0
    rate_in, rate_out = crossing_rates(system)
    capacity = system.fast.capacity_nbytes
    liveness = problem.graph.liveness
    if capacity is None or rate_in <= 0 or rate_out <= 0:
        return LowerBound(compute_seconds=compute, bytes_in=0.0, bytes_out=0.0,
                          rate_in=rate_in, rate_out=rate_out, traffic_seconds=0.0)
    bytes_in, bytes_out, seconds = _least_crossings(liveness, capacity, rate_in, rate_out)
    return LowerBound(compute_seconds=compute, bytes_in=bytes_in, bytes_out=bytes_out,
                      rate_in=rate_in, rate_out=rate_out, traffic_seconds=seconds)


def crossing_rates(system: MemorySystem) -> tuple[float, float]:
    """Upper bounds on the bytes per second that can cross into and out of the fastest
    pool at any moment, over every other pool (see the module docstring)."""
    rate_in = rate_out = 0.0
    for q, pool in enumerate(system.pools[1:], start=1):
        into, out = system.link(q, 0), system.link(0, q)
        # overlapping copies run beside the kernels' own accesses, unless those share the link
        rate_in += max(into.sync_bytes_per_second, into.async_bytes_per_second
                       + (0.0 if into.kernel_traffic else pool.read_bytes_per_second))
        rate_out += max(out.sync_bytes_per_second, out.async_bytes_per_second
                        + (0.0 if out.kernel_traffic else pool.write_bytes_per_second))
    return rate_in, rate_out


def _least_crossings(liveness: Liveness, capacity: int, rate_in: float,
                     rate_out: float) -> tuple[float, float, float]:
    """Bytes in and out of the LP relaxation's covering (see the module docstring) that
    minimises the slower direction's time, and that time."""
    from scipy import sparse
    from scipy.optimize import linprog

    excess = (liveness.live_nbytes - capacity).astype(np.float64)
    over = np.flatnonzero(excess > 0)
    if not len(over):
        return 0.0, 0.0, 0.0
    n_tensors = len(liveness.nbytes)
    # each tensor's last read: it crosses in when it is outside the fast pool before it
    entry_kernel = liveness.entry_kernels()
    reads = np.asarray(liveness.kernel_reads, dtype=bool)
    last_read = np.full(n_tensors, -1, dtype=np.int64)
    np.maximum.at(last_read, liveness.kernel_tensors[reads], entry_kernel[reads])
    first, last = liveness.first.astype(np.int64), liveness.last.astype(np.int64)
    produced = liveness.producer >= 0
    size = liveness.nbytes.astype(np.float64) / _GB
    # Columns: x_read[t] (outside while a read is ahead: in and, if produced, out),
    # x_tail[t] (outside after its last read: out if produced), y[t] (outside at all:
    # out once), z (the slower direction's seconds).
    read_lo, read_hi = first, np.minimum(last, last_read)
    tail_lo, tail_hi = np.maximum(first, last_read + 1), last
    row_of = np.full(liveness.n_kernels, -1, dtype=np.int64)
    row_of[over] = np.arange(len(over))
    rows, cols, vals = [], [], []
    for block, (lo, hi) in enumerate(((read_lo, read_hi), (tail_lo, tail_hi))):
        span = np.maximum(hi - lo + 1, 0)
        tensor = np.repeat(np.arange(n_tensors), span)
        kernel = np.repeat(lo, span) + _ranks(span)
        keep = row_of[kernel] >= 0
        rows.append(row_of[kernel[keep]])
        cols.append(block * n_tensors + tensor[keep])
        vals.append(size[tensor[keep]])
    n_cols = 3 * n_tensors + 1
    cover = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                      np.concatenate(cols))),
                              shape=(len(over), n_cols))
    t = np.arange(n_tensors)
    # y >= x_read and y >= x_tail (rows: x - y <= 0)
    link = sparse.csr_matrix((np.concatenate([np.ones(2 * n_tensors), -np.ones(2 * n_tensors)]),
                              (np.concatenate([t, n_tensors + t, t, n_tensors + t]),
                               np.concatenate([t, n_tensors + t, 2 * n_tensors + t,
                                               2 * n_tensors + t]))),
                             shape=(2 * n_tensors, n_cols))
    # each direction's seconds <= z
    seconds_in = np.zeros(n_cols)
    seconds_in[:n_tensors] = size * _GB / rate_in
    seconds_out = np.zeros(n_cols)
    seconds_out[2 * n_tensors:3 * n_tensors] = np.where(produced, size, 0.0) * _GB / rate_out
    seconds_in[-1] = seconds_out[-1] = -1.0
    a_ub = sparse.vstack([-cover, link, sparse.csr_matrix(seconds_in),
                          sparse.csr_matrix(seconds_out)], format="csr")
    b_ub = np.concatenate([-excess[over] / _GB, np.zeros(2 * n_tensors + 2)])
    cost = np.zeros(n_cols)
    cost[-1] = 1.0
    bounds = [(0.0, 1.0)] * (3 * n_tensors) + [(0.0, None)]
    solved = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if solved.status != 0:  # infeasible: some excess no tensor can cover (workspace alone)
        return 0.0, 0.0, 0.0
    x = solved.x
    bytes_in = float(size @ x[:n_tensors]) * _GB
    bytes_out = float(np.where(produced, size, 0.0) @ x[2 * n_tensors:3 * n_tensors]) * _GB
    return bytes_in, bytes_out, float(solved.fun)


def _ranks(span: np.ndarray) -> np.ndarray:
    """``0, 1, ..., span[i] - 1`` for each ``i``, concatenated."""
    total = int(span.sum())
    starts = np.repeat(np.cumsum(span) - span, span)
    return np.arange(total, dtype=np.int64) - starts


__all__ = ["LowerBound", "crossing_rates", "physical_lower_bound"]
