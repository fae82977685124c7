"""A model's example arguments, positional and keyword, with every tensor among them named.

``example_inputs`` is a tensor, a tuple (or list) of positional arguments, or a
mapping of keyword arguments (a Hugging Face batch: ``input_ids``,
``attention_mask``, ``labels`` ...). Each tensor becomes a placeholder of the
captured step called ``input:NAME``: ``NAME`` is the argument's position or
keyword, followed by ``.I`` for the I-th tensor of an argument that holds
several (a tuple of tensors). Arguments that are not tensors (``None``, a
flag, a number, a string) are handed to the model as they are.

The model's own loss is named here too: ``loss="output"`` reads it from what
the model returns (``out.loss``, ``out["loss"]``, or the output itself when it
is a one-element tensor), as Hugging Face models do when given ``labels``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import torch

from autotm_core.errors import UsageError
from autotm_torch import _torch_internals as internals

PLAIN_VALUES = (type(None), bool, int, float, str, torch.dtype, torch.device)
"""Types of the non-tensor arguments handed to the model as they are."""
OWN_LOSS = "output"
"""The ``loss`` that means "the model computes its loss itself" (``out.loss``)."""
INPUTS_HINT = (
    "give example_inputs as a tensor, a tuple of positional arguments, or a dict of keyword "
    "arguments (e.g. a Hugging Face batch), holding tensors or plain Python values"
)


@attrs.frozen
class ExampleInputs:
    """A model's example arguments, split into named tensors and the structure around them."""

    names: tuple[str, ...]
    """Name of each tensor (``0``, ``input_ids``, ``past.1``): its role is ``input:NAME``."""
    tensors: tuple[torch.Tensor, ...]
    """The tensors, in the order of :attr:`names`."""
    positional: int
    """How many positional arguments there are (the rest are keyword arguments)."""
    spec: Any
    """Tree structure of ``(args, kwargs)`` with the tensors taken out."""
    leaves: tuple[Any, ...]
    """Every leaf of ``(args, kwargs)``; the tensors' places are filled again by :meth:`call`."""
    slots: tuple[int, ...]
    """Position among :attr:`leaves` of each tensor."""

    def arguments(self, tensors: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``(args, kwargs)`` for the model, with ``tensors`` in the places of :attr:`tensors`."""
        leaves = list(self.leaves)
        for slot, tensor in zip(self.slots, tensors, strict=True):
            leaves[slot] = tensor
        args, kwargs = internals.tree_unflatten(leaves, self.spec)
        return tuple(args), dict(kwargs)

    def by_name(self) -> dict[str, torch.Tensor]:
        """Each tensor by its name."""
        return dict(zip(self.names, self.tensors, strict=True))


def example_inputs(value: Any, what: str = "example input") -> ExampleInputs:
    """``value`` (a tensor, a sequence of positional arguments, or a mapping of keyword
    arguments) as named tensors; a :class:`UsageError` naming any argument of another kind."""
    if isinstance(value, torch.Tensor):
        args, kwargs = (value,), {}
    elif isinstance(value, Mapping):
        args, kwargs = (), {str(k): v for k, v in value.items()}
    elif isinstance(value, Sequence) and not isinstance(value, str):
        args, kwargs = tuple(value), {}
    else:
        raise UsageError(f"the {what}s are a {type(value).__name__}", hint=INPUTS_HINT)
    names: list[str] = []
    for label, argument in [*((str(i), a) for i, a in enumerate(args)), *kwargs.items()]:
        leaves = internals.tree_leaves(argument)
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        for leaf in leaves:
            if not isinstance(leaf, (torch.Tensor, *PLAIN_VALUES)):
                raise UsageError(
                    f"{what} {label!r} holds a {type(leaf).__name__}, not a tensor",
                    hint=INPUTS_HINT,
                )
        single = len(tensors) == 1 and isinstance(argument, torch.Tensor)
        names += [label] if single else [f"{label}.{i}" for i in range(len(tensors))]
    leaves, spec = internals.tree_flatten((args, kwargs))
    slots = tuple(i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor))
    return ExampleInputs(tuple(names), tuple(leaves[i] for i in slots), len(args), spec,
                         tuple(leaves), slots)


def loss_function(loss: Any) -> Callable[..., torch.Tensor]:
    """What a training step minimises: ``loss(output, *targets)``, the model's own loss
    (``loss="output"``), or by default the model's own loss where its output carries one,
    else the sum of its output."""
    if loss is None:
        return _default_loss
    if isinstance(loss, str):
        if loss != OWN_LOSS:
            raise UsageError(
                f"unknown loss {loss!r}",
                hint=f"give a callable loss(output, *targets), or {OWN_LOSS!r} for the loss the "
                "model returns itself (out.loss)",
            )
        return _own_loss
    if not callable(loss):
        raise UsageError(f"the loss is a {type(loss).__name__}, not a callable",
                         hint=f"give loss(output, *targets), or {OWN_LOSS!r}")
    return loss  # type: ignore[no-any-return]


def _carried_loss(output: Any) -> Any:
    """The loss an output carries (``out.loss`` or ``out["loss"]``), else ``None``."""
    if isinstance(output, Mapping):
        return output.get("loss")
    return getattr(output, "loss", None)


def _own_loss(output: Any, *targets: torch.Tensor) -> torch.Tensor:
    value = _carried_loss(output)
    if value is None and isinstance(output, torch.Tensor):
        value = output
    if not isinstance(value, torch.Tensor):
        raise UsageError(
            f"loss={OWN_LOSS!r}, but the model returned a {type(output).__name__} without a loss",
            hint="give the model what makes it compute its loss (a Hugging Face model: labels "
            "among the inputs), or pass a loss function",
        )
    return value


def _default_loss(output: Any, *targets: torch.Tensor) -> torch.Tensor:
    value = _carried_loss(output)
    if isinstance(value, torch.Tensor):
        return value
    return sum(t.sum() for t in output_tensors(output))  # type: ignore[return-value]


def output_tensors(out: Any) -> tuple[torch.Tensor, ...]:
    """The tensors among what a model returned (nested tuples, dicts, model outputs)."""
    return tuple(t for t in internals.tree_leaves(out) if isinstance(t, torch.Tensor))
