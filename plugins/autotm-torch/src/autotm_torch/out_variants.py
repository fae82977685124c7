"""Calling an ATen op so that it writes into tensors given to it (its ``out=`` variant).

Most functional ATen ops have an overload taking its results as keyword-only
``out`` arguments (``addmm.out``, ``native_batch_norm.out`` with ``out``,
``save_mean``, ``save_invstd``; ``threshold_backward.grad_input`` ...). The
variant of an op is the overload of its packet whose other arguments have the
same names and types, allowing only the tensor options (``dtype``, ``layout``,
``device``, ``pin_memory``) to be left out, since the given tensors carry them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import torch

TENSOR_OPTIONS = frozenset({"dtype", "layout", "device", "pin_memory"})
"""Arguments an ``out=`` variant may drop: the output tensors carry them."""


@attrs.frozen
class OutVariant:
    """The ``out=`` overload of a functional op, and how to call it."""

    overload: Any
    """The overload (``torch.ops.aten.addmm.out``)."""
    out_names: tuple[str, ...]
    """Names of its output arguments, in the order of the results."""
    dropped: frozenset[str]
    """Arguments of the functional op the overload does not take."""

    def call(self, op: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
             outs: Sequence[torch.Tensor]) -> None:
        """Run ``op(*args, **kwargs)`` writing its results into ``outs``."""
        named = bind(op, args, kwargs)
        for name in self.dropped:
            named.pop(name, None)
        self.overload(**named, **dict(zip(self.out_names, outs, strict=True)))


def bind(op: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a call of ``op`` by name (those not given keep their defaults)."""
    named = dict(kwargs)
    for argument, value in zip(op._schema.arguments, args, strict=False):
        named[argument.name] = value
    return named


@functools.cache
def out_variant(op: Any) -> OutVariant | None:
    """The ``out=`` variant of functional ATen op ``op``, or ``None`` when it has none."""
    schema = getattr(op, "_schema", None)
    packet = getattr(op, "overloadpacket", None)
    if schema is None or packet is None or not schema.returns:
        return None
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return None  # an in-place op writes where it is told already
    inputs = {a.name: str(a.type) for a in schema.arguments}
    best: OutVariant | None = None
    for name in packet.overloads():
        candidate = getattr(packet, name)._schema
        outs = [a for a in candidate.arguments if a.is_out]
        if len(outs) != len(schema.returns) or candidate.name != schema.name:
            continue
        others = {a.name: str(a.type) for a in candidate.arguments if not a.is_out}
        if any(inputs.get(k) != v for k, v in others.items()):
            continue
        dropped = frozenset(inputs) - frozenset(others)
        if not dropped <= TENSOR_OPTIONS:
            continue
        found = OutVariant(getattr(packet, name), tuple(a.name for a in outs), dropped)
        if best is None or len(found.dropped) < len(best.dropped):
            best = found
    return best
