"""Every torch-internal API the plugin relies on, in one small module.

The plugin pins ``torch==2.13.0``; when a new torch release moves one of these,
this is the only module to change. Nothing else in the package imports a
private torch name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.compiler
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)
from torch.fx.experimental.proxy_tensor import make_fx
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils.flop_counter import flop_registry

TESTED_TORCH = "2.13.0"
"""The torch release these internals were written against (the plugin's pin)."""

DATA_DEPENDENT_ERRORS = (DataDependentOutputException,)
"""Raised when a tensor's value is needed while tracing (``.item()``, ``if tensor:``)."""
DYNAMIC_SHAPE_ERRORS = (DynamicOutputShapeException,)
"""Raised by an op whose output shape depends on tensor values (``nonzero``, ``unique``)."""
UNSUPPORTED_OP_ERRORS = (UnsupportedOperatorException,)
"""Raised by an op that has no fake-tensor (meta) implementation."""


def new_fake_mode() -> FakeTensorMode:
    """A fake-tensor mode; real tensors met while tracing become constants of the graph."""
    return FakeTensorMode(allow_non_fake_inputs=True)


def to_fake(mode: FakeTensorMode, tensor: torch.Tensor) -> torch.Tensor:
    """A fake copy of ``tensor`` (same shape, dtype, strides and device; no data)."""
    return mode.from_tensor(tensor)


@contextlib.contextmanager
def traceable_library_paths() -> Iterator[None]:
    """Make library code take the paths it takes under ``torch.compile``.

    Optimizers then keep their step counters as tensors instead of calling
    ``.item()`` (which no fake tensor can answer).
    """
    previous = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = previous


def trace(fn: Callable[..., Any], args: Sequence[torch.Tensor]) -> torch.fx.GraphModule:
    """The ATen-level graph of ``fn(*args)``, run on fake tensors below autograd.

    ``args`` are fake tensors of one mode; the trace reuses that mode, so it
    allocates no real memory and runs no real compute. Library code takes its
    traceable paths meanwhile (see :func:`traceable_library_paths`).
    """
    with traceable_library_paths():
        return make_fx(fn, tracing_mode="fake")(*args)


def storage_key(tensor: torch.Tensor) -> Any:
    """A hashable identity of the storage under ``tensor`` (equal for views of one base)."""
    return StorageWeakRef(tensor.untyped_storage())


def storage_expired(key: Any) -> bool:
    """Whether the storage a :func:`storage_key` was taken of has been freed."""
    return bool(key.expired())


def storage_nbytes(tensor: torch.Tensor) -> int:
    """Bytes of the whole storage under ``tensor`` (not its logical size)."""
    return int(tensor.untyped_storage().nbytes())


def op_flops(target: Any, args: Any, kwargs: Any, out: Any) -> int | None:
    """FLOPs of one ATen op call from torch's own formulas, or ``None`` when it has none."""
    formula = flop_registry.get(getattr(target, "overloadpacket", None))
    if formula is None:
        return None
    try:
        return int(formula(*args, **kwargs, out_val=out))
    except Exception:  # a formula that cannot read these arguments: let the core estimate
        return None


def tree_leaves(value: Any) -> list[Any]:
    """The leaves of a nested structure of tuples, lists and dicts (a model's output)."""
    from torch.utils._pytree import tree_leaves as leaves

    return leaves(value)


def tree_map(fn: Callable[[Any], Any], value: Any) -> Any:
    """``value`` with ``fn`` applied to every leaf of its tuples, lists and dicts."""
    from torch.utils._pytree import tree_map as mapped

    return mapped(fn, value)
