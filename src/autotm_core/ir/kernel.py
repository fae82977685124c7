"""Kernels of the IR: one operation that reads and writes tensors."""

from __future__ import annotations

import math
import re

import attrs

from autotm_core.errors import GraphError
from autotm_core.ir.tensor import MAX_NBYTES, _check_name, too_big


def _to_names(value: object) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise GraphError(f"tensor list {value!r} must be a list of tensor names")
    try:
        "".join(value)  # a fast check that every item is a string
    except TypeError:
        raise GraphError(
            f"tensor list {list(value)!r} must hold only tensor names (strings)"
        ) from None
    return tuple(value)


def _check_op(instance: Kernel, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise GraphError(
            f"kernel {instance.name!r}: op {value!r} must be a non-empty string",
            hint="name the operation, e.g. 'matmul' or 'conv2d'",
        )


def _check_flops(instance: Kernel, attribute: attrs.Attribute, value: object) -> None:
    if value is None or ((type(value) is float or type(value) is int) and 0 <= value < math.inf):
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value < math.inf  # also rejects NaN
    ):
        raise GraphError(
            f"kernel {instance.name!r}: flops {value!r} must be a finite, non-negative number",
            hint="give flops as a count of floating-point operations, or leave it out",
        )


def _check_workspace(instance: Kernel, attribute: attrs.Attribute, value: object) -> None:
    if type(value) is int and 0 <= value <= MAX_NBYTES:  # the common case, decided at once
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise GraphError(
            f"kernel {instance.name!r}: workspace {value!r} must be a whole number of bytes >= 0",
            hint="give workspace_nbytes as an integer count of bytes",
        )
    raise GraphError(
        f"kernel {instance.name!r}: workspace {too_big(value)} is more than the 2^48 bytes "
        "(256 TiB) autotm-core plans",
        hint="give workspace_nbytes in bytes; a real kernel's scratch space is far smaller",
    )


RANDOM_OP_PREFIXES = ("dropout", "rand", "bernoulli", "multinomial", "rrelu")
"""Words of an op's name (split at anything not a letter or digit) beginning so make it
random: ``native_dropout``, ``randn_like``, ``bernoulli_``, ``aten.randint.low``."""
RANDOM_OP_WORDS = frozenset({"normal", "uniform", "exponential", "geometric", "cauchy",
                             "poisson", "log_normal"})
"""Whole words of an op's name that make it random (``normal_``, but not ``normalize``)."""


def reruns_safely(op: str) -> bool:
    """Whether an op of this name may be run again for the same outputs: not a random op
    (:data:`RANDOM_OP_PREFIXES`, :data:`RANDOM_OP_WORDS`). Rerunning a random op without its
    generator state draws other numbers, so its outputs are kept or moved, never recomputed."""
    words = re.split(r"[^a-z0-9]+", op.lower())
    return not any(w.startswith(RANDOM_OP_PREFIXES) or w in RANDOM_OP_WORDS for w in words)


@attrs.frozen(slots=True)
class Kernel:
    """One operation of the program, run in the graph's order.

    A tensor listed among both the inputs and the outputs is updated in place
    (read, then written): that is how an optimizer step writes a parameter.
    """

    name: str = attrs.field(validator=_check_name)
    """Unique name within the graph."""
    op: str = attrs.field(validator=_check_op)
    """Operation kind, e.g. ``"conv2d"``, ``"matmul"``, ``"relu_backward"``."""
    inputs: tuple[str, ...] = attrs.field(default=(), converter=_to_names)
    """Names of the tensors it reads."""
    outputs: tuple[str, ...] = attrs.field(default=(), converter=_to_names)
    """Names of the tensors it writes."""
    flops: float | None = attrs.field(default=None, validator=_check_flops)
    """Floating-point operations, when known; cost models estimate it otherwise."""
    workspace_nbytes: int = attrs.field(default=0, validator=_check_workspace)
    """Scratch bytes it needs in fast memory while it runs."""
    module: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """The model module it was called from, as a dotted path (``"transformer.h.3.mlp"``);
    where a layer begins and ends for layer checkpointing (:mod:`autotm_core.ir.recompute`).
    Empty: unknown."""
    rerun: bool = attrs.field(
        default=attrs.Factory(lambda self: reruns_safely(self.op), takes_self=True),
        validator=attrs.validators.instance_of(bool))
    """Whether running it again on the same inputs gives the same outputs and does nothing
    else, so that a plan may recompute its outputs instead of keeping them. By default, every
    op but the random ones (:func:`reruns_safely`); a frontend says ``False`` for an op with
    side effects or a random op whose generator state it does not keep."""

    @property
    def tensors(self) -> tuple[str, ...]:
        """Every tensor it touches, inputs first, each once."""
        return tuple(dict.fromkeys(self.inputs + self.outputs))
