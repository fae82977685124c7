"""Every torch-internal API the plugin relies on, in one small module.

The plugin pins ``torch==2.13.0``; when a new torch release moves one of these,
this is the only module to change. Nothing else in the package imports a
private torch name.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
import torch.compiler
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)
from torch.fx import traceback as fx_traceback
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
DEVICE_MISMATCH_ERRORS = (getattr(fake_tensor, "FakeTensorDeviceMismatchError", RuntimeError),)
"""Raised by an op given tensors on two devices (a model on ``meta``, inputs on the CPU);
torch before 2.13 raises a plain ``RuntimeError``."""


def new_fake_mode() -> FakeTensorMode:
    """A fake-tensor mode; real tensors met while tracing become constants of the graph."""
    return FakeTensorMode(allow_non_fake_inputs=True)


def to_fake(
    mode: FakeTensorMode, tensor: torch.Tensor, device: torch.device | None = None
) -> torch.Tensor:
    """A fake copy of ``tensor`` (same shape, dtype and strides; no data), on ``device``
    (default: ``tensor``'s own), which needs no such device here: see :func:`fake_device_reason`.
    """
    if device is None or device == tensor.device:
        return mode.from_tensor(tensor)
    with mode:
        fake = torch.empty_strided(tuple(tensor.shape), tuple(tensor.stride()),
                                   dtype=tensor.dtype, device=device)
    return fake.requires_grad_(tensor.requires_grad)


def fake_device_reason(device: torch.device) -> str | None:
    """Why this torch cannot trace on fake tensors of ``device``, or ``None`` when it can.

    A CPU-only build makes fake CUDA tensors, but autograd aborts the process on them
    (no device guard) and dispatch picks the CPU's kernels, so it is refused up front.
    """
    if device.type == "cuda" and not torch.backends.cuda.is_built():
        return (f"this torch ({torch.__version__}) is a CPU-only build: it cannot trace for "
                f"device {str(device)!r}, where kernels (scaled_dot_product_attention ...) are "
                "chosen by the device")
    if device.type not in ("cpu", "cuda", "meta"):
        return f"tracing for device {str(device)!r} is not supported (cpu, cuda and meta are)"
    return None


def default_foreach(params: Sequence[torch.Tensor]) -> bool:
    """Whether torch's optimizers would take their ``foreach`` path for real tensors on these
    parameters' devices (on CUDA they do; fake tensors alone would never)."""
    from torch.optim.optimizer import _get_foreach_kernels_supported_devices

    devices = _get_foreach_kernels_supported_devices()
    return bool(params) and all(p.device.type in devices for p in params)


def compiled_original(model: Any) -> torch.nn.Module | None:
    """The module ``torch.compile`` wrapped, when ``model`` is such a wrapper, else ``None``."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")  # not loaded: nothing compiled
    if eval_frame is not None and isinstance(model, eval_frame.OptimizedModule):
        return model._orig_mod  # type: ignore[no-any-return]
    return None


@contextlib.contextmanager
def traceable_library_paths() -> Iterator[None]:
    """Make library code take the paths it takes under ``torch.compile``.

    Optimizers then keep their step counters as tensors instead of calling
    ``.item()`` (which no fake tensor can answer). Code compiled with
    ``torch.compile`` runs eagerly meanwhile, so that its ATen ops are traced.
    """
    previous = torch.compiler._is_compiling_flag
    torch.compiler._is_compiling_flag = True
    try:
        with torch.compiler.set_stance("force_eager"):
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


MODULE_STACK = "nn_module_stack"
"""The node meta of the modules a node was called from: ``{key: (qualified name, class)}``,
outermost first, as torch.export and dynamo write it."""


@contextlib.contextmanager
def module_paths(model: torch.nn.Module) -> Iterator[None]:
    """While this lasts, every node traced records the modules of ``model`` it was called
    from (:data:`MODULE_STACK`; read back by :func:`module_of`).

    Forward hooks on each module of ``model`` keep the stack of modules running (a module
    called through ``__call__``; one called as ``module.forward(...)`` counts as its
    caller), and torch.fx copies it into each node made meanwhile (``preserve_node_meta``:
    the path dynamo takes). What runs in no module of ``model`` (the backward pass, the
    optimizer, a loss outside the model) records none.
    """
    stack: list[tuple[str, str]] = []

    def publish() -> None:
        fx_traceback.current_meta[MODULE_STACK] = {name: (name, cls) for name, cls in stack}

    def entering(name: str, cls: str) -> Callable[..., None]:
        def hook(module: torch.nn.Module, args: Any) -> None:
            stack.append((name, cls))
            publish()
        return hook

    def leaving(module: torch.nn.Module, args: Any, output: Any) -> None:
        if stack:
            stack.pop()
        publish()

    handles = []
    with fx_traceback.preserve_node_meta():
        try:
            for name, module in model.named_modules():
                cls = f"{type(module).__module__}.{type(module).__qualname__}"
                handles.append(module.register_forward_pre_hook(entering(name, cls)))
                handles.append(module.register_forward_hook(leaving, always_call=True))
            publish()
            yield
        finally:
            for handle in handles:
                handle.remove()


def module_of(node: torch.fx.Node) -> str:
    """The qualified name of the innermost module a node traced under :func:`module_paths`
    was called from (``"transformer.h.3.mlp.c_fc"``); ``""`` for the model itself or none."""
    stack = node.meta.get(MODULE_STACK) or {}
    return str(next(reversed(stack.values()))[0]) if stack else ""


def may_rerun(target: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether running an ATen op again on the same inputs gives the same outputs and does
    nothing else, so that a plan may recompute them.

    - Not for an op with a side effect (registered as effectful, or one of torch's
      side-effectful functions). Writing an argument in place is no side effect here: the
      graph lists it among the kernel's outputs, and autotm-core reruns such a kernel only
      to fill a tensor its producer's rerun remade (``RecomputeFacts.fill_of``).
    - A random op (torch's ``nondeterministic_seeded`` tag) that autotm-core names random
      (``autotm_core.ir.reruns_safely``: dropout, ``bernoulli_``, ``rand*``, ``normal_`` ...)
      and draws from the default generator: yes, since the torch executor restores that
      generator's state before a rerun (:mod:`autotm_torch.real_kernels`) and a checkpoint
      policy keeps the recomputed random ops a prefix of the forward pass's
      (:mod:`autotm_torch.policy`), as ``torch.utils.checkpoint`` with
      ``preserve_rng_state`` needs. Not with an explicit ``generator``.
    - Another op carrying the tag: only when its ``dropout_p`` argument is 0 (the attention
      kernels carry the tag for their optional dropout, which a policy could not tell).
    """
    if _side_effect(target):
        return False
    if not is_random(target):
        return True
    schema = target._schema
    for i, argument in enumerate(schema.arguments):
        value = kwargs.get(argument.name, args[i] if i < len(args) else argument.default_value)
        if argument.name == "dropout_p":
            return isinstance(value, int | float) and value == 0
        if argument.name == "generator" and value is not None:
            return False
    from autotm_core.ir import reruns_safely

    return not reruns_safely(schema.name)


def _side_effect(target: Any) -> bool:
    """Whether an op has an effect besides writing its arguments (effectful, or one of
    torch's side-effectful functions)."""
    from torch._higher_order_ops.effects import _get_effect
    from torch.fx.node import _side_effectful_functions

    return target in _side_effectful_functions or _get_effect(target) is not None


def is_random(target: Any) -> bool:
    """Whether an ATen op draws random numbers (torch's ``nondeterministic_seeded`` tag)."""
    return torch.Tag.nondeterministic_seeded in getattr(target, "tags", ())


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


def tree_flatten(value: Any) -> tuple[list[Any], Any]:
    """The leaves of a nested structure and its shape, for :func:`tree_unflatten`."""
    from torch.utils._pytree import tree_flatten as flatten

    return flatten(value)


def tree_unflatten(leaves: Sequence[Any], spec: Any) -> Any:
    """The structure ``spec`` describes, with ``leaves`` in it."""
    from torch.utils._pytree import tree_unflatten as unflatten

    return unflatten(list(leaves), spec)


def tree_map(fn: Callable[[Any], Any], value: Any) -> Any:
    """``value`` with ``fn`` applied to every leaf of its tuples, lists and dicts."""
    from torch.utils._pytree import tree_map as mapped

    return mapped(fn, value)
