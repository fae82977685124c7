"""Lowering a traced ATen graph to an autotm-core graph: one IR tensor per storage.

- Every storage becomes one IR tensor of exactly its bytes (``untyped_storage().nbytes()``),
  named after its role (``param:fc.weight``) or the node that first produced it.
- A view (``t``, ``view``, ``expand``, ``detach``, ``getitem`` of a ``split`` ...) is no
  new tensor: whoever reads the view reads its base's storage, which therefore lives
  as long as its last view is used. A kernel that only makes views is dropped.
- An op that writes an argument (its schema marks it ``(a!)``: ``relu_``, ``add_``,
  ``out=`` variants, optimizer updates) lists that storage among both its inputs and
  its outputs.
- A multi-output op writes one IR tensor per new output storage.
- A storage of no bytes (an empty key-value cache, batch-norm's unused saved
  statistics) is no tensor, and a kernel that makes or writes nothing else is dropped.
- FLOPs come from ``torch.utils.flop_counter`` (matmul-like ops, convolutions,
  attention); other ops autotm-core's op table knows (``autotm_core.costs.op_info``)
  are left to its estimators; the rest count one flop per element written.
- Each kernel records the module it was called from (``Kernel.module``, the innermost
  module of the node's ``nn_module_stack``) and whether a plan may run it again
  (``Kernel.rerun``: not for a random op or one with a side effect,
  :func:`autotm_torch._torch_internals.may_rerun`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import attrs
import torch

from autotm_core.costs import op_info
from autotm_core.errors import PluginError
from autotm_core.ir import DTYPE_NBYTES, Graph, GraphBuilder, TensorKind
from autotm_torch import _torch_internals as internals
from autotm_torch.capture import Role, Traced


@attrs.frozen
class _Kernel:
    """One kernel met while walking the graph (storages by key)."""

    name: str
    op: str
    inputs: list[Any]
    outputs: list[Any]
    flops: float | None
    module: str
    rerun: bool


@attrs.define
class _Storage:
    """One storage met while walking the graph."""

    name: str
    nbytes: int
    kind: TensorKind
    shape: tuple[int, ...]
    dtype: str | None


def dtype_name(dtype: torch.dtype) -> str | None:
    """The IR's name of a torch dtype, or ``None`` when the IR has no name for it."""
    name = str(dtype).removeprefix("torch.")
    if name.startswith("float8"):
        return "float8"
    return name if name in DTYPE_NBYTES else None


UNMARKED_WRITES = {
    "aten::native_batch_norm": ((3, 4), 5),
    "aten::cudnn_batch_norm": ((3, 4), 5),
    "aten::miopen_batch_norm": ((3, 4), 5),
}
"""Ops that update arguments their schema does not mark as written: op -> (argument
positions, position of the ``training`` flag that makes them write). Batch-norm in
training updates its running statistics in place."""


def _unmarked_writes(op: str, args: Any) -> tuple[int, ...]:
    positions, flag = UNMARKED_WRITES.get(op, ((), None))
    if flag is None or not (len(args) > flag and args[flag] is True):
        return ()
    return positions


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in internals.tree_leaves(value) if isinstance(t, torch.Tensor)]


def written_tensors(schema: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """The tensors among an op call's arguments that it writes: those its schema marks
    written (``(a!)``) and the :data:`UNMARKED_WRITES`."""
    unmarked = _unmarked_writes(schema.name, args)
    found: list[torch.Tensor] = []
    for i, argument in enumerate(schema.arguments):
        if (argument.alias_info is None or not argument.alias_info.is_write) \
                and i not in unmarked:
            continue
        found += _tensors(kwargs.get(argument.name, args[i] if i < len(args) else None))
    return found


def is_kernel(op: Any, args: Sequence[Any], kwargs: dict[str, Any], out: Any) -> bool:
    """Whether an op call, run for real, is one the lowering makes a kernel of: it writes a
    storage of some bytes among its arguments, or returns one that is none of theirs (a
    view of an argument, or an op with nothing to store, is no kernel). The lowering knows
    every storage seen before; an ATen op's outputs alias only its arguments, so looking at
    those is the same test (what :mod:`autotm_torch.policy` counts kernels by at run time)."""
    schema = getattr(op, "_schema", None)
    if schema is None:
        return False
    if any(internals.storage_nbytes(t) for t in written_tensors(schema, args, kwargs)):
        return True
    if out is None:  # not given (torch before 2.13 hands a policy no output): the schema's
        return any(r.alias_info is None and "Tensor" in str(r.type) for r in schema.returns)
    mine = {internals.storage_key(t) for t in _tensors((args, kwargs))}
    return any(internals.storage_key(t) not in mine and internals.storage_nbytes(t)
               for t in _tensors(out))


def values_of(value: Any) -> Any:
    """``value`` with every FX node replaced by the value it computed."""
    if isinstance(value, torch.fx.Node):
        return value.meta.get("val")
    if isinstance(value, list | tuple):
        return type(value)(values_of(v) for v in value)
    if isinstance(value, dict):
        return {k: values_of(v) for k, v in value.items()}
    return value


class _Lowering:
    def __init__(self, traced: Traced, name: str) -> None:
        self.traced = traced
        self.storages: dict[Any, _Storage] = {}
        self.builder = GraphBuilder(name, captured_for=traced.device)
        self.kernels: list[_Kernel] = []
        self.names: set[str] = set()

    def storage(self, tensor: torch.Tensor, name: str, kind: TensorKind) -> Any:
        key = internals.storage_key(tensor)
        if key not in self.storages:
            unique, n = name, 1
            while unique in self.names:
                unique, n = f"{name}.{n}", n + 1
            self.names.add(unique)
            self.storages[key] = _Storage(
                unique, internals.storage_nbytes(tensor), kind,
                tuple(int(d) for d in tensor.shape), dtype_name(tensor.dtype),
            )
        return key

    def stored(self, keys: dict[Any, None]) -> dict[Any, None]:
        """``keys`` less the storages of no bytes (they hold nothing to place)."""
        return {key: None for key in keys if self.storages[key].nbytes}

    def known(self, tensor: torch.Tensor) -> Any:
        key = internals.storage_key(tensor)
        return key if key in self.storages else None

    def run(self) -> Graph:
        roles = iter(self.traced.inputs)
        module = self.traced.module
        for node in module.graph.nodes:
            if node.op == "placeholder":
                role = next(roles)
                self.storage(node.meta["val"], role.name, role.kind)
            elif node.op == "get_attr":
                value = node.meta.get("val", getattr(module, node.target, None))
                for tensor in _tensors(value):
                    self.storage(tensor, f"constant:{node.target}", TensorKind.CONSTANT)
            elif node.op == "call_function" and node.target is not operator.getitem:
                self.call(node)
            elif node.op == "output":
                self.outputs(node)
        return self.build()

    def call(self, node: torch.fx.Node) -> None:
        target = node.target
        schema = getattr(target, "_schema", None)
        if schema is None:
            raise PluginError(
                f"cannot lower node {node.name!r}: op {target} is not an ATen operator",
                hint="the torch frontend handles ATen ops only; avoid this construct in the step",
            )
        inputs: dict[Any, None] = {}
        for arg in (*node.args, *node.kwargs.values()):
            for tensor in _tensors(values_of(arg)):
                key = self.known(tensor)
                if key is None:  # a tensor made outside the graph: a constant
                    key = self.storage(tensor, f"constant:{node.name}", TensorKind.CONSTANT)
                inputs[key] = None
        written = {internals.storage_key(tensor): None for tensor in
                   written_tensors(schema, values_of(node.args), values_of(node.kwargs))}
        out = node.meta.get("val")
        new: dict[Any, None] = {}
        for tensor in _tensors(out):
            if self.known(tensor) is None:
                new[self.storage(tensor, node.name, TensorKind.ACTIVATION)] = None
        inputs, written, new = (self.stored(keys) for keys in (inputs, written, new))
        if not new and not written:
            return  # a view, or an op with nothing to store
        flops = internals.op_flops(target, values_of(node.args), values_of(node.kwargs), out)
        op = schema.name
        if flops is None and op_info(op) is None:
            flops = sum(math.prod(t.shape) for t in _tensors(out))
        self.kernels.append(_Kernel(
            node.name, op, [*inputs, *(k for k in written if k not in inputs)],
            [*written, *new], flops, internals.module_of(node),
            internals.may_rerun(target, node.args, node.kwargs)))

    def outputs(self, node: torch.fx.Node) -> None:
        values = list(node.args[0]) if isinstance(node.args[0], list | tuple) else [node.args[0]]
        for role, value in zip(self.traced.outputs, values, strict=True):
            for tensor in _tensors(values_of(value)):
                storage = self.storages[internals.storage_key(tensor)]
                if storage.kind is TensorKind.ACTIVATION and role.name not in self.names:
                    self.names.add(role.name)
                    storage.kind, storage.name = role.kind, role.name

    def build(self) -> Graph:
        b = self.builder
        for s in self.storages.values():
            if not s.nbytes:
                continue
            b.tensor(s.name, nbytes=s.nbytes, kind=s.kind, shape=s.shape, dtype=s.dtype)
        names = {key: s.name for key, s in self.storages.items()}
        for k in self.kernels:
            b.kernel(k.name, op=k.op, inputs=[names[s] for s in k.inputs],
                     outputs=[names[s] for s in k.outputs], flops=k.flops, module=k.module,
                     rerun=k.rerun)
        return b.build()


def lower(traced: Traced, *, name: str) -> Graph:
    """The verified autotm-core graph of ``traced``, called ``name``."""
    return _Lowering(traced, name).run()


def lower_with_storages(traced: Traced, *, name: str) -> tuple[Graph, dict[Any, str]]:
    """The graph of ``traced`` and the IR tensor of each storage (by :func:`storage_key`) that
    has bytes (the others are in no graph)."""
    lowering = _Lowering(traced, name)
    graph = lowering.run()
    return graph, {key: s.name for key, s in lowering.storages.items() if s.nbytes}


__all__ = ["Role", "is_kernel", "lower", "lower_with_storages", "written_tensors"]
