"""Carry a plan out with the captured ATen ops themselves, writing into the plan's arenas.

Every tensor a kernel touches is rebuilt, at that kernel, as a torch view over
the bytes of its residency: the pool ``plan.configs[k]`` names, at the
residency's offset (the executor's layout: :func:`~autotm_core.executor.plan_layout`),
with the shape, strides, storage offset and dtype the fake trace recorded. So
a tensor moved to another pool is read there afterwards, and the moves are
real copies between arena regions (:func:`~autotm_core.executor.build_program`
says which, when, and what to wait for). Each kernel then runs one of three ways:

- **in place**: an op that writes its arguments (``relu_``, ``add_``, optimizer
  updates) runs on the arena views as it is;
- **out=**: a functional op with an ``out=`` variant (:mod:`autotm_torch.out_variants`)
  writes its results straight into the arena views of its new storages;
- **copied**: any other op (no variant, or the variant refused these outputs)
  runs functionally and its results are copied into the arena; these are counted
  by op in :attr:`RealRun.copied`.

View-only nodes are not run: whoever reads a view rebuilds it from the arena.
Tensors in a pool on another device than the step's (host memory of a GPU
step) are staged through a temporary on the step's device around the kernel,
and counted (:attr:`RealRun.staged_nbytes`). Where each tensor is, is resolved
once before the run (:mod:`autotm_torch.arena_views`).
"""

from __future__ import annotations

import collections
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import ArenaRequest, PoolRun, build_program, plan_layout, seed_of
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, check_plan
from autotm_torch import _torch_internals as internals
from autotm_torch.arena_views import (
    TensorRef,
    bind,
    initial_values,
    placeholders,
    ref_of,
    resolve_kernels,
    snapshots,
    storage_bytes,
    view,
)
from autotm_torch.capture import Traced
from autotm_torch.out_variants import out_variant
from autotm_torch.pools import NumaPools, Pools

PoolsFactory = Callable[[Sequence[ArenaRequest], MemorySystem], Pools]
"""Makes the pools of a run from the layout's arena requests."""


@attrs.frozen
class CapturedStep:
    """A traced step, its graph, and the graph tensor of every storage of the trace."""

    traced: Traced
    """The FX graph and the roles of its placeholders and outputs."""
    graph: Graph
    """Its autotm-core graph (plans are made for this)."""
    storages: Mapping[Any, str]
    """Storage key (of the fake values) -> tensor name in :attr:`graph`; storages of no
    bytes are in no graph and not here."""


def captured_step(traced: Traced, *, name: str) -> CapturedStep:
    """Lower ``traced`` and keep the storage -> tensor map the run needs."""
    from autotm_torch.lower import lower_with_storages

    graph, storages = lower_with_storages(traced, name=name)
    return CapturedStep(traced, graph, storages)


@attrs.frozen
class RealRun:
    """What running a plan with real kernels produced and measured."""

    pools: str
    """Which pools ran it (``numa``, ``cuda``, ``cpu-test``)."""
    outputs: tuple[torch.Tensor, ...]
    """The step's returned values (loss, gradients), as CPU copies."""
    final: Mapping[str, torch.Tensor]
    """Value after the step of each placeholder that survives it (by role name), CPU copies."""
    kernel_names: tuple[str, ...]
    """Kernels in order."""
    kernel_seconds: np.ndarray
    """Median per kernel of its time (kernel only)."""
    wait_seconds: np.ndarray
    """Median per kernel of the time spent before it waiting for asynchronous copies."""
    sync_seconds: np.ndarray
    """Median per kernel of the time before it spent in synchronous copies and submitting
    asynchronous ones."""
    step_seconds: np.ndarray
    """Each timed repetition's whole step."""
    step_on_cpu_seconds: np.ndarray
    """Each timed repetition's CPU time on the running thread, plus the time it waited for
    copies (time other processes took the core away is not in it)."""
    in_place: int
    """Kernels that ran in place on their arguments."""
    out_variant: Mapping[str, int]
    """Op -> kernels that wrote their results into the arena through ``out=``."""
    copied: Mapping[str, int]
    """Op -> kernels whose results were copied into the arena (see the module doc)."""
    staged_nbytes: int
    """Bytes staged to the step's device and back, per step."""
    sync_nbytes: int
    """Bytes of synchronous moves per step."""
    async_nbytes: int
    """Bytes of asynchronous moves per step."""
    arenas: tuple[PoolRun, ...]
    """The arenas as they were made (pool, node, size, binding as verified)."""
    notes: tuple[str, ...]
    """What the run should be read with: the layout's notes (bindings, arena sizes)."""


def run_plan(
    step: CapturedStep,
    plan: Plan,
    system: MemorySystem,
    values: Sequence[torch.Tensor],
    *,
    pools: PoolsFactory = NumaPools,  # type: ignore[assignment]
    repeat: int = 1,
    bind: Mapping[str, int] | None = None,
    arena_nbytes: Mapping[str, int] | None = None,
    fit_machine: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> RealRun:
    """Run ``plan`` for ``step`` with real kernels on ``values`` (one per placeholder).

    ``values`` are only read: their bytes are written into the arenas before
    each repetition. One untimed warm-up run comes first, then ``repeat`` timed
    ones; ``progress(done, repeat)`` follows each. ``bind``, ``arena_nbytes`` and
    ``fit_machine`` lay the arenas out as :func:`autotm_core.executor.plan_layout`
    says: by default a pool whose NUMA node this machine lacks is bound to one it
    has, and a bounded pool's arena holds what the plan uses of it, not its
    capacity (a preset's 768 GB pool), each said in :attr:`RealRun.notes`.
    """
    graph, traced = step.graph, step.traced
    check_plan(plan, graph, system)
    layout = plan_layout(plan, graph, system, bind=bind, arena_nbytes=arena_nbytes,
                         fit_machine=fit_machine)
    program = build_program(plan, graph, layout, flops=np.zeros(len(graph.kernels)))
    initial_by_name = initial_values(traced, step.storages, values)
    by_seed = {seed_of(t.name): t.name for t in graph.tensors}
    mem = pools(layout.requests, system)
    try:
        device = step_device(traced)

        def region(arena: int, offset: int, nbytes: int) -> torch.Tensor:
            return mem.region(int(arena), int(offset), int(nbytes))

        kernels = resolve_kernels(traced, graph, step.storages, program, mem.device, device,
                                  region)
        initial = [(region(*row[:3]), storage_bytes(initial_by_name[by_seed[int(row[3])]]))
                   for row in program.initial]
        final = {name: region(*row[:3])
                 for name, row in zip(program.final_tensors, program.final, strict=True)}
        copies = [[(region(*c.source, c.nbytes), region(*c.target, c.nbytes)) for c in cs]
                  for cs in program.sync]
        submits = [[(c.move, region(*c.source, c.nbytes), region(*c.target, c.nbytes))
                    for c in cs] for cs in program.asynchronous]
        outputs_at, returned = snapshots(traced, graph, step.storages, final)
        samples = np.zeros((repeat, 3, len(kernels)))
        steps, on_cpu = np.zeros(repeat), np.zeros(repeat)
        for rep in range(repeat + 1):
            for target, source in initial:
                target.copy_(source)
            mem.finish()
            marks, tickets = [], {}
            cpu_start = time.thread_time_ns()
            for k, kernel in enumerate(kernels):
                start = mem.mark()
                for move in program.joins[k]:
                    mem.wait(tickets[move])
                waited = mem.mark()
                for source, target in copies[k]:
                    mem.copy(source, target)
                for move, source, target in submits[k]:
                    tickets[move] = mem.submit(source, target)
                middle = mem.mark()
                _run(kernel, mem, device)
                marks.append((start, waited, middle, mem.mark()))
                for i, ref in outputs_at.get(k, ()):
                    returned[i] = view(region(*kernel.places[ref.name]), ref).clone()
            mem.finish()
            cpu = (time.thread_time_ns() - cpu_start) * 1e-9
            if rep:
                for k, (a, b, c, d) in enumerate(marks):
                    samples[rep - 1, :, k] = mem.seconds(a, b), mem.seconds(b, c), mem.seconds(c, d)
                steps[rep - 1] = mem.seconds(marks[0][0], marks[-1][3]) if marks else 0.0
                on_cpu[rep - 1] = cpu + samples[rep - 1, 0].sum()
                if progress is not None:
                    progress(rep, repeat)
        outputs = tuple(_cpu(view(final.get(r.name, _NOTHING), r)) if isinstance(r, TensorRef)
                        else _cpu(r) for r in returned)
        ends = {}
        for node, role in zip(placeholders(traced), traced.inputs, strict=True):
            ref = ref_of(step.storages, node.meta["val"])
            if ref.name in final:
                ends[role.name] = _cpu(view(final[ref.name], ref))
        arenas = mem.arenas_made()
    finally:
        mem.close()
    modes = collections.Counter((k.mode, _op_name(k.node)) for k in kernels)
    median = np.median(samples, axis=0)
    return RealRun(
        pools=mem.name, outputs=outputs, final=ends,
        kernel_names=tuple(k.node.name for k in kernels), kernel_seconds=median[2],
        wait_seconds=median[0], sync_seconds=median[1], step_seconds=steps,
        step_on_cpu_seconds=on_cpu,
        in_place=sum(n for (m, _), n in modes.items() if m == "in place"),
        out_variant={op: n for (m, op), n in sorted(modes.items()) if m == "out="},
        copied={op: n for (m, op), n in sorted(modes.items()) if m == "copied"},
        staged_nbytes=sum(k.places[t][2] * (1 + (t in k.written)) for k in kernels
                          for t in k.staged),
        sync_nbytes=sum(c.nbytes for cs in program.sync for c in cs),
        async_nbytes=sum(c.nbytes for cs in program.asynchronous for c in cs),
        arenas=arenas, notes=layout.notes,
    )


_NOTHING = torch.empty(0, dtype=torch.uint8)
"""The bytes of a storage of no bytes."""


def _cpu(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to("cpu", copy=True)


def _op_name(node: torch.fx.Node) -> str:
    schema = getattr(node.target, "_schema", None)
    return schema.name if schema is not None else str(node.target)


def step_device(traced: Traced) -> torch.device:
    """The device the step was traced for (its first placeholder's)."""
    first = next(iter(placeholders(traced)), None)
    return first.meta["val"].device if first is not None else torch.device("cpu")


def _run(kernel: Any, mem: Pools, device: torch.device) -> None:
    """Run one kernel on its arena views (staging the ones on another device)."""
    staged: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    if kernel.bound is None:
        regions = {}
        for name, place in kernel.places.items():
            regions[name] = mem.region(*place)
            if name in kernel.staged:
                staged[name] = (regions[name], regions[name].to(device))
                regions[name] = staged[name][1]
        args, kwargs, outs = bind(kernel, regions, device)
    else:
        args, kwargs, outs = kernel.bound
    op, node = kernel.node.target, kernel.node
    with _naming(node):
        if kernel.mode == "out=":
            pointers = [o.data_ptr() for o in outs]
            try:
                out_variant(op).call(op, args, kwargs, outs)  # type: ignore[union-attr]
            except RuntimeError:  # the variant refused these outputs: copy from now on
                kernel.mode = "copied"
            else:
                if [o.data_ptr() for o in outs] != pointers:
                    raise ExecutionError(
                        f"kernel {node.name!r} ({_op_name(node)}) moved its output out of the "
                        "arena (resized it)",
                        hint="the captured shapes differ from the real ones; capture again",
                    )
        if kernel.mode == "copied":
            result = op(*args, **kwargs)
            for out, value in zip(outs, internals.tree_leaves(result), strict=False):
                if out is not None:
                    out.copy_(value)
        elif kernel.mode == "in place":
            op(*args, **kwargs)
    for name, (home, temporary) in staged.items():
        if name in kernel.written:
            home.copy_(temporary)


@contextlib.contextmanager
def _naming(node: torch.fx.Node) -> Iterator[None]:
    try:
        yield
    except ExecutionError:
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExecutionError(
            f"kernel {node.name!r} ({_op_name(node)}) failed on arena tensors: {text}",
            hint="the plan's pools and offsets are used as they are; check the plan with "
            "'python -m autotm_core verify'",
        ) from exc


__all__ = ["CapturedStep", "RealRun", "captured_step", "run_plan", "step_device"]
