"""Kernel costs: the run time of every kernel under every placement of its tensors.

A *placement* of kernel ``k`` gives a pool position for each tensor it touches,
in the order of ``graph.liveness.kernel_tensors[kernel_ptr[k]:kernel_ptr[k+1]]``
(which is ``Kernel.tensors`` order). Whole-program placements are given as one
array aligned with ``liveness.kernel_tensors`` ("entries").

Two forms answer the same queries:

- :class:`TableCosts`: an explicit time per allowed configuration, as AutoTM
  profiled them (possibly restricted to some configurations);
- :class:`SeparableCosts`: a kernel's time is the maximum of a few affine terms
  in the location of its tensors, ``max_j (constant[k, j] + sum_i
  coefficient[e_i, j, pool_i])``: a roofline max(compute, memory traffic) plus
  latencies. The ILP models this with one continuous variable per kernel.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.arrays import BoolArray, FloatArray, IntArray
from autotm_core.errors import PlanError

MAX_ENUMERATED_CONFIGS = 1 << 12
"""Largest number of configurations :meth:`SeparableCosts.table` enumerates for one kernel."""


def _check_pools(who: str, pools: Sequence[int] | IntArray, n_pools: int) -> IntArray:
    positions = np.asarray(pools, dtype=np.int64)
    if positions.size and (positions.min() < 0 or positions.max() >= n_pools):
        raise PlanError(
            f"{who}: pool positions are not all in 0..{n_pools - 1}",
            hint="give each tensor's pool as its position in the memory system, fastest first",
        )
    return positions


@attrs.frozen(slots=True, eq=False)
class CostTable:
    """The allowed configurations of one kernel and their times."""

    configs: npt.NDArray[np.int8]
    """``(n_configs, n_tensors)`` pool positions, one row per configuration."""
    seconds: FloatArray
    """``(n_configs,)`` run time of each configuration."""


@runtime_checkable
class KernelCosts(Protocol):
    """What every cost form answers."""

    @property
    def n_pools(self) -> int:
        """Number of pools of the memory system the costs were made for."""

    def seconds(self, kernel: int, pools: Sequence[int] | IntArray) -> float:
        """Time of ``kernel`` with its tensors in ``pools``; :class:`PlanError` if not allowed."""

    def seconds_all(self, entry_pools: IntArray) -> FloatArray:
        """Time of every kernel for a whole-program placement aligned with ``kernel_tensors``."""

    def table(self, kernel: int) -> CostTable:
        """Every allowed configuration of ``kernel`` with its time."""

    def separable(self) -> SeparableCosts | None:
        """The affine-max form, when the costs have one (then the ILP needs no config binaries)."""


@attrs.frozen(slots=True, eq=False)
class SeparableCosts:
    """Kernel time ``max_j (constants[k, j] + sum over its tensors e of coefficients[e, j, pool])``.

    The terms of a roofline are max(compute, memory) plus latencies; see :mod:`.roofline`.
    """

    n_pools: int
    """Number of pools."""
    kernel_ptr: IntArray
    """``(n_kernels + 1,)`` CSR pointers into the entries (as ``Liveness.kernel_ptr``)."""
    constants: FloatArray
    """``(n_kernels, n_terms)`` seconds independent of placement."""
    coefficients: FloatArray
    """``(n_entries, n_terms, n_pools)`` seconds added when the entry's tensor is in that pool."""

    @property
    def n_kernels(self) -> int:
        """Number of kernels."""
        return len(self.kernel_ptr) - 1

    def seconds(self, kernel: int, pools: Sequence[int] | IntArray) -> float:
        start, stop = int(self.kernel_ptr[kernel]), int(self.kernel_ptr[kernel + 1])
        if len(pools) != stop - start:
            raise PlanError(f"kernel #{kernel} touches {stop - start} tensors, not {len(pools)}")
        positions = _check_pools(f"kernel #{kernel}", pools, self.n_pools)
        rows = np.arange(start, stop)
        terms = self.constants[kernel] + self.coefficients[rows, :, positions].sum(axis=0)
        return float(terms.max())

    def seconds_all(self, entry_pools: IntArray) -> FloatArray:
        n_entries = len(self.coefficients)
        entry_pools = np.asarray(entry_pools, dtype=np.int64)
        if entry_pools.shape != (n_entries,):
            raise PlanError(
                f"a placement gives {entry_pools.size} pools; the kernels touch {n_entries} tensors"
            )
        _check_pools("the placement", entry_pools, self.n_pools)
        picked = self.coefficients[np.arange(n_entries), :, entry_pools]  # (n_entries, n_terms)
        sums = np.zeros_like(self.constants)
        owner = np.repeat(np.arange(self.n_kernels), np.diff(self.kernel_ptr))
        np.add.at(sums, owner, picked)
        return (self.constants + sums).max(axis=1)

    def table(self, kernel: int) -> CostTable:
        width = int(self.kernel_ptr[kernel + 1] - self.kernel_ptr[kernel])
        if self.n_pools**width > MAX_ENUMERATED_CONFIGS:
            raise PlanError(
                f"kernel #{kernel} has {self.n_pools ** width} configurations, more than the "
                f"{MAX_ENUMERATED_CONFIGS} a table may enumerate",
                hint="use the separable form (the default for the analytic model)",
            )
        configs = np.array(
            list(itertools.product(range(self.n_pools), repeat=width)), dtype=np.int8
        ).reshape(self.n_pools**width, width)
        start = int(self.kernel_ptr[kernel])
        rows = np.arange(start, start + width)
        picked = self.coefficients[rows[np.newaxis, :], :, configs]  # (n_configs, width, n_terms)
        seconds = (self.constants[kernel] + picked.sum(axis=1)).max(axis=1)
        return CostTable(configs=configs, seconds=seconds)

    def separable(self) -> SeparableCosts:
        return self


@attrs.frozen(slots=True, eq=False)
class TableCosts:
    """An explicit table of allowed configurations per kernel (profiled or loaded from a file)."""

    n_pools: int
    """Number of pools."""
    kernel_ptr: IntArray
    """``(n_kernels + 1,)`` CSR pointers into the entries (as ``Liveness.kernel_ptr``)."""
    tables: tuple[CostTable, ...]
    """One table per kernel."""
    _lookup: list[dict[tuple[int, ...], float] | None] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        self._lookup.extend([None] * len(self.tables))

    def seconds(self, kernel: int, pools: Sequence[int] | IntArray) -> float:
        lookup = self._lookup[kernel]
        if lookup is None:
            table = self.tables[kernel]
            lookup = {
                tuple(row): float(s)
                for row, s in zip(table.configs.tolist(), table.seconds, strict=True)
            }
            self._lookup[kernel] = lookup
        key = tuple(int(p) for p in pools)
        try:
            return lookup[key]
        except KeyError:
            raise PlanError(
                f"kernel #{kernel}: configuration {key} is not in its cost table",
                hint="the cost table restricts this kernel's placements; pick an allowed one",
            ) from None

    def seconds_all(self, entry_pools: IntArray) -> FloatArray:
        ptr = self.kernel_ptr
        return np.array(
            [self.seconds(k, entry_pools[ptr[k] : ptr[k + 1]]) for k in range(len(self.tables))],
            dtype=np.float64,
        )

    def table(self, kernel: int) -> CostTable:
        return self.tables[kernel]

    def separable(self) -> None:
        return None


def least_kernel_seconds(costs: KernelCosts, n_kernels: int, *,
                         elsewhere: BoolArray | None = None) -> FloatArray:
    """``(n_kernels,)`` seconds no configuration of each kernel beats (0 for a kernel the
    costs give no configuration); for a separable form, with the entries marked
    ``elsewhere`` outside the fastest pool (pool 0) only."""
    separable = costs.separable()
    if separable is not None:
        # each term at its cheapest pool per tensor: no configuration's max of terms is less
        coefficients = separable.coefficients
        if elsewhere is not None and elsewhere.any() and separable.n_pools > 1:
            coefficients = coefficients.copy()
            coefficients[elsewhere, :, 0] = np.inf
        cheapest = coefficients.min(axis=2)  # (n_entries, n_terms)
        sums = np.zeros_like(separable.constants)
        owner = np.repeat(np.arange(separable.n_kernels), np.diff(separable.kernel_ptr))
        np.add.at(sums, owner, cheapest)
        return np.asarray((separable.constants + sums).max(axis=1), dtype=np.float64)
    tables = (costs.table(k).seconds for k in range(n_kernels))
    return np.array([float(seconds.min()) if len(seconds) else 0.0 for seconds in tables],
                    dtype=np.float64)


def rerun_seconds(costs: KernelCosts, kernel: int, n_tensors: int) -> float:
    """Seconds of kernel ``kernel`` (touching ``n_tensors`` tensors) with every tensor in the
    fastest pool: what running it again costs (a plan's reruns read and write there)."""
    return float(costs.seconds(kernel, [0] * n_tensors))
