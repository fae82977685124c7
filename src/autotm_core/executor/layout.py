"""Where everything of a plan goes in the arenas, decided before any memory is touched.

- Each pool gets a NUMA node: ``bind`` (an override), else its ``numa_node``,
  else the first allowed node, with a note (a pool without a node, or on a
  device this executor cannot reach; when fitting the machine, also a node this
  machine does not have).
- Whether to fit the machine is :func:`fits_machine`'s answer, the one place
  every run (replay or real kernels) decides it: as asked, else for a built-in
  preset (a published machine's nodes and capacities) and not for a system file.
- Each pool gets one arena of its size: the plan's capacity for a bounded pool,
  whose residencies must all carry offsets that fit (else :class:`ExecutionError`
  before running), or with ``fit_machine`` only the bytes the plan uses of it;
  for an unbounded pool, the highest end of its residencies,
  after packing the ones without offsets above those with one (lowest-fit, by
  :func:`autotm_core.addresses.packing.assign_offsets`).
- A kernel's workspace lives in the fastest pool: at the offset the plan's
  address assignment gave it (:attr:`~autotm_core.plans.Plan.workspace_offsets`),
  else in a scratch arena bound to the fastest pool's node (with a note).
- A rerun (:class:`~autotm_core.plans.Rerun`) writes each output it restores into that
  residency (in the fastest pool, beginning at its boundary); the outputs it drops and its
  workspace, which the plan gives no address, go in the same scratch arena, laid out afresh
  at each boundary (they live only while the boundary's reruns run, when no kernel's
  workspace does), a chain's intermediate value and a workspace sharing bytes with what is
  made after it is freed (the plan rules' count, :mod:`autotm_core.plans.verify_memory`).
"""

from __future__ import annotations

import collections
from collections.abc import Mapping

import attrs

from autotm_core.errors import ExecutionError
from autotm_core.executor.arena import ArenaRequest
from autotm_core.executor.numa import allowed_nodes, check_node
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.plans.verify_memory import plan_capacities, rerun_output_spans
from autotm_core.units import format_bytes

SCRATCH = "(workspace)"
"""Name of the scratch arena holding workspaces the plan gave no address."""
PACK_ALIGNMENT_NBYTES = 64
"""Alignment of offsets the executor assigns in unbounded pools."""


@attrs.frozen(slots=True)
class Layout:
    """Arenas to make, and the arena and offset of every residency and workspace."""

    requests: tuple[ArenaRequest, ...]
    """One arena per pool (system order), then the scratch arena if any."""
    residency_places: tuple[tuple[int, int], ...]
    """``(arena index, offset)`` of each of ``plan.residencies``."""
    workspace_places: Mapping[int, tuple[int, int]]
    """``(arena index, offset)`` of each kernel with a workspace."""
    notes: tuple[str, ...]
    """What the run should be read with (default bindings, packing, scratch arena)."""
    rerun_places: Mapping[tuple[int, str], tuple[int, int]] = attrs.field(factory=dict)
    """``(arena index, offset)`` each rerun writes each of its outputs to, by (position in
    ``plan.reruns``, tensor): the residency it restores, else the scratch arena."""
    rerun_workspace_places: Mapping[int, tuple[int, int]] = attrs.field(factory=dict)
    """``(arena index, offset)`` of the workspace of each rerun (position in ``plan.reruns``)
    whose kernel has one: the scratch arena."""


def fits_machine(system: MemorySystem, fit_machine: bool | None) -> bool:
    """Whether a run of a plan on ``system`` fits it to this machine: as ``fit_machine``
    says, and by default (``None``) when ``system`` is a built-in preset, whose NUMA nodes
    and capacities are a published machine's, not this one's; a system file (from
    ``calibrate``, say) is taken as it is."""
    from autotm_core.presets import is_preset

    return fit_machine if fit_machine is not None else is_preset(system)


def resolve_nodes(
    system: MemorySystem, bind: Mapping[str, int] | None = None, *, fit_machine: bool = False
) -> tuple[list[int], list[str]]:
    """NUMA node of each pool (``bind`` first, then ``numa_node``) and notes on the defaults.

    With ``fit_machine`` a ``numa_node`` this process may not use means the first
    allowed node (with a note), not an error; a ``bind`` is always checked.
    """
    bind = dict(bind or {})
    for name in bind:
        system.pool(name)  # an unknown pool name is a MemorySystemError naming the pools
    nodes, notes = [], []
    default = allowed_nodes()[0] if allowed_nodes() else 0
    for pool in system.pools:
        if pool.name in bind:
            nodes.append(check_node(bind[pool.name], who=f"--bind {pool.name}"))
        elif fit_machine and pool.numa_node is not None and pool.numa_node not in allowed_nodes():
            notes.append(f"pool {pool.name!r} names NUMA node {pool.numa_node}, which this "
                         f"machine does not let this process use; bound to node {default}")
            nodes.append(default)
        elif pool.numa_node is not None:
            nodes.append(check_node(pool.numa_node, who=f"pool {pool.name!r}"))
        else:
            why = f"is on device {pool.device!r}" if pool.device else "names no NUMA node"
            notes.append(f"pool {pool.name!r} {why}; bound to NUMA node {default}")
            nodes.append(default)
    return nodes, notes


def plan_layout(
    plan: Plan,
    graph: Graph,
    system: MemorySystem,
    *,
    bind: Mapping[str, int] | None = None,
    arena_nbytes: Mapping[str, int] | None = None,
    fit_machine: bool | None = None,
) -> Layout:
    """The arenas and addresses of ``plan`` (verified beforehand) on this machine.

    ``arena_nbytes`` shrinks the arena of a bounded pool below its capacity (a
    768 GB PMM pool on a small machine); it must still hold every offset the plan uses.
    ``fit_machine`` binds pools whose node this machine lacks to one it has and makes
    each bounded pool's arena (unless ``arena_nbytes`` names it) only as large as the
    bytes the plan uses of it, each with a note: a preset's plan runs on a small machine.
    By default (``None``) only a preset is fitted (:func:`fits_machine`).
    """
    fit_machine = fits_machine(system, fit_machine)
    arena_nbytes = dict(arena_nbytes or {})
    for name in arena_nbytes:
        system.pool(name)
    nodes, notes = resolve_nodes(system, bind, fit_machine=fit_machine)
    capacities = plan_capacities(plan, system)
    workspaces, scratch = _workspaces(plan, graph, capacities[0], len(system.pools))
    if fit_machine:
        used = _workspace_top(graph, workspaces)
        for p, pool in enumerate(system.pools):
            if pool.name not in arena_nbytes and capacities[p] is not None:
                top = max(_used(plan, graph, pool.name), used if p == 0 else 0, 1)
                if top < capacities[p]:  # type: ignore[operator]
                    arena_nbytes[pool.name] = top
    pool_of = {pool.name: i for i, pool in enumerate(system.pools)}
    nbytes = {t.name: t.nbytes for t in graph.tensors}
    places: list[tuple[int, int] | None] = [None] * len(plan.residencies)
    by_pool: dict[int, list[int]] = collections.defaultdict(list)
    for i, r in enumerate(plan.residencies):
        by_pool[pool_of[r.pool]].append(i)
    sizes: list[int] = []
    for p, pool in enumerate(system.pools):
        rows = by_pool.get(p, [])
        capacity = capacities[p]
        if capacity is not None:
            top = _bounded(plan, rows, nbytes, pool.name, capacity)
            size = capacity
            if pool.name in arena_nbytes:
                size = arena_nbytes[pool.name]
                if size < top:
                    raise ExecutionError(
                        f"pool {pool.name!r}: an arena of {format_bytes(size)} is too small; the "
                        f"plan's residencies reach byte {top} ({format_bytes(top)})",
                        hint=f"give --arena {pool.name}={top} or more",
                    )
                notes.append(f"pool {pool.name!r}: arena of {format_bytes(size)} ({size:,} bytes) "
                             f"instead of its capacity {format_bytes(capacity)} ({capacity:,} "
                             f"bytes; the plan uses {format_bytes(top)})")
            sizes.append(size)
            for i in rows:
                places[i] = (p, plan.residencies[i].offset or 0)
            continue
        given = [i for i in rows if plan.residencies[i].offset is not None]
        top = max((plan.residencies[i].offset + nbytes[plan.residencies[i].tensor]  # type: ignore[operator]
                   for i in given), default=0)
        for i in given:
            places[i] = (p, plan.residencies[i].offset)  # type: ignore[assignment]
        missing = [i for i in rows if plan.residencies[i].offset is None]
        if missing:
            base = -(-top // PACK_ALIGNMENT_NBYTES) * PACK_ALIGNMENT_NBYTES
            packed = _pack(plan, graph, system, pool.name, missing)
            for i, offset in packed.items():
                places[i] = (p, base + offset)
                top = max(top, base + offset + nbytes[plan.residencies[i].tensor])
            notes.append(f"pool {pool.name!r} is unbounded: {len(missing)} residencies without "
                         f"an offset were packed (lowest fit); its arena is {format_bytes(top)}")
        sizes.append(top)
    requests = [ArenaRequest(pool.name, sizes[p], nodes[p]) for p, pool in enumerate(system.pools)]
    rerun_places, rerun_workspaces, rerun_scratch = _reruns(plan, graph, system, places,
                                                            len(system.pools))
    if rerun_scratch:
        notes.append(f"{len(plan.reruns)} reruns: the outputs they drop and their workspaces "
                     f"(up to {format_bytes(rerun_scratch)} at one boundary) use the scratch arena "
                     f"on node {nodes[0]}, outside pool {system.pools[0].name!r}")
    scratch = max(scratch, rerun_scratch)
    if scratch:
        requests.append(ArenaRequest(SCRATCH, scratch, nodes[0]))
        notes.append(f"{sum(1 for a, _ in workspaces.values() if a == len(system.pools))} kernel "
                     f"workspaces have no address in the plan; they use a {format_bytes(scratch)} "
                     f"scratch arena on node {nodes[0]}, outside pool {system.pools[0].name!r}")
    return Layout(tuple(requests), tuple(places), workspaces, tuple(notes),  # type: ignore[arg-type]
                  rerun_places, rerun_workspaces)


def _reruns(
    plan: Plan, graph: Graph, system: MemorySystem, places: list[tuple[int, int] | None],
    scratch_arena: int,
) -> tuple[dict[tuple[int, str], tuple[int, int]], dict[int, tuple[int, int]], int]:
    """Where each rerun writes each output and has its workspace, and the scratch bytes the
    reruns of one boundary need at most: the outputs they drop and the workspaces, each
    placed lowest-fit among those held at the same time
    (:func:`~autotm_core.plans.verify_memory.rerun_output_spans`; a workspace while its
    rerun runs)."""
    fastest = system.pools[0].name
    landed = {(m.tensor, m.target, m.kernel) for m in plan.moves}
    restores = {(r.tensor, r.first): i for i, r in enumerate(plan.residencies)
                if r.pool == fastest and (r.tensor, r.pool, r.first) not in landed}
    index = graph.tensor_index
    outputs: dict[tuple[int, str], tuple[int, int]] = {}
    workspaces: dict[int, tuple[int, int]] = {}
    at_boundary: dict[int, list[int]] = collections.defaultdict(list)
    for j, rerun in enumerate(plan.reruns):
        at_boundary[rerun.before].append(j)
    top = 0
    for b, positions in at_boundary.items():
        kernels = [plan.reruns[j].kernel for j in positions]
        names = {name for k in kernels for name in graph.kernels[k].outputs}
        restored = {index[name] for name in names if (name, b) in restores}
        spans = rerun_output_spans(graph, kernels, b, restored)
        wanted = [(i, end, graph.tensors[t].nbytes, ("tensor", t))
                  for t, (i, end) in spans.items()]
        wanted += [(i, i, graph.kernels[k].workspace_nbytes, ("workspace", positions[i]))
                   for i, k in enumerate(kernels) if graph.kernels[k].workspace_nbytes]
        placed, used = _lowest_fit(wanted)
        top = max(top, used)
        for j, k in zip(positions, kernels, strict=True):
            for name in dict.fromkeys(graph.kernels[k].outputs):
                i = restores.get((name, b))
                outputs[j, name] = (places[i] if i is not None  # type: ignore[assignment]
                                    else (scratch_arena, placed["tensor", index[name]]))
            if ("workspace", j) in placed:
                workspaces[j] = (scratch_arena, placed["workspace", j])
    return outputs, workspaces, top


def _lowest_fit(wanted: list[tuple[int, int, int, tuple[str, int]]],
                ) -> tuple[dict[tuple[str, int], int], int]:
    """Offsets for blocks ``(first, last, nbytes, key)`` held over positions ``first..last``,
    each at the lowest aligned offset clear of the blocks held with it, in order of
    ``first``; and the highest byte reached."""
    placed: dict[tuple[str, int], int] = {}
    held: list[tuple[int, int, int]] = []  # (offset, end offset, last position)
    top = 0
    for first, last, nbytes, key in sorted(wanted, key=lambda w: w[0]):
        held = [h for h in held if h[2] >= first]
        offset = 0
        for start, end, _ in sorted(held):
            if offset + _aligned(nbytes) <= start:
                break
            offset = max(offset, end)
        placed[key] = offset
        held.append((offset, offset + _aligned(nbytes), last))
        top = max(top, offset + _aligned(nbytes))
    return placed, top


def _aligned(nbytes: int) -> int:
    return -(-max(nbytes, 1) // PACK_ALIGNMENT_NBYTES) * PACK_ALIGNMENT_NBYTES


def _used(plan: Plan, graph: Graph, pool: str) -> int:
    """The highest byte the residencies in ``pool`` reach (their offsets given)."""
    nbytes = {t.name: t.nbytes for t in graph.tensors}
    return max(((r.offset or 0) + nbytes[r.tensor] for r in plan.residencies if r.pool == pool),
               default=0)


def _workspace_top(graph: Graph, places: Mapping[int, tuple[int, int]]) -> int:
    """The highest byte the workspaces placed in the fastest pool (arena 0) reach."""
    return max((offset + graph.kernels[k].workspace_nbytes
                for k, (arena, offset) in places.items() if arena == 0), default=0)


def _bounded(plan: Plan, rows: list[int], nbytes: dict[str, int], pool: str, capacity: int) -> int:
    missing = [plan.residencies[i] for i in rows if plan.residencies[i].offset is None]
    if missing:
        r = missing[0]
        raise ExecutionError(
            f"pool {pool!r} is bounded ({format_bytes(capacity)}) but {len(missing)} of its "
            f"residencies carry no offset (first: tensor {r.tensor!r}, "
            f"kernels {r.first}..{r.last})",
            hint="give the plan addresses first: autotm_core.addresses.assign_offsets, or "
            "'solve' (which assigns them)",
        )
    top = 0
    for i in rows:
        r = plan.residencies[i]
        end = r.offset + nbytes[r.tensor]  # type: ignore[operator]
        if r.offset < 0 or end > capacity:  # type: ignore[operator]
            raise ExecutionError(
                f"pool {pool!r}: tensor {r.tensor!r} at offset {r.offset} ends at byte {end}, "
                f"outside the pool's {capacity} bytes (kernels {r.first}..{r.last})",
                hint="re-assign the plan's offsets (autotm_core.addresses.assign_offsets) or "
                "re-solve it with this capacity",
            )
        top = max(top, end)
    return top


def _pack(
    plan: Plan, graph: Graph, system: MemorySystem, pool: str, rows: list[int]
) -> dict[int, int]:
    """Offsets for residencies ``rows`` of unbounded ``pool``, packed among themselves."""
    from autotm_core.addresses.packing import assign_offsets

    nbytes = {t.name: t.nbytes for t in graph.tensors}
    room = sum(-(-nbytes[plan.residencies[i].tensor] // PACK_ALIGNMENT_NBYTES)
               for i in rows) * PACK_ALIGNMENT_NBYTES
    sub = attrs.evolve(plan, capacities={pool: room},
                       residencies=tuple(plan.residencies[i] for i in rows))
    if system.pool_index(pool) == 0:  # keep workspaces out of this packing: they are placed apart
        graph = attrs.evolve(graph, kernels=[attrs.evolve(k, workspace_nbytes=0)
                                             for k in graph.kernels])
    result = assign_offsets(sub, graph, system, alignment_nbytes=PACK_ALIGNMENT_NBYTES)
    return {i: r.offset for i, r in zip(rows, result.plan.residencies, strict=True)}  # type: ignore[misc]


def _workspaces(
    plan: Plan, graph: Graph, fast_capacity: int | None, n_pools: int
) -> tuple[dict[int, tuple[int, int]], int]:
    """Place of each workspace, and the scratch arena's size (0: none needed)."""
    given = plan.workspace_offsets
    places: dict[int, tuple[int, int]] = {}
    scratch = 0
    for k, kernel in enumerate(graph.kernels):
        size = kernel.workspace_nbytes
        if not size:
            continue
        offset = given.get(k)
        if (fast_capacity is not None and isinstance(offset, int) and offset >= 0
                and offset + size <= fast_capacity):
            places[k] = (0, offset)
        else:
            places[k] = (n_pools, 0)
            scratch = max(scratch, size)
    return places, scratch
