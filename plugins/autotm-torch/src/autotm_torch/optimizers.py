"""The optimizer of a captured step, rebuilt over the fake parameters.

A user names an optimizer (``"sgd"``, ``"adam"``), passes a factory
(``torch.optim.Adam``, ``functools.partial(torch.optim.SGD, lr=0.1)``), or an
instance built over the real model's parameters. Each becomes an optimizer of
the same class and hyper-parameters over the fake parameters, with its state
created by one warm-up step on zero gradients, so that its state tensors exist
before the traced step (they are inputs of the step, as in real training).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from autotm_core.errors import PluginError, UsageError
from autotm_torch import _torch_internals as internals

NAMED: dict[str, Callable[[Sequence[torch.Tensor]], torch.optim.Optimizer]] = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.01),
    "sgd-momentum": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3),
}
"""Optimizers known by name, with their default hyper-parameters."""


def build_optimizer(
    spec: Any, *, fake_of: Mapping[torch.Tensor, torch.Tensor],
    fake_params: Sequence[torch.Tensor], capturable: bool = True,
) -> torch.optim.Optimizer:
    """An optimizer like ``spec`` over the fake parameters (``fake_of`` maps real to fake).

    ``capturable`` sets the groups' flag of that name where they have one, as tracing
    needs; an optimizer that runs on real CPU tensors must leave it off.
    """
    if isinstance(spec, str):
        try:
            factory = NAMED[spec.lower()]
        except KeyError:
            raise UsageError(
                f"unknown optimizer {spec!r}", hint=f"use one of {', '.join(NAMED)}"
            ) from None
        optimizer = factory([p for p in fake_params if p.requires_grad])
    elif isinstance(spec, torch.optim.Optimizer):
        optimizer = _rebuild(spec, fake_of)
    elif callable(spec):
        optimizer = spec([p for p in fake_params if p.requires_grad])
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise PluginError(
                f"the optimizer factory returned {type(optimizer).__name__}, not a torch optimizer",
                hint="pass a torch.optim.Optimizer, its class, a callable params -> optimizer, "
                f"or one of {', '.join(NAMED)}",
            )
    else:
        raise UsageError(
            f"optimizer {spec!r} is not an optimizer",
            hint="pass a torch.optim.Optimizer, its class, a callable params -> optimizer, "
            f"or one of {', '.join(NAMED)}",
        )
    for group in optimizer.param_groups:
        if "capturable" in group and capturable:  # the step counter stays a tensor (no .item())
            group["capturable"] = True
        if group.get("foreach", False) is None and not group.get("fused"):
            group["foreach"] = internals.default_foreach(group["params"])  # torch's own default
    return optimizer


def _rebuild(optimizer: torch.optim.Optimizer, fake_of: Mapping[torch.Tensor, torch.Tensor]) -> Any:
    groups = []
    for group in optimizer.param_groups:
        params = []
        for param in group["params"]:
            if param not in fake_of:
                raise PluginError(
                    f"the {type(optimizer).__name__} optimizer updates a tensor of shape "
                    f"{tuple(param.shape)} that is not a parameter of the model",
                    hint="build the optimizer over model.parameters()",
                )
            params.append(fake_of[param])
        groups.append({**group, "params": params})
    try:
        return type(optimizer)(groups, **_constructor_defaults(optimizer))
    except TypeError as exc:
        raise PluginError(
            f"cannot rebuild optimizer {type(optimizer).__name__} over fake tensors: {exc}",
            hint="pass its class or a callable params -> optimizer instead of an instance",
        ) from None


def _constructor_defaults(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.defaults`` less the keys its constructor does not take.

    AdamW records ``decoupled_weight_decay`` among its defaults (from Adam) but does
    not accept it; each group keeps its own value anyway.
    """
    parameters = inspect.signature(type(optimizer).__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return dict(optimizer.defaults)
    return {k: v for k, v in optimizer.defaults.items() if k in parameters}


def initialise_state(optimizer: torch.optim.Optimizer, mode: Any) -> None:
    """Create the optimizer's lazy state with one step on zero gradients, on fake tensors."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    with mode, internals.traceable_library_paths():
        for param in params:
            param.grad = torch.zeros_like(param)
        optimizer.step()
        for param in params:
            param.grad = None


def state_tensors(
    optimizer: torch.optim.Optimizer, names: Mapping[torch.Tensor, str]
) -> list[tuple[torch.Tensor, str, str, torch.Tensor]]:
    """(parameter, state key, IR name, value) of every tensor in the optimizer's state, in order."""
    found = []
    for group in optimizer.param_groups:
        for param in group["params"]:
            for key, value in sorted(optimizer.state.get(param, {}).items()):
                if isinstance(value, torch.Tensor):
                    found.append((param, key, f"state:{names[param]}.{key}", value))
    return found
