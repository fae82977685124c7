"""What the physical lower bound reads from the costs and the links: each kernel's least
time, and the fastest rates bytes cross into and out of the fastest pool.

Both hold for every cost form :mod:`autotm_core.costs` can express (a roofline, any
:class:`~autotm_core.costs.model.SeparableCosts`, a measured table with arbitrary times),
because they are read from the costs themselves, never from the pools' bandwidths:

- :func:`least_seconds`: per kernel, the least time over the configurations its costs
  allow in which the tensors it touches in the fastest pool fit that pool's capacity
  (exact for small kernels, a relaxation above :data:`EXACT_CONFIGS`);
- :func:`crossing_rates`: per direction, the fastest a blocking copy moves bytes, and the
  fastest bytes cross while kernels run (overlapping copies, at most each channel's rate,
  plus the kernels' own accesses of other pools, at most the fastest the costs let a
  kernel touch bytes there per second of its time).
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.arrays import BoolArray, FloatArray, IntArray
from autotm_core.costs.model import KernelCosts, SeparableCosts, least_kernel_seconds
from autotm_core.ir.liveness import Liveness
from autotm_core.memory import MemorySystem

EXACT_CONFIGS = 256
"""Most configurations per kernel :func:`least_seconds` enumerates for a separable form;
beyond, each term at its cheapest pool per tensor (a relaxation: never above the least)."""


@attrs.frozen(kw_only=True)
class CrossingRate:
    """How fast bytes can cross between the fastest pool and the others, one direction."""

    sync_bytes_per_second: float
    """The fastest blocking copy (blocking copies run one at a time, nothing beside them)."""
    overlap_bytes_per_second: float
    """The most bytes per second crossing while kernels run: overlapping copies (each
    channel at its fastest link's rate, summed over channels) plus the kernels' own
    accesses of pools whose link does not carry them (:attr:`access_bytes_per_second`);
    infinite when the costs let a kernel touch bytes there in no time."""
    access_bytes_per_second: float
    """Of those, the kernels' own accesses: the most bytes of other pools a kernel reads
    (or writes) per second of its time, over every configuration its costs allow."""

    @property
    def bytes_per_second(self) -> float:
        """The fastest bytes cross at any moment of the step."""
        return max(self.sync_bytes_per_second, self.overlap_bytes_per_second)

    @property
    def sync_excess(self) -> float:
        """How much faster a blocking copy is than everything overlapping kernels (0 if not):
        a stretch lasting ``L`` with ``C`` of kernels moves at most ``bytes_per_second * L
        - sync_excess * C`` bytes."""
        return max(self.sync_bytes_per_second - self.overlap_bytes_per_second, 0.0)


def least_seconds(costs: KernelCosts, liveness: Liveness,
                  capacity_nbytes: int | None = None) -> FloatArray:
    """``(n_kernels,)`` seconds no configuration of each kernel its costs allow beats.

    A tensor lives whole in one pool, and every tensor a kernel touches is live during it;
    so with ``capacity_nbytes`` (the fastest pool's limit) only the configurations whose
    tensors in the fastest pool fit it count, and a tensor larger than that pool is always
    elsewhere. Exact for a table and for a separable kernel of at most
    :data:`EXACT_CONFIGS` configurations; otherwise each term at its cheapest pool per
    tensor (:func:`~autotm_core.costs.model.least_kernel_seconds`), the fastest pool only
    for a tensor that fits it: a relaxation, never above the least. Where no configuration
    fits (no plan does then), the least over all of them."""
    nbytes = liveness.nbytes[liveness.kernel_tensors].astype(np.float64)
    separable = costs.separable()
    if separable is None and capacity_nbytes is not None:
        return np.array([_least_of_table(costs, k, nbytes[liveness.kernel_tensor_slice(k)],
                                         capacity_nbytes) for k in range(liveness.n_kernels)],
                        dtype=np.float64)
    too_big = None if capacity_nbytes is None else nbytes > capacity_nbytes
    least = least_kernel_seconds(costs, liveness.n_kernels, elsewhere=too_big)
    if separable is None:
        return least
    widths = np.diff(separable.kernel_ptr)
    for width in np.unique(widths).tolist():
        n_configs = separable.n_pools ** width
        if not width or n_configs > EXACT_CONFIGS:
            continue
        kernels = np.flatnonzero(widths == width)
        least[kernels] = _enumerated_least(separable, kernels, width, nbytes,
                                           capacity_nbytes)
    return least


def _least_of_table(costs: KernelCosts, kernel: int, nbytes: FloatArray,
                    capacity_nbytes: int) -> float:
    """The least seconds of a tabled ``kernel`` over its configurations whose tensors in the
    fastest pool (of ``nbytes`` each) fit ``capacity_nbytes``; over all of them if none
    does (0 without any, as :func:`~autotm_core.costs.model.least_kernel_seconds`)."""
    table = costs.table(kernel)
    if not len(table.seconds):
        return 0.0
    fits = (table.configs == 0) @ nbytes <= capacity_nbytes
    return float(table.seconds[fits].min() if fits.any() else table.seconds.min())


def _enumerated_least(costs: SeparableCosts, kernels: IntArray, width: int,
                      nbytes: FloatArray, capacity_nbytes: int | None) -> FloatArray:
    """The least time of each of ``kernels`` (each touching ``width`` tensors, of ``nbytes``
    per entry) over every configuration whose tensors in the fastest pool fit
    ``capacity_nbytes`` (every one if none does, or without a capacity), in slices that keep
    the arrays small."""
    n_pools = costs.n_pools
    configs = np.indices((n_pools,) * width).reshape(width, -1).T  # (n_configs, width)
    in_fastest = (configs == 0).astype(np.float64)
    out = np.empty(len(kernels))
    per_slice = max(1, (1 << 20) // (len(configs) * width * costs.constants.shape[1]))
    for lo in range(0, len(kernels), per_slice):
        chunk = kernels[lo: lo + per_slice]
        rows = costs.kernel_ptr[chunk][:, None] + np.arange(width)  # (chunk, width)
        # (chunk, n_configs, width, n_terms): each entry's coefficients in its pool
        picked = costs.coefficients[rows[:, None, :], :, configs[None, :, :]]
        seconds = (costs.constants[chunk][:, None, :] + picked.sum(axis=2)).max(axis=2)
        if capacity_nbytes is not None:
            fits = nbytes[rows] @ in_fastest.T <= capacity_nbytes  # (chunk, n_configs)
            fits[~fits.any(axis=1)] = True
            seconds = np.where(fits, seconds, np.inf)
        out[lo: lo + per_slice] = seconds.min(axis=1)
    return out


def crossing_rates(system: MemorySystem, costs: KernelCosts,
                   liveness: Liveness) -> tuple[CrossingRate, CrossingRate]:
    """The rates into and out of the fastest pool (see :class:`CrossingRate`)."""
    n_pools = len(system.pools)
    channels = system.link_channels
    rates = []
    for inward in (True, False):
        links = [system.link(q, 0) if inward else system.link(0, q) for q in range(1, n_pools)]
        per_channel: dict[int, float] = {}
        for q, link in enumerate(links, start=1):
            channel = int(channels[q, 0] if inward else channels[0, q])
            per_channel[channel] = max(per_channel.get(channel, 0.0),
                                       link.async_bytes_per_second)
        # accesses of a pool whose link carries them are already the channel's
        remote = np.zeros(n_pools, dtype=bool)
        remote[1:] = [not link.kernel_traffic for link in links]
        accessed = liveness.kernel_reads if inward else liveness.kernel_writes
        access = _access_rate(costs, liveness, remote, accessed) if remote.any() else 0.0
        rates.append(CrossingRate(
            sync_bytes_per_second=max(link.sync_bytes_per_second for link in links),
            overlap_bytes_per_second=sum(per_channel.values()) + access,
            access_bytes_per_second=access))
    return rates[0], rates[1]


def touch_rate(system: MemorySystem, costs: KernelCosts, liveness: Liveness) -> float:
    """The most bytes a kernel touches outside the fastest pool (reads and writes together,
    in any other pool) per second of its time, over every kernel and configuration the
    costs allow (infinite when some configuration touching such bytes takes no time)."""
    remote = np.ones(len(system.pools), dtype=bool)
    remote[0] = False
    touched = np.asarray(liveness.kernel_reads, dtype=bool) | np.asarray(liveness.kernel_writes,
                                                                         dtype=bool)
    return _access_rate(costs, liveness, remote, touched) if remote.any() else 0.0


def _access_rate(costs: KernelCosts, liveness: Liveness, remote: BoolArray,
                 accessed: BoolArray) -> float:
    """The most bytes of the ``remote`` pools a kernel touches (its ``accessed`` entries)
    per second of its time, over every kernel and configuration the costs allow."""
    nbytes = np.where(accessed, liveness.nbytes[liveness.kernel_tensors], 0).astype(np.float64)
    separable = costs.separable()
    if separable is not None:
        return _separable_access_rate(separable, nbytes, remote)
    most = 0.0
    ptr = liveness.kernel_ptr
    for k in range(liveness.n_kernels):
        table = costs.table(k)
        touched = remote[table.configs.astype(np.int64)] @ nbytes[ptr[k]: ptr[k + 1]]
        if (touched > 0).any():
            seconds = table.seconds[touched > 0]
            if (seconds <= 0).any():
                return float("inf")
            most = max(most, float((touched[touched > 0] / seconds).max()))
    return most


def _separable_access_rate(costs: SeparableCosts, nbytes: FloatArray,
                           remote: BoolArray) -> float:
    """:func:`_access_rate` of a separable form, bounded without enumerating: a kernel's
    time is at least each term, a term at least the sum of its remote entries' coefficients
    (when no coefficient or constant of the term is negative), and a sum of bytes over a
    sum of seconds at most the largest entry's ratio; so per kernel the least over terms of
    the largest ``nbytes / coefficient`` of an entry in a remote pool."""
    if not (nbytes > 0).any():
        return 0.0
    coefficients = costs.coefficients[:, :, remote]  # (n_entries, n_terms, n_remote)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(nbytes[:, None, None] > 0,
                         nbytes[:, None, None] / coefficients, 0.0).max(axis=2)
    usable = ((costs.coefficients >= 0).all(axis=(0, 2)) & (costs.constants >= 0).all(axis=0))
    ratio[:, ~usable] = np.inf
    widths = np.diff(costs.kernel_ptr)
    starts = costs.kernel_ptr[:-1][widths > 0]
    per_kernel = np.maximum.reduceat(ratio, starts, axis=0).min(axis=1)
    return float(per_kernel.max()) if len(per_kernel) else 0.0


__all__ = ["EXACT_CONFIGS", "CrossingRate", "crossing_rates", "least_seconds", "touch_rate"]
