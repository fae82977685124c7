"""Run a captured step op by op on real tensors, freeing every value after its last use.

This is the independent check of the torch frontend's sizes and lifetimes: the
FX graph is interpreted node by node with real tensors (as ``torch.fx.Interpreter``
does), each value is dropped right after the last node that uses it, and the
bytes of the *storages still alive* are summed after every node. A storage is
alive while any tensor on it is alive, which PyTorch itself decides (reference
counting): the tracker only holds :class:`StorageWeakRef`\\ s and asks whether
they expired. Nothing here uses the lowering's view or lifetime rules, so the
measured peak can be compared with ``graph.liveness.peak_nbytes``.

What is held for the whole step: the placeholders the caller keeps (parameters,
buffers, optimizer state), the graph's constants (attributes of the module),
and the returned values the caller asks to keep (the loss; the gradients only
with ``keep_gradients=True``, since autotm-core's model frees a gradient after
the optimizer read it, as ``zero_grad(set_to_none=True)`` does before the next
step). Inputs and targets are released after their last use: the caller hands
over copies it does not keep.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import attrs
import torch

from autotm_core.errors import ExecutionError
from autotm_core.ir import TensorKind
from autotm_torch import _torch_internals as internals
from autotm_torch.capture import Traced

PERSISTENT_KINDS = frozenset({TensorKind.PARAMETER, TensorKind.OPTIMIZER_STATE})
"""Placeholder kinds the caller keeps alive across the step."""


@attrs.frozen
class EagerRun:
    """What one op-by-op run of a captured step produced and measured."""

    outputs: tuple[torch.Tensor | None, ...]
    """The step's returned values (loss, then gradients); ``None`` for one not kept."""
    node_names: tuple[str, ...]
    """Names of the nodes run, in order (placeholders and the output node excluded)."""
    live_nbytes: tuple[int, ...]
    """Bytes of live storages just after each node ran (its inputs not yet released)."""

    @property
    def peak_nbytes(self) -> int:
        """Largest :attr:`live_nbytes` (0 for an empty step)."""
        return max(self.live_nbytes, default=0)

    def live_at(self, node: str) -> int:
        """Live bytes measured after node ``node``."""
        return self.live_nbytes[self.node_names.index(node)]


class StorageTracker:
    """Bytes of the storages seen so far that are still alive."""

    def __init__(self) -> None:
        self._seen: dict[Any, int] = {}

    def add(self, value: Any) -> None:
        """Track the storage of every tensor in ``value`` (a tensor or a nested structure)."""
        for tensor in internals.tree_leaves(value):
            if isinstance(tensor, torch.Tensor):
                key = internals.storage_key(tensor)
                if key not in self._seen or internals.storage_expired(key):
                    self._seen.pop(key, None)  # a dead storage at a reused address
                    self._seen[key] = internals.storage_nbytes(tensor)

    def live_nbytes(self) -> int:
        """Sum of the sizes of the tracked storages not yet freed."""
        dead = [key for key in self._seen if internals.storage_expired(key)]
        for key in dead:
            del self._seen[key]
        return sum(self._seen.values())


def run_step(
    traced: Traced,
    values: list[torch.Tensor],
    *,
    keep_gradients: bool = True,
) -> EagerRun:
    """Interpret ``traced`` on ``values`` (one per placeholder), measuring live storage bytes.

    ``values`` is emptied: the run owns its tensors, so that inputs and targets
    die after their last use. Parameters, buffers and optimizer state are
    updated in place, as the step does. Errors of an op are raised naming its node.
    """
    module = traced.module
    nodes = list(module.graph.nodes)
    output = nodes[-1]
    held = _held_outputs(traced, keep_gradients)
    last_use: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in reversed(nodes):
        uses = node.all_input_nodes
        if node is output:
            uses = [a for i, a in enumerate(_flat(output.args[0])) if i in held
                    and isinstance(a, torch.fx.Node)]
        for used in uses:
            last_use.setdefault(used, node)
    if len(values) != len(traced.inputs):
        raise ExecutionError(
            f"the captured step takes {len(traced.inputs)} tensors, {len(values)} were given",
            hint="build them with autotm_torch.step_values.step_values",
        )
    keep = [v for v, role in zip(values, traced.inputs, strict=True)
            if role.kind in PERSISTENT_KINDS]
    tracker = StorageTracker()
    env: dict[torch.fx.Node, Any] = {}
    placeholders = iter(range(len(values)))
    for node in nodes:
        if node.op == "placeholder":
            env[node] = values[next(placeholders)]
        elif node.op == "get_attr":
            env[node] = getattr(module, node.target)  # type: ignore[arg-type]
        else:
            continue
        tracker.add(env[node])
    values.clear()
    names, live = [], []
    with torch.no_grad():
        for node in nodes:
            if node.op in ("call_function", "call_method"):
                args = torch.fx.node.map_arg(node.args, env.__getitem__)
                kwargs = torch.fx.node.map_arg(node.kwargs, env.__getitem__)
                with _naming(node):
                    env[node] = node.target(*args, **kwargs)  # type: ignore[operator]
                tracker.add(env[node])
                del args, kwargs
                names.append(node.name)
                live.append(tracker.live_nbytes())
            elif node is output:
                returned = tuple(env[a] if i in held and isinstance(a, torch.fx.Node) else None
                                 for i, a in enumerate(_flat(output.args[0])))
            for used in node.all_input_nodes:
                if last_use.get(used) is node:
                    del env[used]
            if node.op not in ("placeholder", "get_attr") and last_use.get(node) is None:
                env.pop(node, None)  # a value nobody reads: dropped at once
    del keep
    return EagerRun(returned, tuple(names), tuple(live))


def _held_outputs(traced: Traced, keep_gradients: bool) -> set[int]:
    return {i for i, role in enumerate(traced.outputs)
            if keep_gradients or role.kind is not TensorKind.GRADIENT}


def _flat(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


@contextlib.contextmanager
def _naming(node: torch.fx.Node) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        raise ExecutionError(
            f"node {node.name!r} ({node.target}) failed on real tensors: "
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
            hint="the captured step runs ATen ops as traced; check that the model runs eagerly "
            "on the same inputs",
        ) from exc
