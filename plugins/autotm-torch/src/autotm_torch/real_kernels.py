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
and counted (:attr:`RealRun.staged_nbytes`).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import ArenaRequest, build_program, plan_layout, seed_of
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, check_plan
from autotm_torch import _torch_internals as internals
from autotm_torch.capture import Traced
from autotm_torch.lower import _vals
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
    """Storage key (of the fake values) -> tensor name in :attr:`graph`."""


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
    move_seconds: np.ndarray
    """Median per kernel of the time before it: waits, synchronous copies, submissions."""
    step_seconds: np.ndarray
    """Each timed repetition's whole step."""
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


@attrs.frozen
class _Ref:
    """A fake tensor of the trace: which graph tensor, and its view geometry."""

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int


@attrs.define
class _Kernel:
    """One kernel, resolved: its arguments as references, where each tensor is, how to run it."""

    node: torch.fx.Node
    mode: str
    args: Any
    kwargs: Any
    returns: list[_Ref | None]
    places: dict[str, tuple[int, int, int]]
    written: set[str]
    staged: set[str]
    bound: tuple[Any, Any, list[torch.Tensor | None]] | None = None


def run_plan(
    step: CapturedStep,
    plan: Plan,
    system: MemorySystem,
    values: Sequence[torch.Tensor],
    *,
    pools: PoolsFactory = NumaPools,  # type: ignore[assignment]
    repeat: int = 1,
) -> RealRun:
    """Run ``plan`` for ``step`` with real kernels on ``values`` (one per placeholder).

    ``values`` are only read: their bytes are written into the arenas before
    each repetition. One untimed warm-up run comes first, then ``repeat`` timed ones.
    """
    graph, traced = step.graph, step.traced
    check_plan(plan, graph, system)
    layout = plan_layout(plan, graph, system)
    program = build_program(plan, graph, layout, flops=np.zeros(len(graph.kernels)))
    initial_values = _initial_values(step, values)
    by_seed = {seed_of(t.name): t.name for t in graph.tensors}
    mem = pools(layout.requests, system)
    try:
        device = _step_device(traced)
        kernels = _prepare(step, program, mem, device)

        def region(arena: int, offset: int, nbytes: int) -> torch.Tensor:
            return mem.region(int(arena), int(offset), int(nbytes))

        initial = [(region(*row[:3]), _bytes_of(initial_values[by_seed[int(row[3])]]))
                   for row in program.initial]
        final = {name: region(*row[:3])
                 for name, row in zip(program.final_tensors, program.final, strict=True)}
        copies = [[(region(*c.source, c.nbytes), region(*c.target, c.nbytes)) for c in cs]
                  for cs in program.sync]
        submits = [[(c.move, region(*c.source, c.nbytes), region(*c.target, c.nbytes))
                    for c in cs] for cs in program.asynchronous]
        outputs_at, returned = _snapshots(step, final)
        samples = np.zeros((repeat, 2, len(kernels)))
        steps = np.zeros(repeat)
        for rep in range(repeat + 1):
            for target, source in initial:
                target.copy_(source)
            mem.finish()
            marks, tickets = [], {}
            for k, kernel in enumerate(kernels):
                start = mem.mark()
                for move in program.joins[k]:
                    mem.wait(tickets[move])
                for source, target in copies[k]:
                    mem.copy(source, target)
                for move, source, target in submits[k]:
                    tickets[move] = mem.submit(source, target)
                middle = mem.mark()
                _run(kernel, mem, device)
                marks.append((start, middle, mem.mark()))
                for i, ref in outputs_at.get(k, ()):
                    returned[i] = _view(region(*kernel.places[ref.name]), ref).clone()
            mem.finish()
            if rep:
                for k, (a, b, c) in enumerate(marks):
                    samples[rep - 1, :, k] = mem.seconds(a, b), mem.seconds(b, c)
                steps[rep - 1] = mem.seconds(marks[0][0], marks[-1][2]) if marks else 0.0
        outputs = tuple(_cpu(_view(final[r.name], r)) if isinstance(r, _Ref) else _cpu(r)
                        for r in returned)
        ends = {}
        for node, role in zip(_placeholders(traced), traced.inputs, strict=True):
            ref = _ref(step, node.meta["val"])
            if ref.name in final:
                ends[role.name] = _cpu(_view(final[ref.name], ref))
    finally:
        mem.close()
    modes = collections.Counter((k.mode, _op_name(k.node)) for k in kernels)
    return RealRun(
        pools=mem.name, outputs=outputs, final=ends,
        kernel_names=tuple(k.node.name for k in kernels),
        kernel_seconds=np.median(samples[:, 1], axis=0),
        move_seconds=np.median(samples[:, 0], axis=0), step_seconds=steps,
        in_place=sum(n for (m, _), n in modes.items() if m == "in place"),
        out_variant={op: n for (m, op), n in sorted(modes.items()) if m == "out="},
        copied={op: n for (m, op), n in sorted(modes.items()) if m == "copied"},
        staged_nbytes=sum(k.places[t][2] * (1 + (t in k.written)) for k in kernels
                          for t in k.staged),
        sync_nbytes=sum(c.nbytes for cs in program.sync for c in cs),
        async_nbytes=sum(c.nbytes for cs in program.asynchronous for c in cs),
    )


def _cpu(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to("cpu", copy=True)


def _op_name(node: torch.fx.Node) -> str:
    schema = getattr(node.target, "_schema", None)
    return schema.name if schema is not None else str(node.target)


def _placeholders(traced: Traced) -> list[torch.fx.Node]:
    return [n for n in traced.module.graph.nodes if n.op == "placeholder"]


def _step_device(traced: Traced) -> torch.device:
    first = next(iter(_placeholders(traced)), None)
    return first.meta["val"].device if first is not None else torch.device("cpu")


def _ref(step: CapturedStep, tensor: torch.Tensor) -> _Ref:
    return _Ref(step.storages[internals.storage_key(tensor)], tensor.dtype,
                tuple(tensor.shape), tuple(tensor.stride()), int(tensor.storage_offset()))


def _bytes_of(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage of ``tensor`` as a 1-D ``uint8`` tensor (shared, not copied)."""
    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(
        storage, 0, (storage.nbytes(),), (1,))


def _view(region: torch.Tensor, ref: _Ref) -> torch.Tensor:
    """``ref``'s view over the bytes of its storage."""
    typed = region.view(ref.dtype)
    return typed.as_strided(ref.shape, ref.stride, typed.storage_offset() + ref.storage_offset)


def _initial_values(step: CapturedStep, values: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
    traced = step.traced
    if len(values) != len(traced.inputs):
        raise ExecutionError(
            f"the captured step takes {len(traced.inputs)} tensors, {len(values)} were given",
            hint="build them with autotm_torch.step_values.step_values",
        )
    found = {step.storages[internals.storage_key(n.meta["val"])]: v
             for n, v in zip(_placeholders(traced), values, strict=True)}
    module = traced.module
    for node in module.graph.nodes:
        if node.op == "get_attr":
            real = getattr(module, node.target)
            key = internals.storage_key(node.meta.get("val", real))
            found.setdefault(step.storages[key], real)
        elif node.op == "call_function":
            for arg in internals.tree_leaves((node.args, node.kwargs)):
                if isinstance(arg, torch.Tensor):  # a real tensor made outside the graph
                    found.setdefault(step.storages[internals.storage_key(arg)], arg)
    return found


def _prepare(step: CapturedStep, program: Any, mem: Pools, device: torch.device) -> list[_Kernel]:
    graph = step.graph
    by_name = {n.name: n for n in step.traced.module.graph.nodes}
    nbytes = {t.name: t.nbytes for t in graph.tensors}

    def to_ref(value: Any) -> Any:
        return _ref(step, value) if isinstance(value, torch.Tensor) else value

    kernels = []
    for k, kernel in enumerate(graph.kernels):
        node = by_name[kernel.name]
        rows = program.rows[program.kernel_ptr[k]:program.kernel_ptr[k + 1]]
        names = [*dict.fromkeys(kernel.inputs), *dict.fromkeys(kernel.outputs)]
        places = {n: (int(r[0]), int(r[1]), nbytes[n]) for n, r in zip(names, rows, strict=False)}
        new = set(kernel.outputs) - set(kernel.inputs)
        returns = [_ref(step, t) if isinstance(t, torch.Tensor)
                   and step.storages[internals.storage_key(t)] in new else None
                   for t in internals.tree_leaves(node.meta.get("val"))]
        variant = out_variant(node.target)
        if not any(returns):
            mode = "in place"
        elif variant is not None and all(returns) and len(returns) == len(variant.out_names):
            mode = "out="
        else:
            mode = "copied"
        staged = {n for n, (a, _, _) in places.items() if mem.device(a) != device}
        entry = _Kernel(node, mode, internals.tree_map(to_ref, _vals(node.args)),
                        internals.tree_map(to_ref, _vals(node.kwargs)), returns, places,
                        set(kernel.outputs), staged)
        if not staged:  # views over arena memory stay valid: make them once
            entry.bound = _bind(entry, {n: mem.region(*p) for n, p in places.items()})
        kernels.append(entry)
    return kernels


def _bind(kernel: _Kernel, regions: Mapping[str, torch.Tensor]) -> Any:
    def materialise(value: Any) -> Any:
        return _view(regions[value.name], value) if isinstance(value, _Ref) else value

    return (internals.tree_map(materialise, kernel.args),
            internals.tree_map(materialise, kernel.kwargs),
            [materialise(r) if r is not None else None for r in kernel.returns])


def _run(kernel: _Kernel, mem: Pools, device: torch.device) -> None:
    """Run one kernel on its arena views (staging the ones on another device)."""
    staged: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    if kernel.bound is None:
        regions = {}
        for name, place in kernel.places.items():
            regions[name] = mem.region(*place)
            if name in kernel.staged:
                staged[name] = (regions[name], regions[name].to(device))
                regions[name] = staged[name][1]
        args, kwargs, outs = _bind(kernel, regions)
    else:
        args, kwargs, outs = kernel.bound
    op, node = kernel.node.target, kernel.node
    with _naming(node):
        if kernel.mode == "out=":
            pointers = [o.data_ptr() for o in outs]  # type: ignore[union-attr]
            try:
                out_variant(op).call(op, args, kwargs, outs)  # type: ignore[union-attr]
            except RuntimeError:  # the variant refused these outputs: copy from now on
                kernel.mode = "copied"
            else:
                if [o.data_ptr() for o in outs] != pointers:  # type: ignore[union-attr]
                    raise ExecutionError(
                        f"kernel {node.name!r} ({_op_name(node)}) moved its output out of the "
                        "arena (resized it)",
                        hint="the captured shapes differ from the real ones; capture again",
                    )
        if kernel.mode == "copied":
            result = op(*args, **kwargs)  # type: ignore[operator]
            for out, value in zip(outs, internals.tree_leaves(result), strict=False):
                if out is not None:
                    out.copy_(value)
        elif kernel.mode == "in place":
            op(*args, **kwargs)  # type: ignore[operator]
    for name, (home, temporary) in staged.items():
        if name in kernel.written:
            home.copy_(temporary)



def _snapshots(
    step: CapturedStep, final: Mapping[str, torch.Tensor]
) -> tuple[dict[int, list[tuple[int, _Ref]]], list[Any]]:
    """Where to read each returned value: the end of the step, or just after its last kernel."""
    output = next(n for n in step.traced.module.graph.nodes if n.op == "output")
    values = output.args[0] if isinstance(output.args[0], list | tuple) else [output.args[0]]
    live = step.graph.liveness
    at: dict[int, list[tuple[int, _Ref]]] = collections.defaultdict(list)
    returned: list[Any] = []
    for i, value in enumerate(values):
        ref = _ref(step, _vals(value))
        returned.append(ref)
        if ref.name not in final:
            at[int(live.last[step.graph.tensor_index[ref.name]])].append((i, ref))
    return at, returned


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


__all__ = ["CapturedStep", "RealRun", "captured_step", "run_plan"]
