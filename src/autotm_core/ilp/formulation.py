"""The ILP, as a pure function of (graph, costs, memory system, capacities, options).

For every tensor, binary state variables per slot (:mod:`autotm_core.ilp.gadgets`)
and one variable per way of crossing each transition (an edge between two states,
synchronous or overlapping a kernel); flow conservation ties them
together. Edges are continuous in the synchronous formulation: with binary states
at both ends, one edge is forced to one and the rest to zero (binary in the
asynchronous one, where HiGHS branches better on them). An asynchronous edge is
binary, one per state pair and window kernel ``j``: a copy in flight from issue to
completion, a fetch issued at ``j`` and complete by the boundary, an eviction
issued at the boundary and complete after ``j`` (and, where that holds a bounded
pool longer, the copy overlapping ``j`` alone too); on large graphs
(:data:`ASYNC_REDUCTION_MIN_KERNELS`) those that can never beat the synchronous
copy (a copy longer than its flight's ceilings by at least the synchronous copy's
time, and no bounded pool spared; see :meth:`_Builder._async_pays`) are left out,
an exact reduction.

- Kernel time: one continuous ``T_k`` per kernel. With separable costs, ``T_k`` is at
  least each affine term of the kernel in its tensors' usable pools; with table
  costs, one binary per allowed configuration, each tensor's pool in it equal to
  where the tensor is usable. Asynchronous moves in flight during ``k`` also bound
  ``T_k``: per copy channel of the memory system, their seconds during ``k`` plus the
  kernel's own reads and writes crossing a link of that channel that carries kernel
  traffic. A one-kernel copy spends all its seconds during its kernel; a spanning
  copy's seconds are spread over its flight by continuous shares
  (:meth:`_Builder._flight_shares`), which the simulator's streams, earliest ``until``
  first, never take longer to copy.
- Capacity, per bounded pool, in running-sum form over half steps (``2k + 1``:
  kernel ``k`` runs; ``2k``: the boundary before it, where synchronous copies hold
  both pools): occupancy ``O[h] = O[h-1] + (what enters at h) - (what left)``, with
  the capacity (less the kernel's workspace in the fastest pool) as ``O``'s bound.
  Sizes are rounded up to pages, and counted in units of a page or a power-of-two
  multiple of it (:func:`occupancy_unit`) that keeps every limit under 2^25 units.
- Steady state: a tensor that exists before the step and survives it ends the step
  holding every pool it began in (per pool, its first slot's states holding the pool
  add up to no more than its last slot's): the next step starts where this one ends.
- Objective: ``sum_k T_k`` plus the seconds of every synchronous move.

Nothing here solves, prints or reads files.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from autotm_core.costs.model import KernelCosts
from autotm_core.errors import CapacityError, PlanError, UsageError
from autotm_core.ilp.gadgets import (
    DROPPED,
    Slot,
    State,
    TensorSlots,
    allowed_states,
    move_sources,
    states_for,
    tensor_slots,
)
from autotm_core.ilp.lp import LinearProgram, to_matrix_problem
from autotm_core.ilp.model_index import (
    CONFIG,
    EDGE,
    FLIGHT,
    OCCUPANCY,
    PEAK,
    RERUN,
    SECONDS_PER_UNIT,
    SLOT,
    TIME,
    ColumnRecorder,
    Edge,
    ModelIndex,
)
from autotm_core.ilp.options import (
    Capacities,
    Formulation,
    FormulationOptions,
    binding_pools,
    resolve_capacities,
)
from autotm_core.ilp.reruns import RerunOption, rerun_options
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.solvers.base import paused_gc
from autotm_core.units import round_up

logger = logging.getLogger(__name__)

ASYNC_REDUCTION_MIN_KERNELS = 1000
"""Asynchronous edges that never pay are left out of graphs of at least this many kernels
only. The reduction is exact, but on small models it slowed HiGHS and changed where it
stopped at the gap (example:cnn 1:1: 21.8 s to a 1% gap without it, 36.8 s with it,
stopping at a plan 1% slower); at Inception v4 b64 (1,627 kernels) it leaves out 15% of
the asynchronous edges."""


MAX_OCCUPANCY_UNITS = 2**25
"""The capacity rows count bytes in units that keep the largest limit under this many
(3.4e7): a limit of 98 GiB counted in bytes (no pages: plans without addresses) is 1e11,
1e17 times the solvers' feasibility tolerance, and HiGHS then called a plan of GPT-2 at
batch 256 optimal (3.766 s, its bound the same) in its presolve, where the same model held
a plan of 2.901 s; in 4 KiB pages (2.6e7 units) it bounds the same model at 0.89 s. Limits
under it keep their units (every model with addresses up to 128 GiB: the page), so their
models are unchanged."""
MAX_OCCUPANCY_UNIT_NBYTES = 2**19
"""Units no larger than this (unless a page is): the solvers' feasibility tolerance (1e-6
of a unit) stays under a byte, so no plan the model takes overflows a limit."""


def occupancy_unit(capacities: Sequence[np.ndarray | None], page_nbytes: int) -> int:
    """Bytes per unit of the capacity rows: ``page_nbytes`` doubled until the largest limit
    in ``capacities`` (those of the pools whose rows the model has) is at most
    :data:`MAX_OCCUPANCY_UNITS` units (or the unit :data:`MAX_OCCUPANCY_UNIT_NBYTES`)."""
    largest = max((float(np.max(cap)) for cap in capacities if cap is not None and len(cap)),
                  default=0.0)
    unit = page_nbytes
    while largest > MAX_OCCUPANCY_UNITS * unit and 2 * unit <= MAX_OCCUPANCY_UNIT_NBYTES:
        unit *= 2
    return unit


class _Pair(NamedTuple):
    """A kept (state before, state after) pair of a transition and its synchronous move."""

    before: int
    """State index before."""
    after: int
    """State index after."""
    cost: float
    """Objective units of the synchronous copies."""
    held: frozenset[int]
    """Pools holding the tensor at the boundary (both ends of each copy)."""
    moved: bool
    """Whether anything is copied (else there is no asynchronous variant)."""


class _Tensor(NamedTuple):
    """What one tensor's slots and transitions are built from."""

    slots: TensorSlots
    """Its slots and transitions."""
    nbytes: int
    """Its size in bytes."""
    size: float
    """Its size in the capacity rows' units (whole pages, in :func:`occupancy_unit`)."""
    first: int
    """The number of its first slot, over all tensors."""


def build_model(graph: Graph, costs: KernelCosts, system: MemorySystem,
                capacities: Capacities | None = None,
                options: FormulationOptions | None = None,
                ) -> tuple[Any, ModelIndex]:  # Any: a Pyomo ConcreteModel (Pyomo is untyped)
    """The Pyomo model of the plan problem and the index of its variables.

    The model is :func:`~autotm_core.solvers.pyomo.to_pyomo` of the same matrix
    :func:`build_program` writes (variables ``model.x[j]`` are the index's columns),
    for users who extend it; solve it with :func:`~autotm_core.solvers.pyomo.solve_pyomo`.
    """
    from autotm_core.solvers.pyomo import to_pyomo

    index = build_program(graph, costs, system, capacities, options)
    return to_pyomo(to_matrix_problem(index.lp, name=graph.name)), index


def build_program(graph: Graph, costs: KernelCosts, system: MemorySystem,
                  capacities: Capacities | None = None,
                  options: FormulationOptions | None = None) -> ModelIndex:
    """The model in matrix form (:class:`LinearProgram`) with its index; see :func:`build_model`."""
    options = options or FormulationOptions()
    if costs.n_pools != len(system.pools):
        raise UsageError(
            f"the kernel costs are for {costs.n_pools} pools; {system.name!r} has "
            f"{len(system.pools)}",
            hint="compute the costs for this memory system",
        )
    capacities_at = resolve_capacities(graph, system, capacities)
    with paused_gc():
        return _Builder(graph, costs, system, capacities_at, options).build()


class _Builder:
    def __init__(self, graph: Graph, costs: KernelCosts, system: MemorySystem,
                 capacities: list[np.ndarray | None], options: FormulationOptions) -> None:
        self.graph, self.costs, self.system, self.options = graph, costs, system, options
        self.capacities = capacities
        self.live = graph.liveness
        self.n = len(graph.kernels)
        self.states = states_for(len(system.pools))
        self.lp = LinearProgram()
        self.recorder = ColumnRecorder()
        self.record = self.recorder.facts.extend  # six facts per column, as it is added
        self.n_slots = 0  # slots numbered over all tensors, in order
        self.page = options.page_nbytes
        self.bounded = binding_pools(graph, capacities, self.page)
        # bytes per unit of occupancy, from the limits the capacity rows hold
        self.unit = occupancy_unit([capacities[q] for q in self.bounded], self.page)
        # Exact edge reductions (see :meth:`_dominated`) are proven for two pools, synchronous.
        self.reduce = (options.reduce and len(system.pools) == 2
                       and options.formulation is Formulation.SYNCHRONOUS)
        self.slow_unbounded = len(system.pools) - 1 not in self.bounded
        # Per bounded pool, per half step: (variable, bytes) terms of the change in occupancy.
        self.deltas: dict[int, list[list[tuple[int, float]]]] = {
            q: [[] for _ in range(2 * self.n + 2)] for q in self.bounded
        }
        self.config_pools: list[np.ndarray] = []
        # per kernel, per copy channel: (variable, objective units) of its overlapping copies
        self.async_load: list[dict[int, list[tuple[int, float]]]] = [{} for _ in range(self.n)]
        self.channels = system.link_channels
        self.traffic = system.kernel_traffic_seconds_per_byte()
        self.at_kernel: dict[tuple[int, int], dict[int, int]] = {}
        self.time = 1.0 / SECONDS_PER_UNIT
        # Transitions repeat (21,653 in a 5,000-kernel chain, 55 distinct): see :meth:`_pairs`.
        self.pairs: dict[tuple[int, tuple[int, ...], tuple[int, ...], bool, bool],
                         list[_Pair]] = {}
        self.cyclic_rows: list[int] = []
        # the exact reduction of asynchronous edges (see :meth:`_async_pays`) needs one channel
        reduce_async = (options.formulation is Formulation.ASYNCHRONOUS and options.reduce
                        and int(self.channels.max()) == 0
                        and self.n >= ASYNC_REDUCTION_MIN_KERNELS)
        self.ceilings = self._ceiling_sums() if reduce_async else None
        self.dominated_async = 0  # asynchronous edges left out
        self.reruns = rerun_options(graph, costs, system, options)
        self.dropped = len(self.states)  # the index of DROPPED among the model's states
        self.fast_only = 0  # the state "in the fastest pool alone" (what a rerun writes)
        self.rerun_var: dict[tuple[int, int], int] = {}
        self.peaks: list[tuple[int, list[int]]] = []  # see ModelIndex.peaks
        # per (tensor, boundary): (variable, pools held) of the edges crossing it there
        self.held_at: dict[tuple[int, int], list[tuple[int, frozenset[int]]]] = {}
        self.restores: list[tuple[int, int, int]] = []  # (edge variable, kernel, boundary)
        self.static_cut = options.formulation is Formulation.STATIC

    def build(self) -> ModelIndex:
        o = self.options
        slots = tensor_slots(self.graph, static=o.formulation is Formulation.STATIC,
                             asynchronous=o.formulation is Formulation.ASYNCHRONOUS,
                             window=o.async_window, boundaries=self.reruns.boundaries)
        reruns = self._rerun_columns()
        slot_vars, edges = [], []
        for ts in slots:
            sv, ed = self._tensor(ts)
            slot_vars.append(sv)
            edges.append(ed)
        self._rerun_rows(slots, slot_vars)
        if self.dominated_async:
            logger.info("%d asynchronous edges left out: they never beat the synchronous copy",
                        self.dominated_async)
        times, time_rows, config_vars = self._kernel_times()
        occ_vars, occ_rows = self._capacity()
        return ModelIndex(self.lp, (*self.states, DROPPED), slots, slot_vars, edges, times,
                          time_rows, config_vars, self.config_pools, occ_vars, occ_rows,
                          self.capacities, o, self.unit, self.recorder.columns(),
                          self.cyclic_rows, reruns, self.peaks)

    # -- reruns ---------------------------------------------------------------

    def _rerun_columns(self) -> list[tuple[int, RerunOption]]:
        """One binary per rerun option, charged its kernels' time, holding its outputs that a
        kernel from its boundary on reads in the fastest pool at the boundary; the others
        and the workspaces count in the boundary's peak (:meth:`_rerun_peak`)."""
        out = []
        live = self.live
        for option in self.reruns.options:
            var = self.lp.add_var(ub=1.0, binary=True, cost=self.time * option.seconds)
            self.record((RERUN, option.before, -1, -1, -1, 0))
            self.rerun_var[option.kernel, option.before] = var
            held = sum(round_up(int(live.nbytes[t]), self.page) for t in option.outputs
                       if int(live.last[t]) >= option.before)
            h = 2 * option.before
            self._occupy(h, h, held / self.unit, [(var, frozenset({0}))])
            out.append((var, option))
        by_boundary: dict[int, list[tuple[int, RerunOption]]] = {}
        for var, option in out:
            by_boundary.setdefault(option.before, []).append((var, option))
        for b, here in by_boundary.items():
            self._rerun_peak(b, here)
        return out

    def _rerun_peak(self, b: int, here: list[tuple[int, RerunOption]]) -> None:
        """The peak of the reruns at the boundary before ``b`` (``here``: the options there),
        as the plan rules count it: while the kernel at each position runs, its workspace
        and the outputs no kernel from ``b`` on reads that a rerun so far wrote and that it
        or a later rerun there reads or writes. One variable at least each position's sum;
        a value read by more than one later option is held while any of them is chosen (a
        variable at least each; an option reading such a value needs its producer's rerun,
        :meth:`_rerun_rows`)."""
        graph, live, lp = self.graph, self.live, self.lp
        run_by: dict[int, int] = {}  # kernel -> its option's variable
        for var, option in here:
            for k in option.runs:
                run_by[k] = var
        positions = sorted(run_by)
        terms: dict[int, list[tuple[int, float]]] = {
            q: [(run_by[q], round_up(int(live.workspace_nbytes[q]), self.page) / self.unit)]
            for q in positions if live.workspace_nbytes[q]}
        for var, option in here:
            for t in option.outputs:
                if int(live.last[t]) >= b:
                    continue
                name, size = graph.tensors[t].name, round_up(int(live.nbytes[t]), self.page)
                own = max(k for k in option.runs if name in graph.kernels[k].tensors)
                readers = sorted(
                    (max(k for k in other.runs if name in graph.kernels[k].tensors), v)
                    for v, other in here if v != var and t in other.inputs)
                still: dict[frozenset[int], int] = {}
                for q in positions:
                    if q < option.kernel:
                        continue
                    if q <= own:
                        holder = var
                    else:
                        later = frozenset(v for r, v in readers if r >= q)
                        if not later:
                            break
                        if len(later) == 1:
                            holder = next(iter(later))
                        elif later in still:
                            holder = still[later]
                        else:
                            holder = still[later] = lp.add_var(ub=1.0)
                            self.record((PEAK, b, -1, -1, -1, 0))
                            self.peaks.append((holder, [lp.add_row([holder, v], [1.0, -1.0],
                                                                   lb=0.0) for v in later]))
                    terms.setdefault(q, []).append((holder, size / self.unit))
        if not terms:
            return
        peak = lp.add_var()
        self.record((PEAK, b, -1, -1, -1, 0))
        rows = []
        for q in positions:
            if q in terms:
                summed: dict[int, float] = {}  # a variable once a row
                for v, c in terms[q]:
                    summed[v] = summed.get(v, 0.0) + c
                rows.append(lp.add_row([peak, *summed], [1.0, *(-c for c in summed.values())],
                                       lb=0.0))
        self.peaks.append((peak, rows))
        h = 2 * b
        self._occupy(h, h, 1.0, [(peak, frozenset({0}))])

    def _rerun_rows(self, slots: list[TensorSlots], slot_vars: list[list[dict[int, int]]]) -> None:
        """Each restore only with its rerun; each rerun only with every input in the fastest
        pool at its boundary: kept there, or rerun there first."""
        lp = self.lp
        for edge, kernel, boundary in self.restores:
            lp.add_row([self.rerun_var[kernel, boundary], edge], [1.0, -1.0], lb=0.0)
        if not self.reruns.options:
            return
        planned = {ts.tensor: (ts, sv) for ts, sv in zip(slots, slot_vars, strict=True)}
        producer = self.live.producer
        for option in self.reruns.options:
            b = option.before
            r = self.rerun_var[option.kernel, b]
            for u in option.inputs:
                cols = [v for v, pools in self.held_at.get((u, b), ()) if 0 in pools]
                if (u, b) not in self.held_at and u in planned:
                    ts, sv = planned[u]
                    for slot, xs in zip(ts.slots, sv, strict=True):
                        if slot.first <= b - 1 and slot.last >= b:
                            cols.extend(v for st, v in xs.items()
                                        if st != self.dropped and 0 in self.states[st].pools)
                again = self.rerun_var.get((int(producer[u]), b))
                if again is not None:
                    cols.append(again)
                lp.add_row([*cols, r], [1.0] * len(cols) + [-1.0], lb=0.0)

    def _pairs(self, nbytes: int, before: tuple[int, ...], after: tuple[int, ...], *,
               interior: bool, reducible: bool = True) -> list[_Pair]:
        """The (state before, state after) pairs a transition keeps, with their synchronous moves
        (``reducible``: the exact edge reductions apply to the tensor).

        A pure function of its arguments, so computed once per distinct set of them.
        """
        key = (nbytes, before, after, interior, reducible)
        pairs = self.pairs.get(key)
        if pairs is None:
            pairs = []
            allows = set(after)
            for s in before:
                for s2 in after:
                    a, b = self.states[s], self.states[s2]
                    if self.static_cut and s != s2:
                        continue  # static: a tensor cut for reruns keeps its state
                    if reducible and self._dominated(a, b, interior=interior,
                                                     after_allows=allows):
                        continue
                    sync = move_sources(self.system, nbytes, a, b, asynchronous=False)
                    pairs.append(_Pair(s, s2, self.time * sum(m[2] for m in sync),
                                       (a.pools & b.pools) | {m[0] for m in sync} | b.pools,
                                       bool(sync)))
            self.pairs[key] = pairs
        return pairs

    def _dominated(self, a: State, b: State, *, interior: bool, after_allows: set[int]) -> bool:
        """Whether the edge ``a -> b`` can be left out without changing the optimum.

        Two pools, synchronous only (``self.reduce``), the slow pool unbounded. Entering
        an interior (no kernel uses the tensor), a fetch or a new clean copy is never
        better than the same copy at the interior's end, which is a gadget (same cost,
        no more bytes held in the fast pool at any step; the slow pool may hold the
        tensor longer, hence unbounded), so the tensor only stays or is evicted to the
        slow pool. Dropping a clean copy the next slot could keep is never better than
        keeping it (the same bytes in the fast pool, later evictions free, and a last
        slot holding more pools only helps the steady-state rows).
        """
        if not self.reduce or not self.slow_unbounded:
            return False
        slowest = len(self.system.pools) - 1
        if interior and not (b.pools <= a.pools or b == self.states[-1]):
            return True
        if not b.clean_copy and b.usable != slowest:
            kept = self.states.index(State(b.pools | {slowest}, b.usable, True))
            if kept in after_allows and (a.clean_copy or a.usable == slowest):
                return True
        return False

    # -- tensors --------------------------------------------------------------

    def _tensor(self, ts: TensorSlots) -> tuple[list[dict[int, int]], list[list[Edge]]]:
        """Add ``ts``'s columns and rows: per slot its state variables, per transition its
        edges (columns in that order, slot by slot, then transition by transition), and
        its steady-state rows; their bytes go to the occupancy deltas."""
        t = ts.tensor
        nbytes = int(self.live.nbytes[t])
        tensor = _Tensor(ts, nbytes, round_up(nbytes, self.page) / self.unit, self.n_slots)
        self.n_slots += len(ts.slots)
        allowed = allowed_states(self.graph, self.system, self.options, t)
        users = self.live.use_kernels[self.live.use_ptr[t]:self.live.use_ptr[t + 1]].tolist()
        slot_vars = [self._slot(tensor, i, self._begins(ts, allowed) if i == 0 else allowed,
                                users) for i in range(len(ts.slots))]
        all_edges = [self._transition(tensor, i, slot_vars[i], slot_vars[i + 1])
                     for i in range(len(ts.transitions))]
        for i in range(1, len(ts.transitions)):
            if not ts.slots[i].gadget:
                self._evicted_before_fetched(all_edges[i - 1], ts.transitions[i - 1].kernel,
                                             all_edges[i], ts.transitions[i].kernel)
        if ts.cyclic and len(slot_vars) > 1:
            self._steady_state(slot_vars[0], slot_vars[-1])
        return slot_vars, all_edges

    def _begins(self, ts: TensorSlots, allowed: list[int]) -> list[int]:
        """The states ``ts`` may begin the step in: ``allowed`` less those holding a pool that
        :attr:`~autotm_core.ilp.options.FormulationOptions.begin_outside` bars it from (all
        of ``allowed`` when that would leave none)."""
        if not ts.cyclic or not self.options.begin_outside:
            return allowed
        name = self.graph.tensors[ts.tensor].name
        barred = {self.system.pool_index(p) for p, names in self.options.begin_outside.items()
                  if name in names}
        begins = [s for s in allowed if not (self.states[s].pools & barred)]
        return begins or allowed

    def _slot(self, tensor: _Tensor, i: int, allowed: list[int],
              users: list[int]) -> dict[int, int]:
        """Add slot ``i``'s state variables (the first slot's adding up to one) and hold its
        bytes over the slot; state -> variable."""
        states, slot = self.states, tensor.slots.slots[i]
        ok = [s for s in allowed if not (slot.writes and states[s].clean_copy)]
        if not ok:  # only clean-copy states allowed but the tensor is written here
            ok = allowed
        droppable = tensor.slots.tensor in self.reruns.droppable
        if i and (slot.boundary or not slot.gadget) and droppable:
            ok = [*ok, self.dropped]
        xs = {s: self.lp.add_var(binary=True) for s in ok}
        for s in ok:
            self.record((SLOT, slot.first, tensor.first + i, s, -1, 0))
        real = {s: v for s, v in xs.items() if s != self.dropped}
        if i == 0:  # later slots are in one state through flow conservation
            self.lp.add_row(list(xs.values()), [1.0] * len(xs), lb=1.0, ub=1.0)
        if slot.gadget:
            for k in users:
                if slot.first <= k <= slot.last:
                    self.at_kernel[tensor.slots.tensor, k] = xs
        self._occupy(2 * slot.first + 1, 2 * slot.last + 1, tensor.size,
                     [(v, states[s].pools) for s, v in real.items()])
        return xs

    def _transition(self, tensor: _Tensor, i: int, before: dict[int, int],
                    after: dict[int, int]) -> list[Edge]:
        """Add transition ``i``'s edges (each kept pair's synchronous edge, then its
        asynchronous ones), the flow rows joining them to the slots on either side, and
        the bytes held at the boundary; its edges."""
        tr = tensor.slots.transitions[i]
        use_async = bool(tr.async_kernels)
        edges: list[Edge] = []
        boundary: list[tuple[int, frozenset[int]]] = []
        interior = not tensor.slots.slots[i + 1].gadget
        dropped = self.dropped
        real_before = tuple(s for s in before if s != dropped)
        real_after = tuple(s for s in after if s != dropped)
        # the reductions' proofs know no rerun reading the tensor or restoring it
        reducible = tensor.slots.tensor not in self.reruns.boundaries
        # per (eviction side, copy channel): (edge, objective units, kernel) of the spanning copies
        flights: dict[tuple[bool, int], list[tuple[int, float, int]]] = {}
        for pair in self._pairs(tensor.nbytes, real_before, real_after, interior=interior,
                                reducible=reducible):
            # binary with asynchronous edges: flow conservation would leave it 0 or 1
            # anyway, but HiGHS branches better on it (continuous: example:cnn 1:1 took
            # 47 s to a 1% gap against 22 s, stopping at a plan 1% slower)
            var = self.lp.add_var(ub=1.0, binary=use_async, cost=pair.cost)
            self.record((EDGE, tr.kernel, tensor.first + i + 1, pair.after, pair.before, 0))
            edges.append(Edge(var, pair.before, pair.after, None))
            boundary.append((var, pair.held))
            if pair.moved and use_async:
                self._async_edges(tensor, i, pair, edges, boundary, flights)
        for (evicting, channel), copies in flights.items():
            self._flight_shares(tr.kernel, evicting, channel, copies)
        if dropped in after or dropped in before:
            self._drop_edges(tensor, i, before, after, edges)
        if not reducible:  # a tensor reruns read or restore: _rerun_rows reads these
            self.held_at[tensor.slots.tensor, tr.kernel] = boundary
        for s, xs_var in before.items():
            out = [e.var for e in edges if e.before == s]
            self.lp.add_row([*out, xs_var], [1.0] * len(out) + [-1.0], lb=0.0, ub=0.0)
        for s2, x2_var in after.items():
            into = [e.var for e in edges if e.after == s2]
            self.lp.add_row([*into, x2_var], [1.0] * len(into) + [-1.0], lb=0.0, ub=0.0)
        self._occupy(2 * tr.kernel, 2 * tr.kernel, tensor.size, boundary)
        return edges

    def _drop_edges(self, tensor: _Tensor, i: int, before: dict[int, int],
                    after: dict[int, int], edges: list[Edge]) -> None:
        """Append to ``edges`` the ways transition ``i`` drops the tensor (free, holding
        nothing from the boundary on), keeps it dropped, or restores it into the fastest
        pool alone by its producer's rerun at this boundary (:meth:`_rerun_rows` ties it
        to the rerun, whose column holds its bytes at the boundary)."""
        tr = tensor.slots.transitions[i]
        dropped, t = self.dropped, tensor.slots.tensor
        producer = int(self.live.producer[t])
        pairs = []
        if dropped in after:
            pairs += [(s, dropped) for s in before]
        if dropped in before and self.fast_only in after \
                and (producer, tr.kernel) in self.rerun_var:
            pairs.append((dropped, self.fast_only))
        for a, b in pairs:
            var = self.lp.add_var(ub=1.0)
            self.record((EDGE, tr.kernel, tensor.first + i + 1, b, a, 0))
            edges.append(Edge(var, a, b, None))
            if a == dropped and b != dropped:
                self.restores.append((var, producer, tr.kernel))

    def _async_edges(self, tensor: _Tensor, i: int, pair: _Pair, edges: list[Edge],
                     boundary: list[tuple[int, frozenset[int]]],
                     flights: dict[tuple[bool, int], list[tuple[int, float, int]]]) -> None:
        """Append to ``edges`` the move of ``pair`` as a copy in flight, for each kernel ``j``
        of transition ``i``'s window where it can pay (:meth:`_async_pays`), with its bytes at
        the boundary (to ``boundary``) and during its flight, and its copies' seconds: on
        their channels during ``j`` (a one-kernel copy), or to ``flights`` (spanning).

        A kernel ``j`` before the boundary ``K`` (in the slot before it: an interior, or the
        gadget's own kernel, which does not write the tensor) issues a fetch there, complete
        before ``K``; a kernel ``j >= K`` (in the slot after it: an interior, or the last
        kernel, which reads the tensor, if at all, from ``a``'s pool: ``b`` then only adds
        slower ones) is where an eviction issued at ``K`` completes. A spanning copy holds
        its source until it completes and its destination from issue; where that holds a
        bounded pool longer, the one-kernel copy during ``j`` is offered too."""
        tr = tensor.slots.transitions[i]
        a, b = self.states[pair.before], self.states[pair.after]
        moves = move_sources(self.system, tensor.nbytes, a, b, asynchronous=True)
        seconds = self.time * sum(m[2] for m in moves)
        used_after = (tensor.slots.tensor, tr.kernel) in self.at_kernel
        held_longer_evicting = any(q in self.bounded for q in b.pools - a.pools)
        held_longer_fetching = any(q in self.bounded for q in a.pools - b.pools)
        # a one-kernel copy out of the interior frees its source there: only in the interior's
        # second half (as AutoTM), so that what frees a pool before the boundary's stretch is
        # decided with the eviction before it (the approximate planner's completions rely on
        # it; an eviction's one-kernel copy is the same move made from the other side)
        before_slot = tensor.slots.slots[i]
        half = (before_slot.first + before_slot.last) // 2
        for j in tr.async_kernels:
            after = j >= tr.kernel
            if after and used_after and (a.usable != b.usable or not a.pools <= b.pools):
                # the last kernel reads the tensor: from ``a``'s pool, which ``b`` keeps
                continue
            flight = (tr.kernel, j + 1) if after else (j, tr.kernel)
            if not self.options.async_spans:
                flight = (j, j + 1)
            variants = [flight]
            if flight[1] - flight[0] > 1 and (held_longer_evicting if after
                                              else held_longer_fetching and j > half):
                variants.append((j, j + 1))
            for issue, until in variants:
                if not self._async_pays(a, b, issue, until, seconds, pair.cost, evict=after):
                    self.dominated_async += 1
                    continue
                var = self.lp.add_var(ub=1.0, binary=True)
                self.record((EDGE, tr.kernel, tensor.first + i + 1, pair.after, pair.before, 1))
                edges.append(Edge(var, pair.before, pair.after, issue, until))
                boundary.append((var, a.pools if after else b.pools))
                for source, target, copy_seconds in moves:
                    channel = int(self.channels[source, target])
                    if until - issue == 1:
                        self.async_load[issue].setdefault(channel, []).append(
                            (var, self.time * copy_seconds))
                    else:
                        flights.setdefault((after, channel), []).append(
                            (var, self.time * copy_seconds, j))
                if until - issue == 1:
                    overlapped = tensor.slots.slots[i + 1] if after else tensor.slots.slots[i]
                    self._async_occupancy(var, a, b, j, tensor.size, after, overlapped)
                elif after:  # the source is held from the boundary until the copy completes
                    self._occupy(2 * tr.kernel + 1, 2 * j + 1, tensor.size,
                                 [(var, a.pools - b.pools)])
                else:  # the destination is held from issue to the boundary
                    self._occupy(2 * j + 1, 2 * tr.kernel - 1, tensor.size,
                                 [(var, b.pools - a.pools)])

    def _evicted_before_fetched(self, into: list[Edge], evict_anchor: int, out: list[Edge],
                                fetch_anchor: int) -> None:
        """An interior's fetch (an edge of ``out``) is issued only after the eviction into the
        interior (an edge of ``into``) is done: per kernel ``k`` where both could be, the
        evictions still copying during ``k`` and the fetches issued by ``k`` add up to at
        most one.

        Both sums run over ``k`` (``y_k = y_{k-1} + (fetches issued at k)``, ``z_k = z_{k+1} +
        (evictions done after k)``; continuous, each anchored with its own edges, at its
        transition's kernel), so the rows take ``O(window)`` nonzeros, not ``O(window²)``."""
        done = [(e.var, e.until - 1) for e in into if e.until is not None]
        issued = [(e.var, e.async_kernel) for e in out if e.async_kernel is not None]
        if not done or not issued:
            return
        lo, hi = min(k for _, k in issued), max(k for _, k in done)
        if lo > hi:
            return
        fetched = self._running(issued, range(lo, hi + 1), fetch_anchor)
        evicting = self._running(done, range(hi, lo - 1, -1), evict_anchor)[::-1]
        for y, z in zip(fetched, evicting, strict=True):
            self.lp.add_row([y, z], [1.0, 1.0], ub=1.0)

    def _running(self, edges: list[tuple[int, int]], kernels: range, anchor: int) -> list[int]:
        """Per kernel of ``kernels``, in their order, a continuous variable equal to the sum
        of the ``(variable, kernel)`` terms of ``edges`` at it and at every kernel of
        ``kernels`` before it in that order."""
        at_kernel: dict[int, list[int]] = {}
        for v, at in edges:
            at_kernel.setdefault(at, []).append(v)
        lp, out, previous = self.lp, [], None
        for k in kernels:
            here = at_kernel.get(k, [])
            total = lp.add_var()
            self.record((FLIGHT, anchor, -1, -1, -1, 0))
            cols = [total, *here] + ([previous] if previous is not None else [])
            lp.add_row(cols, [1.0] + [-1.0] * (len(cols) - 1), lb=0.0, ub=0.0)
            out.append(total)
            previous = total
        return out

    def _flight_shares(self, kernel: int, evicting: bool, channel: int,
                       copies: list[tuple[int, float, int]]) -> None:
        """Spread the seconds of one transition's spanning copies on ``channel`` over their
        flights: per kernel of the flights, a share ``f_k >= 0`` loading the channel during
        ``k``, and what is still to copy.

        Only one of the copies is taken (flow conservation). Fetches (``evicting`` false) are
        issued at their ``j`` and complete before the boundary ``kernel``: with ``r_k`` what is
        issued and not yet copied after ``k``, ``r_k = r_{k-1} + (issued at k) - f_k >= 0`` and
        ``r_{kernel - 1} = 0``. Evictions are issued at the boundary and complete after their
        ``j``: the same in reverse time, ``p_k = p_{k+1} + (completing at k) - f_k >= 0`` from
        the last ``j`` down to ``p_kernel = 0``. So the copy's seconds are spread over its
        flight alone. Each stream running its copies earliest ``until`` first, every set of
        shares fitting the kernels' times is a schedule the stream meets, so the kernel
        times priced are never below the simulator's."""
        lp = self.lp
        # an edge copying into two pools over links of one channel is listed once per copy:
        # both load the channel, one coefficient for the edge (a solver refuses a row
        # naming a column twice)
        by_kernel: dict[int, dict[int, float]] = {}
        for var, seconds, j in copies:
            issued = by_kernel.setdefault(j, {})
            issued[var] = issued.get(var, 0.0) + seconds
        if evicting:
            order = list(range(max(by_kernel), kernel - 1, -1))  # reverse time, to the boundary
        else:
            order = list(range(min(by_kernel), kernel))
        previous = None
        for n, k in enumerate(order):
            share = lp.add_var()
            self.record((FLIGHT, kernel, -1, -1, -1, 0))
            self.async_load[k].setdefault(channel, []).append((share, 1.0))
            cols, coefs = [share], [1.0]
            for var, seconds in by_kernel.get(k, {}).items():
                cols.append(var)
                coefs.append(-seconds)
            if previous is not None:
                cols.append(previous)
                coefs.append(-1.0)
            if n + 1 < len(order):  # the last one's backlog is 0
                previous = lp.add_var()
                self.record((FLIGHT, kernel, -1, -1, -1, 0))
                cols.append(previous)
                coefs.append(1.0)
            lp.add_row(cols, coefs, lb=0.0, ub=0.0)

    def _kernel_ceilings(self) -> np.ndarray:
        """Per kernel, the most its compute can take (objective units): every tensor in its
        costliest pool. A kernel's time in any plan is at most this or its asynchronous load."""
        separable = self.costs.separable()
        if separable is None:
            return np.array([max((float(s) for s in self.costs.table(k).seconds), default=0.0)
                             for k in range(self.n)]) * self.time
        worst = np.asarray(separable.coefficients, dtype=np.float64).max(axis=2)  # (entries, terms)
        ptr = np.asarray(self.live.kernel_ptr, dtype=np.int64)
        sums = np.zeros_like(np.asarray(separable.constants, dtype=np.float64))
        kernel_of = np.repeat(np.arange(self.n), np.diff(ptr))
        np.add.at(sums, kernel_of, worst)
        return (np.asarray(separable.constants, dtype=np.float64) + sums).max(axis=1) * self.time

    def _ceiling_sums(self) -> np.ndarray:
        """``(n + 1,)``: the running sum of :meth:`_kernel_ceilings` from kernel 0, so the
        ceilings of kernels ``i .. j - 1`` add up to ``sums[j] - sums[i]``."""
        return np.concatenate([[0.0], np.cumsum(self._kernel_ceilings())])

    def _async_pays(self, a: State, b: State, issue: int, until: int, seconds: float,
                    sync_cost: float, *, evict: bool) -> bool:
        """Whether moving ``a -> b`` in flight over kernels ``issue .. until - 1`` (``seconds``
        of copies) can beat the same move made synchronously (``sync_cost``); an edge that
        cannot is left out, an exact reduction.

        The copy lengthens its flight by at least ``seconds`` less the flight's ceilings
        (each kernel's compute with every tensor in its costliest pool; other copies only
        lengthen it more), so when that is no less than ``sync_cost`` it saves no time. Nor
        does it save space when the pools it holds less of are unbounded: an eviction holds
        ``a``'s pools until it completes where the synchronous one holds ``b``'s after the
        boundary, a fetch holds ``b``'s from issue where the synchronous one holds ``a``'s
        until the boundary (and both pools there).
        """
        if self.ceilings is None:
            return True
        ceiling = float(self.ceilings[until] - self.ceilings[issue])
        if seconds - ceiling < sync_cost:
            return True
        spared = (b.pools - a.pools) if evict else (a.pools - b.pools)
        return any(q in self.bounded for q in spared)

    def _steady_state(self, first: dict[int, int], last: dict[int, int]) -> None:
        """Per pool: the first slot's states holding it add up to no more than the last
        slot's (every pool the tensor begins the step in holds its value at the end)."""
        states = self.states
        for q in range(len(self.system.pools)):
            begins = [v for s, v in first.items() if q in states[s].pools]
            if begins:
                ends = [v for s, v in last.items() if q in states[s].pools]
                self.cyclic_rows.append(self.lp.add_row(
                    begins + ends, [1.0] * len(begins) + [-1.0] * len(ends), ub=0.0))

    def _occupy(self, lo: int, hi: int, size: float,
                terms: Sequence[tuple[int, frozenset[int] | set[int]]], sign: float = 1.0) -> None:
        """Add ``size`` bytes per variable in the pools given, over half steps ``lo..hi``."""
        if hi < lo:
            return
        for q in self.bounded:
            delta = self.deltas[q]
            for var, pools in terms:
                if q in pools:
                    delta[lo].append((var, sign * size))
                    delta[hi + 1].append((var, -sign * size))

    def _async_occupancy(self, var: int, a: State, b: State, j: int, size: float, after: bool,
                         slot: Slot) -> None:
        """Correct the occupancy of the ``slot`` whose kernel ``j`` a move overlaps: the slot
        after the boundary (``after``, counted in ``b``), or the one before it (counted in
        ``a``), for a move during ``j``."""
        if after:  # before j the tensor is still in ``a``; at j in both
            self._occupy(2 * slot.first + 1, 2 * j, size, [(var, a.pools)])
            self._occupy(2 * slot.first + 1, 2 * j, size, [(var, b.pools)], -1.0)
            self._occupy(2 * j + 1, 2 * j + 1, size, [(var, a.pools - b.pools)])
        else:  # the slot is in ``a``; from j the copy in ``b`` exists, after j only ``b``
            self._occupy(2 * j + 1, 2 * j + 1, size, [(var, b.pools - a.pools)])
            self._occupy(2 * j + 2, 2 * slot.last + 1, size, [(var, b.pools)])
            self._occupy(2 * j + 2, 2 * slot.last + 1, size, [(var, a.pools)], -1.0)

    # -- kernel times ---------------------------------------------------------

    def _usable(self, tensor: int, kernel: int) -> dict[int, int]:
        try:
            return self.at_kernel[tensor, kernel]
        except KeyError:
            raise PlanError(
                f"internal: tensor #{tensor} has no gadget at kernel #{kernel}") from None

    def _kernel_times(self) -> tuple[list[int], list[list[int]], list[list[int]]]:
        lp, live, states = self.lp, self.live, self.states
        separable = self.costs.separable()
        times: list[int] = []
        rows: list[list[int]] = []
        config_vars: list[list[int]] = []
        for k in range(self.n):
            tk = lp.add_var(cost=1.0)
            self.record((TIME, k, -1, -1, -1, 0))
            times.append(tk)
            k_rows: list[int] = []
            entries = range(int(live.kernel_ptr[k]), int(live.kernel_ptr[k + 1]))
            xs = [self._usable(int(live.kernel_tensors[e]), k) for e in entries]
            if separable is not None:
                config_vars.append([])
                lower = 0.0
                for j in range(separable.constants.shape[1]):
                    cols, coefs = [tk], [1.0]
                    rhs = self.time * float(separable.constants[k, j])
                    for e, x in zip(entries, xs, strict=True):
                        c = {s: self.time * float(separable.coefficients[e, j, states[s].usable])
                             for s in x}
                        base = min(c.values())
                        rhs += base
                        for s, v in x.items():
                            if c[s] - base:
                                cols.append(v)
                                coefs.append(-(c[s] - base))
                    lower = max(lower, rhs)  # every term at its cheapest: a bound on T_k
                    if len(cols) > 1:
                        k_rows.append(lp.add_row(cols, coefs, lb=rhs))
                lp.var_lb[tk] = lower
            else:
                table = self.costs.table(k)
                zs = [lp.add_var(binary=True) for _ in range(len(table.seconds))]
                self.record((CONFIG, k, -1, -1, -1, 0) * len(zs))
                self.config_pools.append(table.configs)
                config_vars.append(zs)
                lp.add_row(zs, [1.0] * len(zs), lb=1.0, ub=1.0)
                seconds = [-self.time * float(s) for s in table.seconds]
                lp.var_lb[tk] = -max(seconds) if seconds else 0.0
                k_rows.append(lp.add_row([tk, *zs], [1.0, *seconds], lb=0.0))
                for i, x in enumerate(xs):
                    column = table.configs[:, i] if len(zs) else np.zeros(0, dtype=np.int8)
                    for p in sorted({states[s].usable for s in x} | set(column.tolist())):
                        picked = [z for z, c in zip(zs, column, strict=True) if c == p]
                        usable = [v for s, v in x.items() if states[s].usable == p]
                        lp.add_row(picked + usable, [1.0] * len(picked) + [-1.0] * len(usable),
                                   lb=0.0, ub=0.0)
            for load in self._channel_loads(k, entries, xs):
                k_rows.append(lp.add_row([tk] + [v for v, _ in load], [1.0] + [-s for _, s in load],
                                         lb=0.0))
            rows.append(k_rows)
        return times, rows, config_vars

    def _channel_loads(self, k: int, entries: range,
                       xs: list[dict[int, int]]) -> list[list[tuple[int, float]]]:
        """Per copy channel busy during kernel ``k``: (variable, objective units) of its
        overlapping copies and of the kernel's own reads and writes it carries (a state
        whose usable pool is across a link with kernel traffic); ``T_k`` is at least each."""
        loads = {c: list(terms) for c, terms in self.async_load[k].items()}
        reads, writes = self.traffic
        if reads.any() or writes.any():
            live, states = self.live, self.states
            for e, x in zip(entries, xs, strict=True):
                nbytes = float(live.nbytes[live.kernel_tensors[e]]) * self.time
                for s, v in x.items():
                    p = states[s].usable
                    if p and live.kernel_reads[e] and reads[p]:
                        loads.setdefault(int(self.channels[p, 0]), []).append(
                            (v, nbytes * float(reads[p])))
                    if p and live.kernel_writes[e] and writes[p]:
                        loads.setdefault(int(self.channels[0, p]), []).append(
                            (v, nbytes * float(writes[p])))
        merged = []
        for c in sorted(loads):  # one coefficient per variable (read and written: both)
            terms: dict[int, float] = {}
            for v, seconds in loads[c]:
                terms[v] = terms.get(v, 0.0) + seconds
            merged.append(list(terms.items()))
        return merged

    # -- capacity -------------------------------------------------------------

    def _capacity(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        lp = self.lp
        workspace = [round_up(int(w), self.page) / self.unit for w in self.live.workspace_nbytes]
        occ_vars: dict[int, list[int]] = {}
        occ_rows: dict[int, list[int]] = {}
        for q in self.bounded:
            cap = self.capacities[q]
            assert cap is not None
            delta = self.deltas[q]
            vars_, rows = [-1], [-1]
            previous = None
            for h in range(1, 2 * self.n):
                k = h // 2
                if h % 2:
                    limit = float(cap[k]) / self.unit - (workspace[k] if q == 0 else 0)
                else:
                    limit = float(min(cap[k - 1], cap[k])) / self.unit
                if limit < 0:
                    raise CapacityError(
                        f"pool {self.system.pools[q].name!r} cannot hold kernel "
                        f"{self.graph.kernels[k].name!r}'s workspace of "
                        f"{round(workspace[k] * self.unit)} bytes",
                        hint=f"give the pool at least {round(workspace[k] * self.unit)} bytes",
                    )
                occ = lp.add_var(lb=0.0, ub=limit)
                self.record((OCCUPANCY, k, -1, -1, -1, 0))
                merged: dict[int, float] = {}
                for var, c in delta[h]:
                    merged[var] = merged.get(var, 0.0) + c
                cols = [occ] + [v for v, c in merged.items() if c]
                coefs = [1.0] + [-c for c in merged.values() if c]
                if previous is not None:
                    cols.append(previous)
                    coefs.append(-1.0)
                rows.append(lp.add_row(cols, coefs, lb=0.0, ub=0.0))
                vars_.append(occ)
                previous = occ
            occ_vars[q], occ_rows[q] = vars_, rows
        return occ_vars, occ_rows

