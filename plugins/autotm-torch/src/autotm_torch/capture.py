"""Capture a training step or an inference pass as an ATen-level FX graph, on fake tensors.

The model's parameters and buffers, the optimizer's state, the inputs and the
targets become the placeholders of one traced function, which runs the forward
pass, the loss, ``loss.backward()`` and ``optimizer.step()`` (or only the
forward pass under ``torch.no_grad()``). Tracing happens below autograd, so the
backward pass and the optimizer's in-place updates appear as ATen ops. The
traced parameters stand in for the module's own for the whole step, backward
included, so the recomputation of activation checkpointing reads them as the
forward pass did. Each node records the modules of the model it was called from
(``nn_module_stack``). Each placeholder and each returned value comes with a :class:`Role`
saying what it is; :mod:`autotm_torch.lower` turns the whole into an autotm-core graph.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import torch

from autotm_core.errors import PluginError, UsageError
from autotm_core.ir import TensorKind
from autotm_torch import _torch_internals as internals
from autotm_torch.errors import explain_capture_failure
from autotm_torch.inputs import example_inputs as example_inputs_of
from autotm_torch.inputs import loss_function, output_tensors
from autotm_torch.optimizers import build_optimizer, initialise_state, state_tensors

logger = logging.getLogger(__name__)


@attrs.frozen
class Role:
    """What one placeholder or returned value of the traced function is."""

    name: str
    """Name of its tensor in the IR (e.g. ``param:fc.weight``, ``input:0``)."""
    kind: TensorKind
    """Its kind in the IR."""


@attrs.frozen
class Traced:
    """A traced step and the roles of its placeholders and outputs."""

    module: torch.fx.GraphModule
    """The ATen-level graph."""
    inputs: tuple[Role, ...]
    """One role per placeholder, in order."""
    outputs: tuple[Role, ...]
    """One role per returned tensor, in order."""
    device: str = ""
    """The type of device traced for (``"cpu"``, ``"cuda"``): the graph's
    :attr:`~autotm_core.ir.Graph.captured_for`."""


def _as_tuple(value: Any, what: str) -> tuple[torch.Tensor, ...]:
    items = (value,) if isinstance(value, torch.Tensor) else tuple(value)
    for i, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise UsageError(
                f"{what} #{i} is a {type(item).__name__}, not a tensor",
                hint=f"give the {what}s as a tensor or a tuple of tensors",
            )
    return items


@contextlib.contextmanager
def _mode(model: torch.nn.Module, training: bool) -> Iterator[None]:
    was_training = model.training
    model.train(training)
    try:
        yield
    finally:
        model.train(was_training)


class _Holder(torch.nn.Module):
    """Holds the model, so that ``functional_call`` swaps its parameters for a whole step."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, body: Callable[[], Any]) -> Any:
        return body()


def _swapped(holder: _Holder, names: Sequence[str], values: Sequence[torch.Tensor],
             body: Callable[[], Any]) -> Any:
    """``body()`` with the model's parameters and buffers ``names`` replaced by ``values``.

    The swap lasts for all of ``body``: the forward pass, the backward pass and what
    activation checkpointing recomputes in it, so that recomputation reads the traced
    parameters, not the module's real ones.
    """
    tensors = {f"model.{n}": v for n, v in zip(names, values, strict=True)}
    return torch.func.functional_call(holder, tensors, (body,))


def original_module(model: Any) -> Any:
    """``model``, or the module it wraps when it was made by ``torch.compile`` (with a note)."""
    original = internals.compiled_original(model)
    if original is None:
        return model
    logger.warning("the model is a torch.compile wrapper: capturing the %s it compiles "
                   "(_orig_mod) eagerly; the graph holds its ATen ops, not inductor's kernels",
                   type(original).__name__)
    return original


def _device(device: Any) -> torch.device | None:
    if device is None:
        return None
    try:
        found = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise UsageError(f"device {device!r} is not a torch device: {exc}",
                         hint="give e.g. device='cuda' or device='cpu'") from None
    reason = internals.fake_device_reason(found)
    if reason is not None:
        raise PluginError(f"cannot capture for device {str(found)!r}: {reason}",
                          hint="capture where torch has that device's build, or leave out "
                          "device (a CPU trace)")
    return found


def _device_type(device: torch.device | None, tensors: Sequence[torch.Tensor]) -> str:
    """The type of device a step is traced for: ``device``'s, else the model's and inputs'
    own (``"cpu"`` when they have none)."""
    if device is not None:
        return device.type
    return next((t.device.type for t in tensors if t.device.type != "meta"), "cpu")


def capture(
    model: torch.nn.Module,
    example_inputs: Any,
    *,
    loss: Any = None,
    targets: Any = (),
    optimizer: Any = None,
    device: Any = None,
) -> Traced:
    """Trace one training step (``optimizer`` given) or one inference pass (neither given).

    ``example_inputs`` are the model's positional arguments (a tensor or a tuple) or
    its keyword arguments (a mapping, e.g. a Hugging Face batch); see
    :mod:`autotm_torch.inputs`, which also says what ``loss`` may be. ``device``
    traces on fake tensors of that device (e.g. ``"cuda"``) instead of the tensors' own.
    """
    model = original_module(model)
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"the torch frontend captures a torch.nn.Module, not a {type(model).__name__}",
            hint="pass the model object, or a 'package.module:factory' spec",
        )
    if loss is not None and optimizer is None:
        raise UsageError(
            "a loss was given without an optimizer: a training step needs both",
            hint="pass optimizer=... (e.g. 'sgd' or 'adam'), or leave out the loss for inference",
        )
    loss_fn = loss_function(loss)
    batch = example_inputs_of(example_inputs)
    target_values = _as_tuple(targets, "target")
    target_device = _device(device)
    mode = internals.new_fake_mode()
    named = [(f"param:{n}", t) for n, t in model.named_parameters()]
    named += [(f"buffer:{n}", t) for n, t in model.named_buffers()]
    fake_of = {t: internals.to_fake(mode, t.detach(), target_device) for _, t in named}
    for real, fake in fake_of.items():
        fake.requires_grad_(real.requires_grad and optimizer is not None)
    state = [fake_of[t] for _, t in named]
    roles = [Role(n, TensorKind.PARAMETER) for n, _ in named]
    module_names = [n.split(":", 1)[1] for n, _ in named]
    data = [internals.to_fake(mode, t, target_device) for t in batch.tensors + target_values]
    data_roles = [Role(f"input:{name}", TensorKind.INPUT) for name in batch.names]
    data_roles += [Role(f"target:{i}", TensorKind.INPUT) for i in range(len(target_values))]
    n_inputs = len(batch.tensors)
    model_name = type(model).__name__
    traced_for = _device_type(target_device, [t for _, t in named] + list(batch.tensors))
    holder = _Holder(model)

    def run_model(tensors: Sequence[torch.Tensor]) -> Any:
        args, kwargs = batch.arguments(tensors)
        return model(*args, **kwargs)

    if optimizer is None:
        def forward(*flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
            with torch.no_grad():
                out = _swapped(holder, module_names, flat[: len(state)],
                               lambda: run_model(flat[len(state):]))
            return output_tensors(out)

        with _mode(model, False), explain_capture_failure(model_name), \
                internals.module_paths(model):
            module = internals.trace(forward, state + data)
        n_out = len(next(n for n in module.graph.nodes if n.op == "output").args[0])
        outputs = tuple(Role(f"output:{i}", TensorKind.OUTPUT) for i in range(n_out))
        return Traced(module, tuple(roles + data_roles), outputs, traced_for)

    trainable = [fake_of[t] for _, t in named if fake_of[t].requires_grad]
    names_of = {fake_of[t]: n.split(":", 1)[1] for n, t in named}
    with explain_capture_failure(f"{model_name}'s optimizer"):
        opt = build_optimizer(optimizer, fake_of=fake_of, fake_params=state)
        initialise_state(opt, mode)
    states = state_tensors(opt, names_of)
    state_roles = [Role(name, TensorKind.OPTIMIZER_STATE) for _, _, name, _ in states]
    n_state, n_opt = len(state), len(states)
    with_grad: list[torch.Tensor] = []

    def step(*flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        params, opt_state = flat[:n_state], flat[n_state : n_state + n_opt]
        batch_values = flat[n_state + n_opt :]
        traced = {id(fake): params[i] for i, fake in enumerate(state)}

        def body() -> tuple[torch.Tensor, list[torch.Tensor]]:
            value = loss_fn(run_model(batch_values[:n_inputs]), *batch_values[n_inputs:])
            _check_loss(value)
            value.backward()
            with_grad[:] = [p for p in trainable if traced[id(p)].grad is not None]
            grads = [traced[id(p)].grad for p in with_grad]
            opt.step()
            return value, grads  # type: ignore[return-value]

        with _swap_optimizer(opt, traced, states, opt_state):
            value, grads = _swapped(holder, module_names, params, body)
        return (value, *grads)

    with _mode(model, True), explain_capture_failure(model_name), internals.module_paths(model):
        module = internals.trace(step, state + [value for *_, value in states] + data)
    grad_roles = [Role(f"grad:{names_of[p]}", TensorKind.GRADIENT) for p in with_grad]
    outputs = (Role("output:loss", TensorKind.OUTPUT), *grad_roles)
    return Traced(module, tuple(roles + state_roles + data_roles), outputs, traced_for)


@contextlib.contextmanager
def _swap_optimizer(
    opt: torch.optim.Optimizer,
    traced: dict[int, torch.Tensor],
    states: Sequence[tuple[torch.Tensor, str, str, torch.Tensor]],
    values: Sequence[torch.Tensor],
) -> Iterator[None]:
    """Point the optimizer at the traced parameters and state tensors while the step runs."""
    saved_params = [group["params"] for group in opt.param_groups]
    saved_state = opt.state
    new_state: defaultdict[torch.Tensor, dict[str, Any]] = defaultdict(dict)
    for param, entry in saved_state.items():
        new_state[traced[id(param)]] = dict(entry)
    for (param, key, _, _), value in zip(states, values, strict=True):
        new_state[traced[id(param)]][key] = value
    for group in opt.param_groups:
        group["params"] = [traced[id(p)] for p in group["params"]]
    opt.state = new_state  # type: ignore[assignment]
    try:
        yield
    finally:
        for group, params in zip(opt.param_groups, saved_params, strict=True):
            group["params"] = params
        opt.state = saved_state


def _check_loss(value: Any) -> None:
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise PluginError(
            f"the loss returned {shape}, not a scalar tensor",
            hint="make loss(output, *targets) return a single-element tensor (reduce with .mean())",
        )

