"""Where the tensors of a captured step are in a plan's arenas, resolved once before a run.

Every fake tensor of the trace becomes a :class:`TensorRef`: which graph tensor
(its storage) and the view geometry (dtype, shape, strides, storage offset) the
trace recorded. At a kernel, a reference is rebuilt as a torch view over the
bytes of that tensor's residency (:func:`view`), so a tensor moved to another
pool is read there. A storage of no bytes is in no graph (the lowering leaves
it out): its references are rebuilt as fresh empty tensors.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import torch

from autotm_core.errors import ExecutionError
from autotm_torch import _torch_internals as internals
from autotm_torch.capture import Traced
from autotm_torch.lower import values_of
from autotm_torch.out_variants import out_variant

EMPTY = ""
"""The tensor name of a reference to a storage of no bytes (in no graph)."""


@attrs.frozen
class TensorRef:
    """A fake tensor of the trace: which graph tensor, and its view geometry."""

    name: str
    """Graph tensor of its storage (:data:`EMPTY` for a storage of no bytes)."""
    dtype: torch.dtype
    """Element type of the view."""
    shape: tuple[int, ...]
    """Shape of the view."""
    stride: tuple[int, ...]
    """Strides of the view, in elements."""
    storage_offset: int
    """Offset of the view in its storage, in elements."""


@attrs.define
class KernelRun:
    """One kernel, resolved: its arguments as references, where each tensor is, how to run it."""

    node: torch.fx.Node
    """The FX node it runs."""
    mode: str
    """``in place``, ``out=`` or ``copied`` (see :mod:`autotm_torch.real_kernels`)."""
    args: Any
    """Positional arguments, tensors as :class:`TensorRef`."""
    kwargs: Any
    """Keyword arguments, tensors as :class:`TensorRef`."""
    returns: list[TensorRef | None]
    """Each returned tensor that is a new storage (``None``: a view or nothing to keep)."""
    places: dict[str, tuple[int, int, int]]
    """(arena, offset, bytes) of every tensor it touches."""
    written: set[str]
    """Tensors it writes."""
    staged: set[str]
    """Tensors in an arena on another device than the step's."""
    bound: tuple[Any, Any, list[torch.Tensor | None]] | None = None
    """Arguments and results as arena views, when none is staged (made once)."""


def ref_of(storages: Mapping[Any, str], tensor: torch.Tensor) -> TensorRef:
    """The reference of fake ``tensor`` (``storages``: storage key -> graph tensor)."""
    key = internals.storage_key(tensor)
    name = storages.get(key)
    if name is None:
        if internals.storage_nbytes(tensor):
            raise ExecutionError(
                f"a tensor of shape {tuple(tensor.shape)} of the captured step is in no graph",
                hint="lower the step with autotm_torch.real_kernels.captured_step",
            )
        name = EMPTY
    return TensorRef(name, tensor.dtype, tuple(tensor.shape), tuple(tensor.stride()),
                     int(tensor.storage_offset()))


def view(region: torch.Tensor, ref: TensorRef) -> torch.Tensor:
    """``ref``'s view over the bytes of its storage."""
    if ref.name == EMPTY:
        return torch.empty_strided(ref.shape, ref.stride, dtype=ref.dtype, device=region.device)
    typed = region.view(ref.dtype)
    return typed.as_strided(ref.shape, ref.stride, typed.storage_offset() + ref.storage_offset)


def storage_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage of ``tensor`` as a 1-D ``uint8`` tensor (shared, not copied)."""
    storage = tensor.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(
        storage, 0, (storage.nbytes(),), (1,))


def placeholders(traced: Traced) -> list[torch.fx.Node]:
    """The placeholder nodes of the trace, in order."""
    return [n for n in traced.module.graph.nodes if n.op == "placeholder"]


def initial_values(
    traced: Traced, storages: Mapping[Any, str], values: Sequence[torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The real tensor holding each graph tensor's bytes before the step: ``values`` (one per
    placeholder) and the constants of the trace."""
    if len(values) != len(traced.inputs):
        raise ExecutionError(
            f"the captured step takes {len(traced.inputs)} tensors, {len(values)} were given",
            hint="build them with autotm_torch.step_values.step_values",
        )
    found: dict[str, torch.Tensor] = {}

    def add(fake: torch.Tensor, real: torch.Tensor) -> None:
        name = storages.get(internals.storage_key(fake))
        if name is not None:  # a storage of no bytes holds nothing to copy
            found.setdefault(name, real)

    for node, value in zip(placeholders(traced), values, strict=True):
        add(node.meta["val"], value)
    module = traced.module
    for node in module.graph.nodes:
        if node.op == "get_attr":
            real = getattr(module, node.target)  # type: ignore[arg-type]
            add(node.meta.get("val", real), real)
        elif node.op == "call_function":
            for arg in internals.tree_leaves((node.args, node.kwargs)):
                if isinstance(arg, torch.Tensor):  # a real tensor made outside the graph
                    add(arg, arg)
    return found


def resolve_kernels(
    traced: Traced, graph: Any, storages: Mapping[Any, str], program: Any,
    device_of: Callable[[int], torch.device], device: torch.device,
    region: Callable[[int, int, int], torch.Tensor],
) -> list[KernelRun]:
    """Each kernel of ``graph`` with its node, arguments, places and way to run."""
    by_name = {n.name: n for n in traced.module.graph.nodes}
    return [_resolve(by_name[kernel.name], kernel, graph,
                     program.rows[program.kernel_ptr[k]:program.kernel_ptr[k + 1]],
                     storages, device_of, device, region)
            for k, kernel in enumerate(graph.kernels)]


def resolve_reruns(
    traced: Traced, graph: Any, storages: Mapping[Any, str], program: Any,
    device_of: Callable[[int], torch.device], device: torch.device,
    region: Callable[[int, int, int], torch.Tensor],
) -> list[KernelRun]:
    """Each rerun of the program (:attr:`autotm_core.executor.Program.reruns`) as its
    kernel's node resolved over the rerun's rows: its inputs where they are at the rerun's
    boundary, its outputs where the rerun writes them."""
    by_name = {n.name: n for n in traced.module.graph.nodes}
    return [_resolve(by_name[graph.kernels[ops.kernel].name], graph.kernels[ops.kernel], graph,
                     ops.rows, storages, device_of, device, region)
            for ops in program.reruns]


def _resolve(
    node: torch.fx.Node, kernel: Any, graph: Any, rows: Any, storages: Mapping[Any, str],
    device_of: Callable[[int], torch.device], device: torch.device,
    region: Callable[[int, int, int], torch.Tensor],
) -> KernelRun:
    """``kernel`` (of ``node``) over its program ``rows``: reads, then writes, then scratch."""

    def to_ref(value: Any) -> Any:
        return ref_of(storages, value) if isinstance(value, torch.Tensor) else value

    names = [*dict.fromkeys(kernel.inputs), *dict.fromkeys(kernel.outputs)]
    places = {n: (int(r[0]), int(r[1]), graph.tensor(n).nbytes)
              for n, r in zip(names, rows, strict=False)}
    new = set(kernel.outputs) - set(kernel.inputs)
    returns = [ref_of(storages, t) if isinstance(t, torch.Tensor)
               and storages.get(internals.storage_key(t)) in new else None
               for t in internals.tree_leaves(node.meta.get("val"))]
    variant = out_variant(node.target)
    if not any(returns):
        mode = "in place"
    elif variant is not None and all(returns) and len(returns) == len(variant.out_names):
        mode = "out="
    else:
        mode = "copied"
    staged = {n for n, (a, _, _) in places.items() if device_of(a) != device}
    entry = KernelRun(node, mode, internals.tree_map(to_ref, values_of(node.args)),
                      internals.tree_map(to_ref, values_of(node.kwargs)), returns, places,
                      set(kernel.outputs), staged)
    if not staged:  # views over arena memory stay valid: make them once
        entry.bound = bind(entry, {n: region(*p) for n, p in places.items()}, device)
    return entry


def bind(kernel: KernelRun, regions: Mapping[str, torch.Tensor], device: torch.device) -> Any:
    """The kernel's arguments and results as views over ``regions`` (tensor -> its bytes)."""
    nothing = torch.empty(0, dtype=torch.uint8, device=device)

    def materialise(value: Any) -> Any:
        if not isinstance(value, TensorRef):
            return value
        return view(regions.get(value.name, nothing), value)

    return (internals.tree_map(materialise, kernel.args),
            internals.tree_map(materialise, kernel.kwargs),
            [materialise(r) if r is not None else None for r in kernel.returns])


def snapshots(
    traced: Traced, graph: Any, storages: Mapping[Any, str], final: Mapping[str, torch.Tensor]
) -> tuple[dict[int, list[tuple[int, TensorRef]]], list[TensorRef]]:
    """Where to read each returned value: the end of the step, or just after its last kernel."""
    output = next(n for n in traced.module.graph.nodes if n.op == "output")
    values = output.args[0] if isinstance(output.args[0], list | tuple) else [output.args[0]]
    live = graph.liveness
    at: dict[int, list[tuple[int, TensorRef]]] = collections.defaultdict(list)
    returned: list[TensorRef] = []
    for i, value in enumerate(values):
        ref = ref_of(storages, values_of(value))
        returned.append(ref)
        if ref.name != EMPTY and ref.name not in final:
            at[int(live.last[graph.tensor_index[ref.name]])].append((i, ref))
    return at, returned
