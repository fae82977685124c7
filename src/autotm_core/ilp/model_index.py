"""Where every decision lives among the model's columns, as the formulation records it.

:func:`~autotm_core.ilp.formulation.build_program` fills a :class:`ModelIndex`:
the slots' state variables and the transitions' edges per tensor (for decoding
and warm starts), the kernel-time, configuration and occupancy variables and
their rows, and, per column, what kind of decision it is and when it is taken
(:class:`Columns`), written down as each column is added.
"""

from __future__ import annotations

import enum

import attrs
import numpy as np

from autotm_core.ilp.gadgets import State, TensorSlots
from autotm_core.ilp.lp import LinearProgram
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.reruns import RerunOption

SECONDS_PER_UNIT = 1e-6
"""Times enter the model in microseconds: latencies (~1e-7 s) would otherwise sit at the
solvers' feasibility tolerance and be silently dropped."""


class ColumnKind(enum.IntEnum):
    """What a column of the model decides (the values stored in :attr:`Columns.kind`)."""

    SLOT = 0
    """Whether a tensor is in one state during one slot (binary)."""
    EDGE = 1
    """Whether a tensor crosses a transition from one state to another (synchronously, or
    by a copy in flight over kernels that do not write the tensor)."""
    TIME = 2
    """The time charged to one kernel (continuous)."""
    OCCUPANCY = 3
    """The pages held in one bounded pool at one half step (continuous)."""
    CONFIG = 4
    """Whether a kernel runs in one configuration of its cost table (table costs only)."""
    RERUN = 5
    """Whether a kernel runs again at one boundary, recomputing its outputs (binary)."""
    FLIGHT = 6
    """The seconds a transition's copies spanning kernels spend on one copy channel during
    one kernel of their flight, or what of them is still to copy after it; or, in an
    interior, how many of its fetches are issued by a kernel, or of the evictions into it
    still copying there (continuous; anchored, like the transition's edges, at its
    kernel)."""
    PEAK = 7
    """At one boundary with reruns: the most the reruns hold at once of their workspaces and
    of the values only reruns there read (pages), or whether one such value is still held
    while one rerun runs (continuous; anchored at the boundary's kernel)."""


@attrs.frozen(slots=True)
class Edge:
    """One way of crossing a transition: from one state to another, at some time."""

    var: int
    """Variable position in the linear program."""
    before: int
    """State index before."""
    after: int
    """State index after."""
    async_kernel: int | None
    """The kernel an asynchronous move is issued at (its :attr:`Move.kernel
    <autotm_core.plans.Move.kernel>`); ``None`` for a synchronous one."""
    until: int | None = None
    """The kernel before which an asynchronous move completes (its flight is
    ``async_kernel .. until - 1``); ``None`` for a synchronous one."""


def _int_array(value: object) -> np.ndarray:
    return np.asarray(value, dtype=np.int64)


@attrs.frozen(kw_only=True, eq=False)
class Columns:
    """Per column of the model (one entry each, in column order): what it decides and when."""

    kind: np.ndarray = attrs.field(converter=lambda v: np.asarray(v, dtype=np.int8))
    """Its :class:`ColumnKind`."""
    anchor: np.ndarray = attrs.field(converter=_int_array)
    """The kernel it belongs to: a slot's first kernel (state variables), the transition's
    kernel (edges), the kernel (kernel time, configuration), ``h // 2`` for half step
    ``h`` (occupancy)."""
    slot: np.ndarray = attrs.field(converter=_int_array)
    """State variables: the slot, numbered over all tensors in :attr:`ModelIndex.tensors`
    order; edges: the slot after the transition; else -1."""
    state: np.ndarray = attrs.field(converter=_int_array)
    """State variables: the state; edges: the state after; else -1."""
    from_state: np.ndarray = attrs.field(converter=_int_array)
    """Edges: the state before; else -1."""
    asynchronous: np.ndarray = attrs.field(converter=lambda v: np.asarray(v, dtype=bool))
    """Whether it is an edge overlapping a kernel."""


SLOT, EDGE, TIME, OCCUPANCY, CONFIG, RERUN, FLIGHT, PEAK = (int(kind) for kind in ColumnKind)
"""The column kinds as plain integers (what :attr:`Columns.kind` holds)."""


class ColumnRecorder:
    """Collects the :class:`Columns` facts of each column as the formulation adds it.

    The formulation extends :attr:`facts` by the six integers ``(kind, anchor, slot,
    state, from_state, asynchronous)`` of each column, in column order (-1 where a fact
    does not apply): one flat list of integers, as the model has hundreds of thousands
    of columns and a tuple kept per column would cost the garbage collector a walk over
    each.
    """

    def __init__(self) -> None:
        self.facts: list[int] = []

    def columns(self) -> Columns:
        """What was recorded, as arrays."""
        table = np.fromiter(self.facts, dtype=np.int64, count=len(self.facts)).reshape(-1, 6)
        return Columns(kind=table[:, 0], anchor=table[:, 1], slot=table[:, 2],
                       state=table[:, 3], from_state=table[:, 4],
                       asynchronous=table[:, 5].astype(bool))


@attrs.define
class ModelIndex:
    """Where every decision lives among the model's variables (for decoding and warm starts)."""

    lp: LinearProgram
    """The model in matrix form."""
    states: tuple[State, ...]
    """The states, indexed as in :attr:`slot_vars`; the last is
    :data:`~autotm_core.ilp.gadgets.DROPPED` (a tensor recomputed later)."""
    tensors: list[TensorSlots]
    """Slots and transitions of every tensor planned."""
    slot_vars: list[list[dict[int, int]]]
    """Per tensor (aligned with :attr:`tensors`), per slot: state index -> variable."""
    edges: list[list[list[Edge]]]
    """Per tensor, per transition: its edges."""
    kernel_time_vars: list[int]
    """``T_k`` of each kernel."""
    kernel_time_rows: list[list[int]]
    """Rows bounding each ``T_k`` from below (``T_k - ... >= rhs``)."""
    config_vars: list[list[int]]
    """Table costs: per kernel, one binary per row of its cost table (empty for separable)."""
    config_pools: list[np.ndarray]
    """Table costs: per kernel, its configurations (one row each: the pool of each of its
    tensors, in kernel order); empty for separable costs."""
    occupancy_vars: dict[int, list[int]]
    """Per bounded pool: the occupancy variable of each half step (index 0 unused: -1)."""
    occupancy_rows: dict[int, list[int]]
    """Per bounded pool: the running-sum row of each half step (index 0 unused: -1)."""
    capacities: list[np.ndarray | None]
    """Per pool: the limit at each kernel, ``None`` when unbounded."""
    options: FormulationOptions
    """The options the model was built with."""
    nbytes_per_unit: int
    """Bytes per unit of the capacity rows (a page, or a power-of-two multiple of it:
    :func:`~autotm_core.ilp.formulation.occupancy_unit`; sizes are whole pages of
    :attr:`~autotm_core.ilp.options.FormulationOptions.page_nbytes`)."""
    columns: Columns
    """Per column: its kind, anchor kernel, slot and states (recorded while building)."""
    cyclic_rows: list[int]
    """The steady-state rows: per tensor that exists before the step and survives it, and
    per pool its first slot may hold, ``sum(first slot's states holding the pool) -
    sum(last slot's states holding it) <= 0``."""
    reruns: list[tuple[int, RerunOption]] = attrs.field(factory=list)
    """The rerun options' binaries: (variable, option), in the order reruns run."""
    peaks: list[tuple[int, list[int]]] = attrs.field(factory=list)
    """The :data:`PEAK` variables with their rows (each at least what a row asks), in an
    order where a variable's rows hold only decisions and variables before it."""
    seconds_per_unit: float = SECONDS_PER_UNIT
    """Seconds per unit of the objective and the kernel-time variables."""

    def objective_seconds(self, objective: float) -> float:
        """The model's objective value in seconds."""
        return objective * self.seconds_per_unit

    @property
    def n_variables(self) -> int:
        """Variables of the model."""
        return self.lp.n_vars

    @property
    def n_constraints(self) -> int:
        """Rows of the model."""
        return self.lp.n_rows

    @property
    def tensor_slots(self) -> np.ndarray:
        """Per tensor planned, where its slots begin in the numbering of
        :attr:`Columns.slot`; one more entry: the number of slots."""
        counts = [len(ts.slots) for ts in self.tensors]
        return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
