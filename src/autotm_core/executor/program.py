"""A plan turned into what the run loop executes: replay rows, copies and joins per kernel.

Everything is resolved here, once, so the loop only indexes lists:

- kernel ``k`` reads and writes each tensor at the residency covering ``k`` in
  the pool ``plan.configs[k]`` names (reads first, in ``Kernel.inputs`` order);
- a synchronous move before ``k`` copies from the source residency covering
  ``k - 1`` to the target residency covering ``k``;
- an asynchronous move issued at ``k`` is submitted to the copy thread when ``k``
  starts (those issued at one kernel earliest ``until`` first, the simulator's order; one
  issued later but due sooner still waits for those submitted before it: the copy thread
  is first in, first out) and joined before the first kernel from its ``until`` on that touches the
  tensor or moves it again (a rerun there counting too), and at the latest just after
  its source residency ends (its memory may then be reused). While it is in flight
  (``k .. until-1``) kernels and copies may only read the source (the verifier's rule),
  which needs no wait, so a copy spanning kernels runs on behind them;
- the plan is one step of a loop, run again and again: tensors that exist
  before the step are written with their initial bytes in every residency they
  start in (not those a move fills) before the first step only; before every
  later step only the inputs are written, with that step's data
  (:func:`arrival`). A tensor that exists before the step and survives it
  (parameter, optimizer state, constant) is never written between steps: the
  next step reads it where this one leaves it, so each residency it starts in
  must be the place of the residency in the same pool covering the last kernel
  (:class:`~autotm_core.errors.ExecutionError` otherwise);
- the final bytes of a surviving tensor are those of its last writer: the pool
  its last kernel wrote it to, or the last move into a pool after that;
- a rerun before ``b`` runs after the synchronous moves before ``b`` (the reruns there in
  the plan's order) and reads each input in the fastest pool: an output of an earlier rerun
  at that boundary, else the residency there covering ``b - 1`` and ``b``, else the one a
  synchronous move lands at ``b``, else the one a synchronous move copies out at ``b``
  (each occupies the pool at the boundary; a residency merely ending at ``b - 1`` may share
  its memory with one landing at ``b``); it writes each output where the layout says
  (:attr:`~autotm_core.executor.Layout.rerun_places`). An asynchronous move is joined before
  a rerun that reads or writes its tensor, too.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Sequence

import attrs
import numpy as np
import numpy.typing as npt

from autotm_core.arrays import IntArray
from autotm_core.errors import ExecutionError
from autotm_core.executor.layout import Layout
from autotm_core.executor.rows import FLOPS_PER_ITERATION, READ, SCRATCH, WRITE
from autotm_core.ir import Graph
from autotm_core.plans.model import MoveKind, Plan

ARENA, OFFSET, NBYTES, SEED, KIND = range(5)
"""Columns of a program row (before linking to a space)."""


_STEP_SEED = 0x9E3779B97F4A7C15
"""Odd constant mixed into an input's seed per step (splitmix64's increment)."""


def seed_of(name: str) -> int:
    """A stable signed 64-bit seed for a tensor or workspace name."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little",
                          signed=True)


def arrival(rows: IntArray, step: int) -> IntArray:
    """Linked rows (address, nbytes, seed, kind) of the data arriving before step ``step``.

    Step 0 gets the rows as they are; each later step its own data: every seed
    combined with the step number, so a kernel reading last step's input reads
    different bytes.
    """
    out = rows.copy()
    mixed = (step * _STEP_SEED) & 0xFFFFFFFFFFFFFFFF
    out[:, 2] ^= np.int64(mixed - (1 << 64) if mixed >> 63 else mixed)
    return out


@attrs.frozen(slots=True)
class Copy:
    """One move, resolved: ``nbytes`` from (arena, offset) to (arena, offset)."""

    move: int
    """Position in ``plan.moves``."""
    source: tuple[int, int]
    """Arena index and offset copied from."""
    target: tuple[int, int]
    """Arena index and offset copied to."""
    nbytes: int
    """Bytes copied."""


@attrs.frozen(slots=True, eq=False)
class RerunOps:
    """One rerun of the plan, resolved: its kernel's replay rows at the boundary."""

    rerun: int
    """Position in ``plan.reruns``."""
    kernel: int
    """The kernel it runs again."""
    before: int
    """The kernel it runs just before (after that boundary's synchronous moves)."""
    rows: IntArray
    """``(m, 5)`` replay rows as a kernel's: its inputs' reads where they are at the
    boundary, its outputs' writes where the layout puts them, its workspace."""


@attrs.frozen(slots=True, eq=False)
class Program:
    """What the run loop executes; addresses are (arena index, offset) until linked."""

    rows: IntArray
    """``(m, 5)`` replay rows (columns :data:`ARENA` .. :data:`KIND`), kernel by kernel."""
    kernel_ptr: IntArray
    """``(n_kernels + 1,)`` kernel ``k`` runs rows ``kernel_ptr[k]:kernel_ptr[k+1]``."""
    iterations: IntArray
    """``(n_kernels,)`` compute rounds of each kernel."""
    sync: tuple[tuple[Copy, ...], ...]
    """Synchronous copies before each kernel."""
    asynchronous: tuple[tuple[Copy, ...], ...]
    """Asynchronous copies submitted when each kernel starts."""
    joins: tuple[tuple[int, ...], ...]
    """Moves (positions in ``plan.moves``) to wait for before each kernel."""
    initial: IntArray
    """``(i, 5)`` rows written with their tensor's initial bytes before the first step: every
    residency a tensor existing before the step starts in (not one a move fills)."""
    arriving: IntArray
    """``(a, 5)`` the rows of :attr:`initial` that are inputs: written again before every
    later step, with that step's data (:func:`arrival`)."""
    final: IntArray
    """``(f, 5)`` rows holding the final bytes of each surviving tensor."""
    final_tensors: tuple[str, ...]
    """Tensor of each :attr:`final` row."""
    reruns: tuple[RerunOps, ...] = ()
    """Every rerun of the plan, in its order."""
    reruns_before: tuple[tuple[int, ...], ...] = ()
    """Positions in :attr:`reruns` of the reruns at the boundary before each kernel, in order
    (empty: none anywhere)."""


def _held_at(rows: Sequence[tuple[int, int, int]], k: int) -> bool:
    return any(first <= k <= last for first, last, _ in rows)


def build_program(
    plan: Plan, graph: Graph, layout: Layout, *, flops: Sequence[float] | npt.NDArray[np.float64],
    flops_scale: float = 1.0,
) -> Program:
    """The program of a verified ``plan`` laid out by ``layout``."""
    nbytes = {t.name: t.nbytes for t in graph.tensors}
    n = len(graph.kernels)
    spans: dict[tuple[str, str], list[tuple[int, int, int]]] = collections.defaultdict(list)
    for i, r in enumerate(plan.residencies):
        spans[r.tensor, r.pool].append((r.first, r.last, i))

    def place(tensor: str, pool: str, k: int, why: str) -> tuple[int, int, int]:
        for first, last, i in spans.get((tensor, pool), ()):
            if first <= k <= last:
                arena, offset = layout.residency_places[i]
                return arena, offset, i
        raise ExecutionError(
            f"kernel {graph.kernels[k].name!r} ({k}): tensor {tensor!r} is not resident in pool "
            f"{pool!r} for {why}",
            hint="verify the plan ('python -m autotm_core verify'); the executor follows it as is",
        )

    rows: list[tuple[int, int, int, int, int]] = []
    ptr = [0]
    last_write: dict[str, tuple[int, int, str]] = {}
    for k, kernel in enumerate(graph.kernels):
        pools = dict(zip(kernel.tensors, plan.configs[k], strict=True))
        for name in dict.fromkeys(kernel.inputs):
            arena, offset, _ = place(name, pools[name], k, "its read")
            rows.append((arena, offset, nbytes[name], 0, READ))
        for name in dict.fromkeys(kernel.outputs):
            arena, offset, _ = place(name, pools[name], k, "its write")
            rows.append((arena, offset, nbytes[name], seed_of(name), WRITE))
            last_write[name] = (k, 1, pools[name])
        if k in layout.workspace_places:
            arena, offset = layout.workspace_places[k]
            rows.append((arena, offset, kernel.workspace_nbytes,
                         seed_of(f"workspace:{kernel.name}"), SCRATCH))
        ptr.append(len(rows))

    sync: list[list[Copy]] = [[] for _ in range(n)]
    asyn: list[list[Copy]] = [[] for _ in range(n)]
    joins: list[list[int]] = [[] for _ in range(n + 1)]
    moved_at: dict[str, list[int]] = collections.defaultdict(list)
    for m in plan.moves:
        moved_at[m.tensor].append(m.kernel)
    reruns, reruns_before = _reruns(plan, graph, layout, spans)
    for ops in reruns:  # an asynchronous move is done before a rerun touching its tensor
        for name in (*graph.kernels[ops.kernel].inputs, *graph.kernels[ops.kernel].outputs):
            moved_at[name].append(ops.before)
    landed: set[int] = set()
    for j, m in enumerate(plan.moves):
        is_async = m.kind is MoveKind.ASYNC
        src_k = m.kernel if is_async else m.kernel - 1
        s_arena, s_offset, s_row = place(m.tensor, m.source, src_k, f"move {j} to read")
        t_arena, t_offset, t_row = place(m.tensor, m.target, m.kernel, f"move {j} to write")
        landed.add(t_row)
        copy = Copy(j, (s_arena, s_offset), (t_arena, t_offset), nbytes[m.tensor])
        last_write[m.tensor] = max(last_write.get(m.tensor, (-1, 0, "")),
                                   (m.kernel, 2 if is_async else 0, m.target))
        if not is_async:
            sync[m.kernel].append(copy)
            continue
        asyn[m.kernel].append(copy)
        join = min(plan.residencies[s_row].last + 1, n)
        uses = graph.liveness.use_kernels[graph.liveness.use_ptr[graph.tensor_index[m.tensor]]:
                                          graph.liveness.use_ptr[graph.tensor_index[m.tensor] + 1]]
        later = uses[uses >= m.until]
        if len(later):
            join = min(join, int(later[0]))
        join = min([join, *(k for k in moved_at[m.tensor] if k >= m.until)])
        joins[join].append(j)

    initial: list[tuple[int, int, int, int, int]] = []
    arriving: list[tuple[int, int, int, int, int]] = []
    producer = graph.liveness.producer
    for i, r in enumerate(plan.residencies):
        t = graph.tensor_index[r.tensor]
        if producer[t] < 0 and r.first == 0 and i not in landed:
            arena, offset = layout.residency_places[i]
            row = (arena, offset, nbytes[r.tensor], seed_of(r.tensor), WRITE)
            initial.append(row)
            if graph.tensors[t].kind.survives_step:
                _check_carried(plan, layout, i, spans.get((r.tensor, r.pool), ()), n)
            else:
                arriving.append(row)
            last_write.setdefault(r.tensor, (-1, 1, r.pool))
    final, final_tensors = [], []
    for tensor in graph.tensors:
        if tensor.kind.survives_step and tensor.name in last_write and n:
            # The verifier lets no stale copy outlive a write: any copy held at the end is current.
            pool = last_write[tensor.name][2]
            if not _held_at(spans.get((tensor.name, pool), ()), n - 1):
                pool = next(q for (name, q), rows in spans.items()
                            if name == tensor.name and _held_at(rows, n - 1))
            arena, offset, _ = place(tensor.name, pool, n - 1, "the end")
            final.append((arena, offset, tensor.nbytes, 0, READ))
            final_tensors.append(tensor.name)

    for copies in asyn:  # the ones issued together, earliest until first (the streams' order)
        copies.sort(key=lambda c: plan.moves[c.move].until)
    scale = float(flops_scale) / FLOPS_PER_ITERATION
    return Program(
        rows=_table(rows), kernel_ptr=np.asarray(ptr, dtype=np.int64),
        iterations=np.rint(np.asarray(flops, dtype=np.float64) * scale).astype(np.int64),
        sync=tuple(map(tuple, sync)), asynchronous=tuple(map(tuple, asyn)),
        joins=tuple(map(tuple, joins)), initial=_table(initial), arriving=_table(arriving),
        final=_table(final),
        final_tensors=tuple(final_tensors), reruns=tuple(reruns),
        reruns_before=tuple(map(tuple, reruns_before)),
    )


def _reruns(
    plan: Plan, graph: Graph, layout: Layout,
    spans: dict[tuple[str, str], list[tuple[int, int, int]]],
) -> tuple[list[RerunOps], list[list[int]]]:
    """Each rerun's rows (see the module doc), and which reruns run before each kernel."""
    n = len(graph.kernels)
    fastest = layout.requests[0].name if layout.requests else ""
    sync = [m for m in plan.moves if m.kind is MoveKind.SYNC]
    landing = {(m.tensor, m.kernel) for m in sync if m.target == fastest}
    leaving = {(m.tensor, m.kernel) for m in sync if m.source == fastest}
    out: list[RerunOps] = []
    before: list[list[int]] = [[] for _ in range(n)] if plan.reruns else []
    written: dict[int, dict[str, tuple[int, int]]] = collections.defaultdict(dict)

    def boundary_place(name: str, b: int, what: str) -> tuple[int, int]:
        # Only a residency occupying the pool at the boundary holds the bytes there: one
        # ending just before it may share its memory with one a synchronous move lands.
        held = spans.get((name, fastest), ())
        for first, last, i in held:
            if first <= b - 1 and b <= last:
                return layout.residency_places[i]
        for first, _, i in held:
            if first == b and (name, b) in landing:
                return layout.residency_places[i]
        for first, last, i in held:
            if first <= b - 1 == last and (name, b) in leaving:
                return layout.residency_places[i]
        raise ExecutionError(
            f"{what}: its input {name!r} is not in pool {fastest!r} at that boundary",
            hint="verify the plan ('python -m autotm_core verify'); the executor follows it as is",
        )

    for j, rerun in enumerate(plan.reruns):
        k, b = rerun.kernel, rerun.before
        kernel = graph.kernels[k]
        what = f"reruns[{j}] (kernel {kernel.name!r} again before {graph.kernels[b].name!r})"
        here = written[b]
        rows: list[tuple[int, int, int, int, int]] = []
        for name in dict.fromkeys(kernel.inputs):
            arena, offset = here.get(name) or boundary_place(name, b, what)
            rows.append((arena, offset, graph.tensor(name).nbytes, 0, READ))
        for name in dict.fromkeys(kernel.outputs):
            arena, offset = here[name] = layout.rerun_places[j, name]
            rows.append((arena, offset, graph.tensor(name).nbytes, seed_of(name), WRITE))
        if j in layout.rerun_workspace_places:
            arena, offset = layout.rerun_workspace_places[j]
            rows.append((arena, offset, kernel.workspace_nbytes,
                         seed_of(f"workspace:{kernel.name}"), SCRATCH))
        out.append(RerunOps(j, k, b, _table(rows)))
        before[b].append(j)
    return out, before


def _check_carried(
    plan: Plan, layout: Layout, start: int, rows: Sequence[tuple[int, int, int]], n: int
) -> None:
    """Residency ``start`` (kernel 0) of a tensor living on is where the step leaves it."""
    r = plan.residencies[start]
    end = next((i for first, last, i in rows if first <= n - 1 <= last), None)
    place = layout.residency_places[start]
    if end is not None and layout.residency_places[end] == place:
        return
    left = ("no residency of it there covers the last kernel" if end is None else
            f"the step leaves it at offset {layout.residency_places[end][1]} "
            f"(residencies[{end}])")
    raise ExecutionError(
        f"tensor {r.tensor!r} begins the step in pool {r.pool!r} at offset {place[1]} "
        f"(residencies[{start}]), but {left}: the next step would not find it there",
        hint="a plan is one step of a training loop: verify it ('python -m autotm_core verify'); "
        "a tensor that exists before and after the step must end it current where it began, "
        "at the same offset (autotm_core.addresses.assign_offsets places it so)",
    )


def _table(rows: list[tuple[int, int, int, int, int]]) -> IntArray:
    return np.asarray(rows, dtype=np.int64).reshape(-1, 5)


def link(rows: IntArray, bases: IntArray) -> IntArray:
    """Rows as the replay kernels take them: (byte address, nbytes, seed, kind)."""
    out = np.empty((len(rows), 4), dtype=np.int64)
    out[:, 0] = bases[rows[:, ARENA]] + rows[:, OFFSET]
    out[:, 1:] = rows[:, NBYTES:]
    return out
