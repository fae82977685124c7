"""Exact reductions of the ILP before solving: variables whose value some optimum shares.

Each reduction fixes variables of the one formulation
(:func:`~autotm_core.ilp.formulation.build_program`) through their bounds; the
rows stay as they are. A reduction is *exact*: among the optimal plans there is
one that satisfies every fixing, so the optimum does not change (the tests solve
small graphs with and without them). Any subset of the fixings is exact too,
which lets a caller drop those that contradict a warm start.

- **always fast**: a tensor such that, at every kernel of its life, every live
  tensor and the kernel's workspace fit the fastest pool together. Keeping it in
  the fastest pool throughout never breaks a capacity row (the pool never holds
  more than what is live), removes all its moves and, when no kernel runs slower
  with it in the fastest pool (checked on the separable costs), no kernel gets
  slower. Its slots take state ``(fastest, no copy)`` and every transition the
  edge that stays (so a tensor that exists before the step and survives it begins
  and ends the step there: its steady-state rows hold).
- **never fast**: a slot during which the tensor and what must be in the fastest
  pool anyway (workspace, tensors allowed nowhere else) exceed its capacity at
  some kernel: states holding the tensor in the fastest pool are infeasible there.
- **unprofitable fetch** (synchronous formulation, unbounded slowest pool): a copy
  out of the slowest pool whose seconds are at least the most that every later use
  of the tensor could gain from it (per use, the largest decrease of any term of
  the kernel's time). Leaving the tensor in the slowest pool from there on costs no
  more and holds no more bytes in any bounded pool. Not for a tensor with
  steady-state rows that may begin the step elsewhere: it must end where it began,
  and that copy may be what brings it back.

Dominated edges and never-binding pools are already left out by the formulation
itself; kernels with identical live sets share nothing to remove in its
running-sum capacity rows (one row per half step, not one per live set).
"""

from __future__ import annotations

import attrs
import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.ilp.gadgets import State
from autotm_core.ilp.infeasible import forced_fast_nbytes
from autotm_core.ilp.lp import LinearProgram
from autotm_core.ilp.model_index import ModelIndex
from autotm_core.ilp.options import Formulation, held_pages
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem

Fixings = tuple[list[int], list[float], int]
"""What one reduction fixes: columns, their values, and how many things it removed."""


def _int_array(value: object) -> np.ndarray:
    return np.asarray(value, dtype=np.int64)


@attrs.frozen(kw_only=True, eq=False)
class Reductions:
    """Variables fixed before solving, and what each reduction removed."""

    columns: np.ndarray = attrs.field(converter=_int_array)
    """Positions of the fixed variables in the linear program."""
    values: np.ndarray = attrs.field(converter=lambda v: np.asarray(v, dtype=np.float64))
    """The value each is fixed to (aligned with :attr:`columns`)."""
    always_fast_tensors: int = attrs.field(validator=attrs.validators.ge(0))
    """Tensors kept in the fastest pool for their whole life."""
    never_fast_slots: int = attrs.field(validator=attrs.validators.ge(0))
    """Slots where no state holding the tensor in the fastest pool can fit."""
    unprofitable_fetches: int = attrs.field(validator=attrs.validators.ge(0))
    """Edges out of the slowest pool that cannot repay their copy."""
    binary: np.ndarray = attrs.field(converter=lambda v: np.asarray(v, dtype=bool))
    """Whether each fixed variable is binary (aligned with :attr:`columns`)."""
    n_binaries: int = attrs.field(validator=attrs.validators.ge(0))
    """Binary variables of the model."""

    @property
    def fixed_binaries(self) -> int:
        """Binary variables among :attr:`columns`."""
        return int(self.binary.sum())

    def without(self, columns: np.ndarray) -> Reductions:
        """The same reductions less the fixings of ``columns`` (still exact)."""
        keep = ~np.isin(self.columns, columns)
        return attrs.evolve(self, columns=self.columns[keep], values=self.values[keep],
                            binary=self.binary[keep])

    def conflicts(self, start: np.ndarray) -> np.ndarray:
        """Columns whose fixing ``start`` (one value per variable) breaks."""
        return self.columns[np.abs(start[self.columns] - self.values) > 1e-6]

    def apply(self, lp: LinearProgram) -> LinearProgram:
        """A copy of ``lp`` with the fixed variables' bounds set (the rows are shared)."""
        lb, ub = list(lp.var_lb), list(lp.var_ub)
        for column, value in zip(self.columns.tolist(), self.values.tolist(), strict=True):
            lb[column] = ub[column] = value
        return attrs.evolve(lp, var_lb=lb, var_ub=ub)

    @classmethod
    def none(cls, lp: LinearProgram) -> Reductions:
        """No fixings, for the model ``lp``."""
        empty = np.zeros(0)
        return cls(columns=empty, values=empty, always_fast_tensors=0, never_fast_slots=0,
                   unprofitable_fetches=0, binary=empty, n_binaries=lp.n_binaries)

    def summary(self) -> dict[str, int]:
        """What each reduction removed, as plain numbers (for reports and benchmarks)."""
        return {"always_fast_tensors": self.always_fast_tensors,
                "never_fast_slots": self.never_fast_slots,
                "unprofitable_fetches": self.unprofitable_fetches,
                "fixed_variables": int(self.columns.size),
                "fixed_binaries": self.fixed_binaries, "binaries": self.n_binaries}


class _RangeMin:
    """Minimum of ``values[a..b]`` in constant time (a sparse table of power-of-two windows)."""

    def __init__(self, values: np.ndarray) -> None:
        self.levels = [np.asarray(values)]
        width = 1
        while 2 * width <= len(values):
            below = self.levels[-1]
            self.levels.append(np.minimum(below[:-width], below[width:]))
            width *= 2

    def min(self, a: int, b: int) -> float:
        """``min(values[a..b])``, both ends included (``a <= b``)."""
        level = (b - a + 1).bit_length() - 1
        table = self.levels[level]
        return min(table[a], table[b - (1 << level) + 1])


def _fast_never_slower(costs: KernelCosts, graph: Graph) -> np.ndarray:
    """Per tensor: no term of any kernel touching it grows when it moves to the fastest pool."""
    separable = costs.separable()
    ok = np.zeros(len(graph.tensors), dtype=bool)
    if separable is None:
        return ok
    coef = separable.coefficients  # (entries, terms, pools)
    entry_ok = (coef[:, :, :1] <= coef).all(axis=(1, 2))
    ok[:] = True
    bad = graph.liveness.kernel_tensors[~entry_ok]
    ok[np.unique(bad)] = False
    return ok


def _gain_per_use(costs: KernelCosts, graph: Graph, scale: float) -> dict[tuple[int, int], float]:
    """Per (tensor, kernel): the most any term of the kernel drops when the tensor leaves the
    slowest pool for a faster one (model units)."""
    separable = costs.separable()
    assert separable is not None
    live = graph.liveness
    coef = separable.coefficients
    drop = coef[:, :, -1] - coef.min(axis=2)  # (entries, terms)
    out: dict[tuple[int, int], np.ndarray] = {}
    for k in range(len(graph.kernels)):
        for e in range(int(live.kernel_ptr[k]), int(live.kernel_ptr[k + 1])):
            key = (int(live.kernel_tensors[e]), k)
            out[key] = out.get(key, 0.0) + drop[e]
    return {key: scale * float(np.max(v)) for key, v in out.items()}


def find_reductions(index: ModelIndex, graph: Graph, system: MemorySystem,
                    costs: KernelCosts) -> Reductions:
    """The exact fixings of ``index``'s model (see the module docstring)."""
    fast_cols, fast_values, fast, kept_fast = always_fast(index, graph, costs)
    never_cols, never_values, never = never_fast(index, graph, system, skip=kept_fast)
    fetch_cols, fetch_values, fetches = unprofitable_fetches(
        index, graph, system, costs, fixed=set(fast_cols) | set(never_cols))
    binary = np.asarray(index.lp.var_binary, dtype=bool)
    cols = np.asarray(fast_cols + never_cols + fetch_cols, dtype=np.int64)
    return Reductions(columns=cols, values=fast_values + never_values + fetch_values,
                      always_fast_tensors=fast, never_fast_slots=never,
                      unprofitable_fetches=fetches, binary=binary[cols],
                      n_binaries=int(binary.sum()))


def _fast_only(index: ModelIndex) -> int:
    """The state ``(fastest, no copy)``."""
    return index.states.index(next(s for s in index.states if s.pools == frozenset({0})))


def always_fast(index: ModelIndex, graph: Graph,
                costs: KernelCosts) -> tuple[list[int], list[float], int, set[int]]:
    """Tensors kept in the fastest pool for their whole life (see the module docstring).

    Returns the fixings, the number of tensors, and their positions in ``index.tensors``.
    """
    columns: list[int] = []
    values: list[float] = []
    kept: set[int] = set()
    cap = index.capacities[0]
    if cap is None or 0 not in index.occupancy_vars:
        return columns, values, 0, kept
    page = index.options.page_nbytes
    limit = cap // page
    limit[1:] = np.minimum(limit[1:], cap[:-1] // page)
    tensors, workspace = held_pages(graph, page)
    prefix = np.concatenate([[0], np.cumsum(tensors + workspace > limit)])
    fast_ok = _fast_never_slower(costs, graph)
    fast_only = _fast_only(index)
    for t, ts in enumerate(index.tensors):
        slot_vars, edges = index.slot_vars[t], index.edges[t]
        if (all(len(xs) == 1 for xs in slot_vars)
                or prefix[ts.slots[-1].last + 1] != prefix[ts.slots[0].first]
                or not fast_ok[ts.tensor] or not all(fast_only in xs for xs in slot_vars)):
            continue
        stays = [next((e for e in tr if e.before == fast_only and e.after == fast_only
                       and e.async_kernel is None), None) for tr in edges]
        if any(e is None for e in stays):
            continue
        kept.add(t)
        for xs in slot_vars:
            for s, var in xs.items():
                columns.append(var)
                values.append(1.0 if s == fast_only else 0.0)
        for tr, stay in zip(edges, stays, strict=True):
            for e in tr:
                columns.append(e.var)
                values.append(1.0 if e is stay else 0.0)
    return columns, values, len(kept), kept


def never_fast(index: ModelIndex, graph: Graph, system: MemorySystem, *,
               skip: set[int]) -> Fixings:
    """States holding a tensor in the fastest pool in slots where it cannot fit there (see
    the module docstring); tensors at positions in ``skip`` are left alone."""
    columns: list[int] = []
    values: list[float] = []
    cap = index.capacities[0]
    if cap is None or 0 not in index.occupancy_vars:
        return columns, values, 0
    page, states, live = index.options.page_nbytes, index.states, graph.liveness
    headroom = _RangeMin(cap - forced_fast_nbytes(graph, system, index.options))
    count = 0
    for t, ts in enumerate(index.tensors):
        slot_vars = index.slot_vars[t]
        if t in skip or all(len(xs) == 1 for xs in slot_vars):
            continue
        size = -(-int(live.nbytes[ts.tensor]) // page) * page
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            fast_states = [s for s in xs if 0 in states[s].pools]
            if not fast_states or len(fast_states) == len(xs):
                continue
            if size > headroom.min(slot.first, slot.last):
                count += 1
                columns.extend(xs[s] for s in fast_states)
                values.extend([0.0] * len(fast_states))
    return columns, values, count


def unprofitable_fetches(index: ModelIndex, graph: Graph, system: MemorySystem,
                         costs: KernelCosts, *, fixed: set[int]) -> Fixings:
    """Edges out of the slowest pool that cannot repay their copy (see the module
    docstring); columns in ``fixed`` are left alone."""
    columns: list[int] = []
    values: list[float] = []
    slowest = len(system.pools) - 1
    if (index.options.formulation is not Formulation.SYNCHRONOUS or costs.separable() is None
            or slowest in index.occupancy_vars):
        return columns, values, 0
    slow_only = index.states.index(State(frozenset({slowest}), slowest, False))
    gain = _gain_per_use(costs, graph, 1.0 / index.seconds_per_unit)
    objective = index.lp.objective
    for t, ts in enumerate(index.tensors):
        if not all(slow_only in xs for xs in index.slot_vars[t]):
            continue
        if ts.cyclic and set(index.slot_vars[t][0]) != {slow_only}:
            continue
        later = [0.0] * (len(ts.slots) + 1)  # gain of every use from slot i on
        for i in range(len(ts.slots) - 1, -1, -1):
            slot = ts.slots[i]
            later[i] = later[i + 1] + (gain.get((ts.tensor, slot.first), 0.0)
                                       if slot.gadget else 0.0)
        for i, tr in enumerate(index.edges[t]):
            for e in tr:
                if (e.before == slow_only and e.after != slow_only and e.var not in fixed
                        and objective.get(e.var, 0.0) >= later[i + 1]):
                    columns.append(e.var)
                    values.append(0.0)
    return columns, values, len(columns)
