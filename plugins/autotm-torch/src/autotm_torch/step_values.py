"""The real values a captured step runs on, and eager PyTorch's own step to compare with.

A captured step (:class:`~autotm_torch.capture.Traced`) takes its parameters,
buffers, optimizer state, inputs and targets as placeholders, each with a
:class:`~autotm_torch.capture.Role` naming it (``param:fc.weight``,
``state:fc.weight.exp_avg``, ``input:0`` ...). :func:`step_values` finds the
real tensor of each role in a model and a real optimizer; :func:`warm_up`
creates the optimizer's lazy state the way the capture did (one step on zero
gradients), so that eager PyTorch and the captured step start from the same
state; :func:`eager_step` runs one ordinary training step for reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import torch

from autotm_core.errors import UsageError
from autotm_torch.capture import Traced
from autotm_torch.inputs import example_inputs, loss_function


@attrs.frozen
class EagerStep:
    """What one eager training step computed."""

    loss: torch.Tensor
    """The loss (a detached copy)."""
    grads: Mapping[str, torch.Tensor]
    """Copy of each parameter's gradient, by role name (``grad:fc.weight``)."""


def warm_up(optimizer: torch.optim.Optimizer) -> None:
    """Create ``optimizer``'s lazy state with one step on zero gradients (as the capture does)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    saved = [p.grad for p in params]
    for param in params:
        param.grad = torch.zeros_like(param)
    optimizer.step()
    for param, grad in zip(params, saved, strict=True):
        param.grad = grad


def step_values(
    traced: Traced,
    *,
    model: torch.nn.Module,
    inputs: Any,
    targets: Sequence[torch.Tensor] = (),
    optimizer: torch.optim.Optimizer | None = None,
) -> list[torch.Tensor]:
    """The real tensor of each placeholder of ``traced``, in order (the objects, not copies).

    ``inputs`` are the example inputs as the capture took them: positional or keyword.
    """
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    named_inputs = example_inputs(inputs).by_name()
    found: list[torch.Tensor] = []
    for role in traced.inputs:
        prefix, _, rest = role.name.partition(":")
        value: Any = None
        if prefix == "param":
            value = params.get(rest)
        elif prefix == "buffer":
            value = buffers.get(rest)
        elif prefix == "state" and optimizer is not None:
            name, _, key = rest.rpartition(".")
            param = params.get(name)
            value = optimizer.state.get(param, {}).get(key) if param is not None else None
        elif prefix == "input":
            value = named_inputs.get(rest)
        elif prefix == "target":
            index = int(rest)
            value = targets[index] if index < len(targets) else None
        if not isinstance(value, torch.Tensor):
            raise UsageError(
                f"no real tensor for placeholder {role.name!r} of the captured step",
                hint="pass the model, optimizer (after warm_up), inputs and targets the step "
                "was captured with",
            )
        found.append(value)
    return found


def clone_values(values: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Detached copies with the same strides (a step mutates its parameters and state in place)."""
    return [v.detach().clone(memory_format=torch.preserve_format) for v in values]


def eager_step(
    model: torch.nn.Module,
    inputs: Any,
    *,
    loss: Any,
    targets: Sequence[torch.Tensor] = (),
    optimizer: torch.optim.Optimizer,
) -> EagerStep:
    """One ordinary training step of ``model`` (train mode): forward, loss, backward, update.

    ``inputs`` and ``loss`` are what the capture takes (:mod:`autotm_torch.inputs`).
    """
    model.train()
    optimizer.zero_grad(set_to_none=True)
    batch = example_inputs(inputs)
    args, kwargs = batch.arguments(batch.tensors)
    value = loss_function(loss)(model(*args, **kwargs), *targets)
    value.backward()
    grads = {f"grad:{n}": p.grad.detach().clone() for n, p in model.named_parameters()
             if p.grad is not None}
    optimizer.step()
    return EagerStep(value.detach().clone(), grads)

