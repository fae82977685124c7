"""A plan of the whole program, planned one stretch of kernels at a time (rolling horizon).

Stretches of ``core`` kernels are planned in program order. Planning a stretch
solves a slice of the one formulation by relax-and-fix
(:func:`~autotm_core.ilp.incumbent.relax_and_fix_matrix`) on the solver given:

- what earlier stretches decided is held (the columns anchored before it,
  :mod:`autotm_core.ilp.approximate.layout`);
- the stretch's own decisions are binary; those of the next ``margin`` kernels
  are relaxed (continuous), so the stretch sees what comes soon after it (and
  the time of any later kernel an asynchronous move of the slice overlaps);
- further on, every slot not planned yet is held in its least-occupancy state
  (:attr:`~autotm_core.ilp.approximate.layout.ModelLayout.least`) and every capacity row is
  kept: nothing decided now can leave a later stretch without room. A far
  transition of a slot decided now is left to the stretch that reaches it (its
  edges count nothing in the slice; at that boundary a copy out of the slowest
  pool can usually be avoided, and without one the boundary holds no more than the
  kernel before it when capacities do not change from kernel to kernel);
- except the last slot of each tensor with steady-state rows (it exists before the
  step and survives it): that slot, at the last kernel, is relaxed in every slice
  with its steady-state rows, so a stretch that decides where such a tensor begins
  the step reserves room for it where the step ends. The copy that brings it back
  there, at the boundary before the last kernel, is left to the last stretch; when
  that stretch finds no room, the slice fails as below.

When fixing what the LP made integral leaves the rest of a slice without a
solution, the slice is solved whole. Only the stretch's own binaries are kept;
the next stretch solves its margin again. What a stretch decided can leave the next
one no solution (a tensor left in fast memory until the end of the step, where every
tensor that exists before it must return): the two are then planned again as one
stretch, and so on back; only when the first stretch has no solution does
:func:`rolling_plan` return ``None``. The last stretch takes a short tail with it.

:func:`revisit` is a second pass over a complete plan: each group of tensors planned again
over the whole step, then each stretch, with everything else held at its planned values
(not at least-occupancy states), the transitions out of a stretch's slots free wherever
they are; a piece's new plan is kept only when it is better.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import attrs
import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

from autotm_core.ilp.approximate.layout import (
    EDGE,
    OCCUPANCY,
    SLOT,
    TIME,
    ModelLayout,
    restricted_problem,
)
from autotm_core.ilp.incumbent import RelaxAndFix, Unrelaxed, relax_and_fix_matrix
from autotm_core.ilp.model_index import CONFIG, FLIGHT
from autotm_core.ilp.search.budget import seconds_until
from autotm_core.solvers.base import MatrixProblem, Solver, SolverConfig, TerminationCondition

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True, eq=False)
class RollingPlan:
    """A feasible solution of the whole model, planned stretch by stretch."""

    values: np.ndarray
    """One value per column of the model."""
    row_duals: np.ndarray
    """Per row, its dual in the LP relaxation of the slice whose stretch it is anchored in
    (NaN where that slice was solved whole or never solved): prices for
    :func:`~autotm_core.ilp.approximate.lagrangian.lagrangian_bound` to start from."""
    planned_kernels: int
    """Kernels planned by slices; the rest (when the deadline came first) have every slot
    in its least-occupancy state. Kernel-time and occupancy values are then not set."""
    completed_from_held: bool = False
    """Whether, the deadline having come first, the kernels not planned take the held
    plan's decisions (:func:`complete_from_held`) rather than their least-occupancy
    states."""


def rolling_plan(layout: ModelLayout, problem: MatrixProblem, *, solver: Solver,
                 core_kernels: int, margin_kernels: int, relative_gap: float,
                 deadline: float | None = None,
                 abandon_at: float | None = None,
                 held: Callable[[], np.ndarray | None] | None = None,
                 held_until: float | None = None) -> RollingPlan | None:
    """A feasible solution of ``problem`` (see the module docstring) by ``solver``, or ``None``.

    ``None`` when a slice has no solution. When ``deadline`` (a :func:`time.perf_counter`
    value) passes first, the kernels not planned yet keep every slot in its
    least-occupancy state (:func:`_complete`; ``None`` if that cannot be joined up), or
    with ``held`` (the values of a complete plan held, computed only then) that plan's
    decisions where they join up (:attr:`RollingPlan.completed_from_held`), unless
    ``held_until`` (a :func:`time.perf_counter` value) has passed by then.
    The slices' row duals (:attr:`RollingPlan.row_duals`) come from a backend that
    gives them (:attr:`~autotm_core.solvers.SolverCapabilities.duals`); NaN otherwise.
    A solve still running at ``abandon_at`` (a :func:`time.perf_counter` value) is
    abandoned.
    """
    n = layout.n_kernels
    binary = np.asarray(problem.is_integer, dtype=bool)
    unplanned = np.where(_follows(layout), 0.0, layout.least)
    values = unplanned.copy()
    duals = np.full(layout.rows.shape[0], np.nan)
    stretches = _stretches(n, max(1, core_kernels), max(0, margin_kernels))
    i = 0
    while i < len(stretches):
        s, e = stretches[i]
        m = min(n, e + max(0, margin_kernels))
        left = _left(deadline)
        if left is not None and left <= 0:
            logger.info("rolling: out of time before stretch %d-%d of %d kernels", s, e, n)
            return _out_of_time(layout, problem, values, duals, s, held, held_until)
        # a far transition of a slot decided now is left to the stretch that reaches it:
        # its edges count nothing in this slice
        values[(layout.kind == EDGE) & (layout.col_anchor >= m) & (layout.before_anchor < m)] = 0.0
        if s > 0:  # every first slot is decided: the last ones are held where they end
            _hold_last_slots(layout, values, m)
        piece = _slice(layout, problem, values, s=s, e=e, m=m)
        solved = _solve_slice(piece, solver, relative_gap, deadline, layout=layout,
                              values=values, duals=duals, s=s, e=e, abandon_at=abandon_at)
        if solved:
            i += 1
            continue
        left = _left(deadline)
        if left is not None and left <= 0:
            logger.info("rolling: out of time in stretch %d-%d of %d kernels", s, e, n)
            return _out_of_time(layout, problem, values, duals, s, held, held_until)
        if i == 0:
            logger.info("rolling: stretch %d-%d has no solution", s, e)
            return None
        # what the stretch before decided leaves this one no solution: plan both again
        before = stretches[i - 1][0]
        logger.info("rolling: stretch %d-%d has no solution; planning it with the one before "
                    "(%d-%d)", s, e, before, e)
        stretches[i - 1:i + 1] = [(before, e)]
        i -= 1
        again = layout.col_anchor >= before
        values[again] = unplanned[again]
        duals[layout.row_anchor >= before] = np.nan
    binaries = binary & np.isfinite(values)
    values[binaries] = np.round(values[binaries])
    return RollingPlan(values=values, row_duals=duals, planned_kernels=n)


@attrs.frozen(kw_only=True, eq=False)
class Revisited:
    """A complete plan after a second pass over groups of its tensors and its stretches."""

    values: np.ndarray
    """One value per column of the model; kernel times beyond a stretch improved are not
    all set again (decode the states and edges)."""
    improved: int
    """Groups and stretches whose plan the pass improved."""
    revisited: int
    """Groups and stretches the pass solved again before its deadline."""


def revisit(layout: ModelLayout, problem: MatrixProblem, values: np.ndarray, *, solver: Solver,
            core_kernels: int, relative_gap: float,
            deadline: float | None = None, abandon_at: float | None = None) -> Revisited:
    """A second pass over the complete plan ``values``, by relax-and-fix, everything else
    held at its planned values: first each group of tensors (:func:`_tensor_groups`, about
    as many binaries as a stretch) planned again over the whole step
    (:func:`_tensors_slice`: where a tensor lives at uses stretches apart, and where a
    tensor that exists before the step begins and ends it), then each stretch of
    ``core_kernels`` kernels, and the same staggered by half (the transitions out of its
    slots free, wherever they are: the first pass left those to later stretches and so
    could not see what keeping an activation in fast memory saves at its use in the
    backward pass); again while a pass gains. A piece's new plan is kept when it is
    better; each kept plan is feasible for the whole model, so the pass never makes the
    plan worse. Stops at ``deadline``; a solve still running at ``abandon_at`` is
    abandoned.

    chain:5000 4:1, 20 s: the first pass's plan 3.6% above the exact planner's (itself
    within 0.07% of the LP bound); the groups alone (four in 7 s) brought it to 0.4%,
    where the stretches had reached 3.3%.
    """
    values = np.array(values, dtype=np.float64)
    cost = np.asarray(problem.cost, dtype=np.float64)
    n, core = layout.n_kernels, max(1, core_kernels)
    improved = revisited = 0
    logger.info("revisit: from objective %.6g", float(cost @ values))
    stretches = _stretches(n, core, 0) + _stretches(n, core, 0, first=core // 2)
    tensors = _column_tensors(layout)
    groups = _tensor_groups(layout, problem, tensors, core_kernels=core)
    gained = True
    while gained:  # pass after pass: the tensors, the stretches, the same staggered by half
        gained = False
        pieces: list[Callable[[], _Slice]] = [
            *(lambda g=g: _tensors_slice(layout, problem, values, _members(tensors, g),
                                         name=f"tensors {int(g.min())}-{int(g.max())}")
              for g in groups),
            *(lambda s=s, e=e: _slice(layout, problem, values, s=s, e=e, m=e, again=True)
              for s, e in stretches)]
        for make in pieces:
            left = _left(deadline)
            if left is not None and left <= 0:
                return Revisited(values=values, improved=improved, revisited=revisited)
            piece = make()
            found = relax_and_fix_matrix(piece.sub, solver=solver, time_limit_seconds=left,
                                         relative_gap=relative_gap, threads=1,
                                         abandon_at=abandon_at)
            if not isinstance(found, RelaxAndFix):
                continue
            revisited += 1
            new = found.values[:piece.cols.size]
            gain = float(cost[piece.cols] @ values[piece.cols] - cost[piece.cols] @ new)
            if gain > 1e-9 * max(1.0, abs(float(cost @ values))):
                logger.info("revisit: %s gains %.6g", piece.sub.name, gain)
                binary = np.asarray(piece.sub.is_integer, dtype=bool)[:piece.cols.size]
                values[piece.cols] = np.where(binary, np.round(new), new)
                _settle_occupancy(layout, values)
                improved += 1
                gained = True
    return Revisited(values=values, improved=improved, revisited=revisited)


def _tensor_groups(layout: ModelLayout, problem: MatrixProblem, tensor: np.ndarray, *,
                   core_kernels: int) -> list[np.ndarray]:
    """The tensors planned (``tensor``: :func:`_column_tensors`), in the order of their first
    slot (then of the graph), cut into groups of about as many binaries as a stretch of
    ``core_kernels`` kernels has; each group its tensors' places.

    chain:20000 4:1, 60 s: groups of half that size 3.101 s, of that size 3.106 s, of
    twice 3.166 s (the LP grows faster than the group: 3 groups in the time of 12);
    every n-th tensor in the order instead of runs of it, 3.116 s (chain:5000, 20 s:
    0.7543 s against 0.7522 s)."""
    binary = np.asarray(problem.is_integer, dtype=bool) & (tensor >= 0)
    n_tensors = len(layout.tensor_slots) - 1
    if n_tensors <= 0 or not binary.any():
        return []
    per_tensor = np.bincount(tensor[binary], minlength=n_tensors)
    first = np.full(n_tensors, np.iinfo(np.int64).max, dtype=np.int64)
    decides = tensor >= 0
    np.minimum.at(first, tensor[decides], layout.col_anchor[decides])
    order = np.lexsort((np.arange(n_tensors), first))
    total = int(binary.sum())
    size = max(1, total * core_kernels // max(1, layout.n_kernels))
    cut = np.searchsorted(np.cumsum(per_tensor[order]), np.arange(size, total, size),
                          side="left")
    return [chosen for chosen in np.split(order, np.unique(cut + 1)) if chosen.size]


def _members(tensor: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per column (``tensor``: :func:`_column_tensors`), whether it is a slot state or edge of
    a tensor of ``group``."""
    member = np.zeros(int(tensor.max(initial=-1)) + 2, dtype=bool)
    member[group] = True
    return member[tensor]  # -1 (no tensor) reads the last entry, False


def _column_tensors(layout: ModelLayout) -> np.ndarray:
    """Per column: the tensor (its place among those planned) whose slot state or edge it
    is; -1 for every other column."""
    starts = np.asarray(layout.tensor_slots, dtype=np.int64)
    slot_tensor = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    decides = ((layout.kind == SLOT) | (layout.kind == EDGE)) & (layout.slot >= 0)
    tensor = np.full(layout.kind.size, -1, dtype=np.int64)
    tensor[decides] = slot_tensor[layout.slot[decides]]
    return tensor


def _tensors_slice(layout: ModelLayout, problem: MatrixProblem, values: np.ndarray,
                   group: np.ndarray, *, name: str = "tensors") -> _Slice:
    """The slice planning again every slot and transition of a group of tensors over the
    whole step (``group``: their columns), every other tensor held at ``values``: what a
    stretch cannot change, a tensor's pools at uses stretches apart (chain:5000 4:1: a
    parameter fetched for its forward kernel, evicted, fetched again for its update and
    kept there for the next step, where the whole model's plan keeps it in one pool).
    Free besides: their copies in flight, the configurations of the kernels using them
    (table costs), and the time of each kernel whose time a free column loads. The rows
    are every row with a free column, but the capacity, compressed exactly to the half
    steps where the group's bytes change (:func:`_breakpoint_chain`), so the slice's
    solution is one of the whole model."""
    columns, rows_of = layout.columns, layout.rows
    touched = np.zeros(rows_of.shape[0], dtype=bool)
    touched[columns[:, np.flatnonzero(group)].indices] = True
    near = np.zeros(layout.kind.size, dtype=bool)
    near[rows_of[np.flatnonzero(touched & ~layout.capacity_row)].indices] = True
    # the group's copies in flight, and the configurations of its kernels (table costs)
    free = group | (near & ((layout.kind == FLIGHT) | (layout.kind == CONFIG)))
    touched[columns[:, np.flatnonzero(free)].indices] = True
    loaded = np.zeros(layout.kind.size, dtype=bool)
    loaded[rows_of[np.flatnonzero(touched & layout.time_row)].indices] = True
    free |= loaded & (layout.kind == TIME)
    rows = np.zeros(rows_of.shape[0], dtype=bool)
    rows[columns[:, np.flatnonzero(free)].indices] = True
    rows &= ~layout.capacity_row
    integer = np.asarray(problem.is_integer, dtype=bool) & group
    chosen = np.flatnonzero(rows)
    sub, cols = restricted_problem(layout, problem, rows=chosen, free=free, values=values,
                                   cost=np.asarray(problem.cost, dtype=np.float64),
                                   integer=integer, name=name)
    decision = layout.kind != OCCUPANCY
    held = np.where(~free & decision, values, 0.0)
    chains: list[_Chain] = []
    n_new = 0
    for rows_q, vars_q in zip(layout.pool_rows, layout.pool_vars, strict=True):
        if rows_q.size:
            chains.append(_breakpoint_chain(layout, problem, rows_q, vars_q, cols=cols,
                                            decision=decision, held=held,
                                            held_last=np.zeros_like(held), link=None,
                                            first_column=sub.n_columns + n_new,
                                            from_the_boundary=False))
            n_new += chains[-1].rows.shape[0]
    return _Slice(_with_chains(sub, chains, n_new) if chains else sub, cols, chosen)


def _settle_occupancy(layout: ModelLayout, values: np.ndarray) -> None:
    """Set every occupancy of ``values`` to the bytes its decisions hold there (a slice
    that compressed the capacity left them as they were)."""
    decisions = np.where(layout.kind == OCCUPANCY, 0.0, values)
    for rows_q, vars_q in zip(layout.pool_rows, layout.pool_vars, strict=True):
        values[vars_q] = _occupancy(layout, rows_q, decisions)


def _solve_slice(piece: _Slice, solver: Solver, relative_gap: float, deadline: float | None, *,
                 layout: ModelLayout, values: np.ndarray, duals: np.ndarray, s: int,
                 e: int, abandon_at: float | None = None) -> bool:
    """Solve ``piece`` (relax-and-fix, else the slice whole) and keep its solution in
    ``values`` and ``duals``; ``False`` when it has none (or the deadline came first)."""
    found = relax_and_fix_matrix(piece.sub, solver=solver, time_limit_seconds=_left(deadline),
                                 relative_gap=relative_gap, threads=1,
                                 duals=solver.capabilities.duals, abandon_at=abandon_at)
    if isinstance(found, RelaxAndFix):
        _keep(layout, piece, found, values, duals, s=s, e=e)
        return True
    if isinstance(found, Unrelaxed) and found.termination is TerminationCondition.INFEASIBLE:
        return False  # the slice's LP relaxation has no solution: nor has the slice
    # fixing what the LP made integral can leave the rest without a solution: solve it all
    left = _left(deadline)
    if left is not None and left <= 0:
        return False
    config = SolverConfig(time_limit_seconds=left, relative_gap=relative_gap, threads=1,
                          warm_start=False, abandon_after_seconds=seconds_until(abandon_at))
    _, solved = solver.solve(piece.sub, config)
    if solved is None:
        return False
    values[piece.cols] = solved[:piece.cols.size]
    return True


def _stretches(n: int, core: int, margin: int, *, first: int = 0) -> list[tuple[int, int]]:
    """The stretches ``(s, e)`` of ``n`` kernels: ``core`` kernels each, the last one
    taking the rest when it is shorter than half a stretch or the margin (the end of the
    step, where every tensor that exists before it returns where it began, is then
    decided with the kernels before it, not in a short stretch of its own: the
    Llama-7B-shaped step had a last stretch of 264 kernels with no solution). With
    ``first``, the first stretch has that many kernels (stretches staggered)."""
    stretches = [(0, first)] if 0 < first < n else []
    s = stretches[0][1] if stretches else 0
    while s < n:
        e = n if n - (s + core) <= max(margin, core // 2) else s + core
        stretches.append((s, e))
        s = e
    return stretches


class _Slice(NamedTuple):
    """The slice of the model that plans one stretch."""

    sub: MatrixProblem
    """The slice, its far capacity compressed (:func:`_with_far_capacity`)."""
    cols: np.ndarray
    """The model's column of each of the slice's first columns (the far capacity's
    variables follow)."""
    rows: np.ndarray
    """The model's row of each of the slice's first rows (the far capacity's rows
    follow)."""


def _follows(layout: ModelLayout) -> np.ndarray:
    """Which columns follow from the decisions: kernel times and occupancies."""
    return (layout.kind == TIME) | (layout.kind == OCCUPANCY)


def _slice(layout: ModelLayout, problem: MatrixProblem, values: np.ndarray, *, s: int, e: int,
           m: int, again: bool = False) -> _Slice:
    """The slice planning the stretch of kernels ``s..e - 1`` with its margin up to ``m``
    (see the module docstring), every column it holds at ``values``.

    ``again``: the slice of a second pass over a complete plan (``m`` is ``e``): what
    comes later is held at its planned values, not at its least-occupancy state, so the
    transitions out of the stretch's slots stay free wherever they are (with the rows
    they are in, the time of the kernels there among them).
    """
    anchor, follows = layout.col_anchor, _follows(layout)
    near = (anchor >= s) & (anchor < m)
    is_integer = np.asarray(problem.is_integer, dtype=bool)
    integer = is_integer & (anchor >= s) & (anchor < e)
    exits = np.zeros(anchor.size, dtype=bool)
    if again:
        exits = ((layout.kind == EDGE) & (layout.before_anchor >= s) & (layout.before_anchor < e)
                 & (anchor >= m))
        integer |= exits & is_integer
        free = near | exits
    else:
        free = near | ((follows | (layout.last_slot & (s == 0))) & (anchor >= m))
    far_rows, far_vars = _far_capacity(layout, m)
    # far kernel-time rows count only where a decision of the slice loads them (an
    # asynchronous move overlapping a kernel beyond the margin, a transition out of it)
    loads = np.zeros(layout.rows.shape[0], dtype=bool)
    loads[layout.columns[:, np.flatnonzero((near & ~follows) | exits)].indices] = True
    if again:  # the later kernel times its decisions load are free, the others held
        loaded = np.zeros(anchor.size, dtype=bool)
        loaded[layout.rows[np.flatnonzero(loads & layout.time_row)].indices] = True
        free |= loaded & (layout.kind == TIME) & (anchor >= m)
        free |= (layout.kind == OCCUPANCY) & (anchor >= m)  # the far ones are dropped next
    free[far_vars] = False
    touched = np.zeros(layout.rows.shape[0], dtype=bool)
    touched[layout.columns[:, np.flatnonzero(free)].indices] = True
    exit_rows = np.zeros(layout.rows.shape[0], dtype=bool)
    exit_rows[layout.columns[:, np.flatnonzero(exits)].indices] = True
    touched &= (layout.capacity_row | layout.cyclic_row | (layout.row_anchor < m)
                | (layout.time_row & loads) | exit_rows)
    touched[far_rows] = False
    rows = np.flatnonzero(touched)
    sub, cols = restricted_problem(layout, problem, rows=rows, free=free, values=values,
                                   cost=np.asarray(problem.cost, dtype=np.float64),
                                   integer=integer, name=f"stretch {s}-{e}")
    sub = _with_far_capacity(sub, layout, problem, m=m, cols=cols, free=free, values=values,
                             count_from_the_boundary=not again)
    return _Slice(sub, cols, rows)


def _keep(layout: ModelLayout, piece: _Slice, found: RelaxAndFix, values: np.ndarray,
          duals: np.ndarray, *, s: int, e: int) -> None:
    """Write the slice's solution into ``values`` and the LP duals of the rows anchored in
    the stretch ``s..e - 1`` (when the backend gave them) into ``duals``."""
    values[piece.cols] = found.values[:piece.cols.size]
    if found.row_duals is not None:
        rows = piece.rows
        own = (layout.row_anchor[rows] >= s) & (layout.row_anchor[rows] < e)
        duals[rows[own]] = found.row_duals[:rows.size][own]


def _left(deadline: float | None) -> float | None:
    """Seconds until ``deadline`` (``None``: no deadline); at least 0 so solvers accept it."""
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


def _out_of_time(layout: ModelLayout, problem: MatrixProblem, values: np.ndarray,
                 duals: np.ndarray, s: int, held: Callable[[], np.ndarray | None] | None,
                 held_until: float | None) -> RollingPlan | None:
    """The plan before kernel ``s`` completed from the held plan when ``held`` is given and
    ``held_until`` has not passed (a slice that did not stop at the deadline leaves no
    time for it: ``example:chain-20000``, 60,001 kernels, built in 37 s of a 60 s budget,
    its first slice ran to 55.6 s, and the join took 7.7 + 0.8 + 4.4 s more, to 73 s),
    else (or when that does not join up) in the least-occupancy states; ``None`` when
    neither joins up."""
    late = held_until is not None and time.perf_counter() >= held_until
    held_values = None if held is None or late else held()
    if held_values is not None:
        joined = complete_from_held(layout, problem, values, s, held_values)
        if joined is not None:
            return RollingPlan(values=joined, row_duals=duals, planned_kernels=s,
                               completed_from_held=True)
    return _complete(layout, values, duals, s)


def _complete(layout: ModelLayout, values: np.ndarray, duals: np.ndarray,
              s: int) -> RollingPlan | None:
    """The decisions before kernel ``s``, every later slot in its least-occupancy state
    (a last slot with steady-state rows: the least one holding the first slot's pools
    that a synchronous edge reaches from the slot before).

    Each later transition takes the synchronous edge joining its two slots' states;
    ``None`` when one has none. Every slice kept room for these states (its far
    capacity rows hold them), so the verifier should accept the plan; callers check
    it all the same.
    """
    later = layout.col_anchor >= s
    out, _ = _joined(layout, np.where((layout.kind == SLOT) & later, layout.least,
                                      np.round(values)), later)
    if out is None:
        logger.info("rolling: the plan before kernel %d cannot be joined to the rest", s)
        return None
    return RollingPlan(values=out, row_duals=duals, planned_kernels=s)


def complete_from_held(layout: ModelLayout, problem: MatrixProblem, values: np.ndarray, s: int,
                       held: np.ndarray) -> np.ndarray | None:
    """A complete plan joining the decisions before kernel ``s`` (``values``, a partial
    stretch plan) to a held complete plan (``held``, its values in the same model).

    Every slot anchored at ``s`` or later takes the state ``held`` gives it (its
    least-occupancy one where the reductions closed that state). A slot decided before
    ``s`` that still holds a bounded pool at ``s`` takes, of its decided state and the
    held plan's, the one whose pools the other holds too (else its least state): from
    ``s`` on no tensor then holds a pool the held plan does not, so the held plan's room
    is there, and before ``s`` no slot holds more than the stretches decided. Each
    transition into those slots takes the synchronous edge joining its slots (a slot no
    open edge joins in its held state takes its least one), every last slot with
    steady-state rows the least state holding its first slot's pools; where that still
    overflows a pool (the step's end, where tensors return to the pools the stretches
    chose for them), slots from the held plan holding it there take their least states
    (:func:`_overflowing`). A heuristic, not an optimum: what the stretches could not plan
    in time takes the held plan's decisions rather than the slowest pool (chain:20000 at
    load 3: stretches to kernel 2,000 of 20,000, and the least completion was slower than
    greedy's plan). ``None`` when it does not join up within the rows.
    """
    slots = layout.kind == SLOT
    slot_of = np.maximum(layout.slot, 0)
    n_slots = int(layout.slot.max()) + 1 if layout.slot.size else 0
    prefix = np.round(values)
    open_held = slots & layout.open_state & (np.asarray(held) > 0.5)
    spans = [_slot_spans(layout, q) for q in range(len(layout.pool_rows))]
    # slots decided before s still holding a bounded pool at s (the boundary before it)
    crossing = np.zeros(n_slots, dtype=bool)
    for _, leaves, size in spans:
        at = slots & (layout.col_anchor < s) & (prefix > 0.5) & (size > 0) & (leaves >= 2 * s)
        crossing[layout.slot[at]] = True
    decided = np.full(n_slots, -1, dtype=np.int64)
    decided[layout.slot[slots & (prefix > 0.5)]] = layout.state[slots & (prefix > 0.5)]
    theirs = np.full(n_slots, -1, dtype=np.int64)
    theirs[layout.slot[open_held]] = layout.state[open_held]
    least = np.full(n_slots, -1, dtype=np.int64)
    least[layout.slot[slots & (layout.least > 0.5)]] = layout.state[slots & (layout.least > 0.5)]
    known = (decided >= 0) & (theirs >= 0)
    ours_within = known & layout.covers[np.maximum(decided, 0), np.maximum(theirs, 0)]
    theirs_within = known & layout.covers[np.maximum(theirs, 0), np.maximum(decided, 0)]
    slot_first = np.zeros(n_slots, dtype=np.int64)
    slot_first[layout.slot[slots]] = layout.col_anchor[slots]
    wanted = np.where(slot_first >= s, theirs, decided)
    wanted[crossing] = np.where(ours_within, decided,
                                np.where(theirs_within, theirs, least))[crossing]
    wanted[wanted < 0] = least[wanted < 0]
    rejoin = (layout.col_anchor >= s) | (
        ((layout.kind == EDGE) | layout.last_slot) & crossing[slot_of])
    for _ in range(_REPAIR_ROUNDS):
        chosen = np.where(slots, (layout.state == wanted[slot_of]).astype(np.float64), prefix)
        out, unjoined = _joined(layout, chosen, rejoin)
        if out is None:
            if not (wanted[unjoined] != least[unjoined]).any():
                return None
            wanted[unjoined] = least[unjoined]  # no open edge reaches the state wanted
            continue
        from_held = slots & (layout.col_anchor >= s) & (wanted[slot_of] != least[slot_of])
        over = _overflowing(layout, problem, out, from_held, spans)
        if over is None:
            return out if _fits(layout, problem, out) else None
        if not over.size:
            return None
        wanted[layout.slot[over]] = least[layout.slot[over]]  # these free the pool there
    return None


def _slot_spans(layout: ModelLayout, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column, for bounded pool ``q`` (its :attr:`~ModelLayout.pool_rows` order): the
    position of the half step where its bytes enter the pool, where they leave it (the
    number of half steps when never), and how many they are (0: none)."""
    rows = layout.rows[layout.pool_rows[q]].tocoo()
    n_cols, n_half = layout.kind.size, layout.pool_rows[q].size
    enters = np.full(n_cols, n_half, dtype=np.int64)
    leaves = np.full(n_cols, n_half, dtype=np.int64)
    size = np.zeros(n_cols)
    entering = rows.data < 0  # the row of half step h: O[h] - O[h-1] - (what enters) ...
    np.minimum.at(enters, rows.col[entering], rows.row[entering])
    size[rows.col[entering]] = -rows.data[entering]
    np.minimum.at(leaves, rows.col[~entering], rows.row[~entering])
    return enters, leaves, size


def _overflowing(layout: ModelLayout, problem: MatrixProblem, out: np.ndarray,
                 from_held: np.ndarray,
                 spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """``None`` when ``out`` keeps every bounded pool within its capacity; else the slot
    columns taken from the held plan (``from_held``) to put in their least states so that
    no half step overflows, as far as their own bytes tell: half step by half step, those
    holding the pool there, the largest first, until their bytes cover the excess (an empty
    array when none holds it where a pool overflows)."""
    decisions = np.where(_follows(layout), 0.0, out)
    upper = np.asarray(problem.col_upper)
    taken: list[np.ndarray] = []
    overflows = False
    for (rows, occupancy), (enters, leaves, size) in zip(
            zip(layout.pool_rows, layout.pool_vars, strict=True), spans, strict=True):
        excess = _occupancy(layout, rows, decisions) - upper[occupancy]
        free = from_held & (out > 0.5) & (size > 0)
        h = 0
        while True:
            over = np.flatnonzero(excess[h:] > 1e-6)
            if not over.size:
                break
            overflows = True
            h += int(over[0])
            holding = np.flatnonzero(free & (enters <= h) & (leaves > h))
            if not holding.size:
                return np.zeros(0, dtype=np.int64)
            holding = holding[np.argsort(-size[holding], kind="stable")]
            picked = holding[:int(np.searchsorted(np.cumsum(size[holding]),
                                                  excess[h] - 1e-6)) + 1]
            for j in picked.tolist():
                excess[enters[j]:leaves[j]] -= size[j]
            free[picked] = False
            taken.append(picked)
    return np.concatenate(taken) if overflows else None


_REPAIR_ROUNDS = 32
""":func:`complete_from_held` puts a slot no open edge joins in the state wanted, or one
from the held plan holding a pool where it overflows, in its least state instead, and
tries again, at most this many times (each round can break the join into the tensor's
next slot)."""


def _fits(layout: ModelLayout, problem: MatrixProblem, out: np.ndarray) -> bool:
    """Whether the decisions in ``out`` keep every capacity row (each occupancy, the running
    sum of its half step's changes, within its bounds) and every steady-state row; the
    flow rows hold by construction and the kernel times follow."""
    tolerance = 1e-6
    decisions = np.where(_follows(layout), 0.0, out)
    lower, upper = np.asarray(problem.col_lower), np.asarray(problem.col_upper)
    for rows, occupancy in zip(layout.pool_rows, layout.pool_vars, strict=True):
        held = _occupancy(layout, rows, decisions)
        if ((held > upper[occupancy] + tolerance).any()
                or (held < lower[occupancy] - tolerance).any()):
            return False
    cyclic = np.flatnonzero(layout.cyclic_row)
    activity = layout.rows[cyclic] @ decisions
    return bool(((activity >= np.asarray(problem.row_lower)[cyclic] - tolerance)
                 & (activity <= np.asarray(problem.row_upper)[cyclic] + tolerance)).all())


def _occupancy(layout: ModelLayout, rows: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """Per half step of one bounded pool (its running-sum ``rows``), the bytes the decisions
    hold there (the row of half step h: ``O[h] - O[h-1] - (what enters and leaves) = 0``)."""
    return np.cumsum(-(layout.rows[rows] @ decisions))


def _joined(layout: ModelLayout, out: np.ndarray,
            later: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """``out`` (every slot's state decided) with every ``later`` last slot with steady-state
    rows in the least state holding its first slot's pools and every ``later`` transition
    on the synchronous edge joining its slots, and the slots no open edge joins to the slot
    before (then ``None``, or when a last slot has no such state)."""
    kind = layout.kind
    out = out.copy()
    chosen = np.full(int(layout.slot.max()) + 1 if layout.slot.size else 0, -1, dtype=np.int64)
    held = (kind == SLOT) & (out > 0.5)
    chosen[layout.slot[held]] = layout.state[held]
    none = np.zeros(0, dtype=np.int64)
    if not _end_where_begun(layout, out, chosen, later):
        logger.info("rolling: a tensor cannot end the step where it began it")
        return None, none
    edges = (kind == EDGE) & later
    out[edges] = 0.0
    sync = np.flatnonzero(edges & ~layout.asynchronous & layout.open_state)
    joins = sync[(chosen[layout.slot[sync] - 1] == layout.from_state[sync])
                 & (chosen[layout.slot[sync]] == layout.state[sync])]
    out[joins] = 1.0
    unjoined = np.setdiff1d(np.unique(layout.slot[np.flatnonzero(edges)]), layout.slot[joins])
    return (None if unjoined.size else out), unjoined


def _hold_last_slots(layout: ModelLayout, values: np.ndarray, m: int) -> None:
    """Hold every last slot with steady-state rows from kernel ``m`` on (in ``values``) in
    the least-occupancy state that holds its first slot's pools, as decided in
    ``values``: what the slice then reserves for it where the step ends (the edge into it
    is left to the stretch that reaches it)."""
    slots = layout.kind == SLOT
    chosen = np.full(int(layout.slot.max()) + 1 if layout.slot.size else 0, -1, dtype=np.int64)
    held = slots & (values > 0.5)
    chosen[layout.slot[held]] = layout.state[held]
    _end_where_begun(layout, values, chosen, layout.col_anchor >= m, reachable=False)


def _end_where_begun(layout: ModelLayout, out: np.ndarray, chosen: np.ndarray,
                     later: np.ndarray, *, reachable: bool = True) -> bool:
    """Put every later last slot with steady-state rows (in ``out`` and ``chosen``) in the
    least-occupancy state its bounds allow that holds its first slot's pools (and, when
    ``reachable``, that a synchronous edge reaches from the slot before); ``False`` when
    one has none."""
    lasts = np.flatnonzero(layout.last_slot & later)
    if lasts.size == 0:
        return True
    slot = layout.slot[lasts]
    first = layout.tensor_slots[np.searchsorted(layout.tensor_slots, slot, side="right") - 1]
    ok = layout.covers[chosen[first], layout.state[lasts]] & layout.open_state[lasts]
    if reachable:
        ok &= _reachable(layout, chosen, lasts)
    fits = lasts[ok]
    pick = np.lexsort((fits, layout.state_order[layout.state[fits]], layout.slot[fits]))
    picked = fits[pick][np.diff(layout.slot[fits][pick], prepend=-1) != 0]
    if np.setdiff1d(slot, layout.slot[picked]).size:
        return False
    out[lasts] = 0.0
    out[picked] = 1.0
    chosen[layout.slot[picked]] = layout.state[picked]
    return True


def _reachable(layout: ModelLayout, chosen: np.ndarray, states: np.ndarray) -> np.ndarray:
    """Per state column in ``states``: whether an open synchronous edge leads into it from
    the state ``chosen`` for the slot before (a tensor in the slowest pool alone cannot
    be moved to the fastest alone in one step: the copy keeps its source)."""
    n_states = int(layout.covers.shape[0])
    edges = np.flatnonzero((layout.kind == EDGE) & ~layout.asynchronous & layout.open_state)
    after = layout.slot[edges]
    edges = edges[chosen[after - 1] == layout.from_state[edges]]
    open_keys = layout.slot[edges] * n_states + layout.state[edges]
    return np.isin(layout.slot[states] * n_states + layout.state[states], open_keys)


def _far_capacity(layout: ModelLayout, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The running-sum rows and occupancy variables of half steps ``2m`` on (all pools)."""
    rows = [r[2 * m - 1:] for r in layout.pool_rows]  # position i holds half step i + 1
    vars_ = [v[2 * m - 1:] for v in layout.pool_vars]
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(rows) if rows else empty), (np.concatenate(vars_) if vars_ else empty)


def _with_far_capacity(sub: MatrixProblem, layout: ModelLayout, problem: MatrixProblem, *,
                       m: int, cols: np.ndarray, free: np.ndarray, values: np.ndarray,
                       count_from_the_boundary: bool = True) -> MatrixProblem:
    """``sub`` with the capacity of half steps ``2m`` on, compressed exactly.

    From there on only decisions held elsewhere change the bytes held, except where a
    slot of the slice ends: between two such *breakpoints* the held bytes are the
    slice's (one new variable per breakpoint) plus a known amount, so each breakpoint's
    variable gets the tightest of its half steps' limits less that amount, and one row
    carries it to the next breakpoint. A last slot with steady-state rows is counted
    from the boundary before it (:func:`_from_the_boundary`).
    """
    decision = layout.kind != OCCUPANCY
    held = np.where(~free & decision, values, 0.0)
    held_last = np.where(layout.last_slot & count_from_the_boundary, held, 0.0)
    position = np.full(len(free), -1, dtype=np.int64)
    position[cols] = np.arange(cols.size)
    chains: list[_Chain] = []
    n_new = 0
    for rows_q, vars_q in zip(layout.pool_rows, layout.pool_vars, strict=True):
        if rows_q[2 * m - 1:].size == 0:
            continue
        # the chain starts from the slice's last occupancy variable of the pool
        chain = _breakpoint_chain(layout, problem, rows_q[2 * m - 1:], vars_q[2 * m - 1:],
                                  cols=cols, decision=decision, held=held, held_last=held_last,
                                  link=position[vars_q[2 * m - 2]],
                                  first_column=sub.n_columns + n_new)
        chains.append(chain)
        n_new += chain.rows.shape[0]
    if not chains:
        return sub
    return _with_chains(sub, chains, n_new)


class _Chain(NamedTuple):
    """One pool's far capacity, compressed: a variable and a row per breakpoint."""

    rows: sp.csr_matrix
    """Each breakpoint's row: its variable less the one before (the slice's last
    occupancy variable for the first) less the slice's terms there, equal to 0."""
    lower: np.ndarray
    """Each breakpoint variable's lower bound."""
    upper: np.ndarray
    """Each breakpoint variable's upper bound."""


def _breakpoint_chain(layout: ModelLayout, problem: MatrixProblem, far_rows: np.ndarray,
                      far_vars: np.ndarray, *, cols: np.ndarray, decision: np.ndarray,
                      held: np.ndarray, held_last: np.ndarray, link: int | None,
                      first_column: int, from_the_boundary: bool = True) -> _Chain:
    """The chain of one pool's running-sum rows ``far_rows`` (occupancy variables
    ``far_vars``), its variables numbered from ``first_column`` in the slice, the first
    one following the slice's column ``link`` (``None``: the rows begin at the first half
    step, nothing held before); the held last slots among ``held`` (``held_last``) and,
    with ``from_the_boundary``, the slice's own count from the boundary before them."""
    import scipy.sparse as sp

    lower = np.asarray(problem.col_lower, dtype=np.float64)
    upper = np.asarray(problem.col_upper, dtype=np.float64)
    matrix = layout.rows[far_rows]
    added = -(matrix @ (held - held_last))  # bytes the held decisions add, half step by step
    last = -(matrix @ held_last)
    added[:-1] += last[1:]
    added[0] += last[0]
    known = np.cumsum(added)
    own = matrix[:, cols].tocsr()
    own = own.multiply(decision[cols][np.newaxis, :]).tocsr()
    own.eliminate_zeros()
    if from_the_boundary:
        own = _from_the_boundary(own, layout.last_slot[cols])
    breaks = np.flatnonzero(np.diff(own.indptr) > 0)
    if breaks.size == 0 or breaks[0] != 0:
        breaks = np.concatenate([[0], breaks])
    k = breaks.size
    y = first_column + np.arange(k)
    after = np.arange(k) if link is not None else np.arange(1, k)
    previous = np.concatenate([[] if link is None else [link], y[:-1]]).astype(np.int64)
    chain = sp.csr_matrix(
        (np.concatenate([np.ones(k), -np.ones(after.size)]),
         (np.concatenate([np.arange(k), after]), np.concatenate([y, previous]))),
        shape=(k, first_column + k))
    terms = own[breaks]
    terms = sp.csr_matrix((terms.data, terms.indices, terms.indptr), shape=chain.shape)
    return _Chain(chain + terms, np.maximum.reduceat(lower[far_vars] - known, breaks),
                  np.minimum.reduceat(upper[far_vars] - known, breaks))


def _with_chains(sub: MatrixProblem, chains: list[_Chain], n_new: int) -> MatrixProblem:
    """``sub`` with the chains' ``n_new`` continuous variables and their rows appended."""
    import scipy.sparse as sp

    width = sub.n_columns + n_new
    base = sp.csr_matrix((sub.value, sub.index, sub.start), shape=(sub.n_rows, sub.n_columns))
    base = sp.csr_matrix((base.data, base.indices, base.indptr), shape=(sub.n_rows, width))
    added = sp.vstack([sp.csr_matrix((c.rows.data, c.rows.indices, c.rows.indptr),
                                     shape=(c.rows.shape[0], width)) for c in chains]).tocsr()
    matrix = sp.vstack([base, added]).tocsr()
    zeros = np.zeros(added.shape[0])
    return attrs.evolve(
        sub, cost=np.concatenate([sub.cost, np.zeros(n_new)]),
        col_lower=np.concatenate([sub.col_lower, *(c.lower for c in chains)]),
        col_upper=np.concatenate([sub.col_upper, *(c.upper for c in chains)]),
        is_integer=np.concatenate([sub.is_integer, np.zeros(n_new, dtype=bool)]),
        start=matrix.indptr, index=matrix.indices, value=matrix.data,
        row_lower=np.concatenate([sub.row_lower, zeros]),
        row_upper=np.concatenate([sub.row_upper, zeros]))


def _from_the_boundary(own: sp.csr_matrix, last: np.ndarray) -> sp.csr_matrix:
    """``own`` (far capacity rows by the slice's columns) with the columns marked ``last``
    (reserved last slots: relaxed, at the last kernel) entering one half step earlier.

    Whatever edge leads into a slot, the boundary before it holds the slot's pools (a
    tensor being copied occupies source and target), so the reservation counts there
    too: a later stretch then finds room to bring the tensor back where it began.
    """
    import scipy.sparse as sp

    if not last.any():
        return own
    coo = own.tocoo()
    rows = coo.row.copy()
    moved = last[coo.col] & (rows > 0)
    rows[moved] -= 1
    return sp.csr_matrix((coo.data, (rows, coo.col)), shape=own.shape)
