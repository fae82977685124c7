"""Tensors of the IR: a name, a size in bytes, a kind, and optional shape details."""

from __future__ import annotations

import enum
import math

import attrs

from autotm_core.errors import GraphError

DTYPE_NBYTES: dict[str, int] = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "float8": 1,
    "int16": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "float32": 4,
    "int64": 8,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
}
"""Bytes per element of the dtypes the IR knows by name."""


class TensorKind(enum.Enum):
    """What role a tensor plays in a training or inference step."""

    ACTIVATION = "activation"
    """An intermediate value of the forward pass (kept until its backward use)."""
    PARAMETER = "parameter"
    """A trainable weight; exists before the step and survives it."""
    GRADIENT = "gradient"
    """A gradient computed by the backward pass."""
    OPTIMIZER_STATE = "optimizer_state"
    """State of the optimizer (momentum, Adam's moments); exists before and after the step."""
    INPUT = "input"
    """Data fed to the step (a batch, labels); exists before the first kernel."""
    OUTPUT = "output"
    """A result of the step (the loss, predictions); survives the step."""
    WORKSPACE = "workspace"
    """Scratch memory of a kernel."""
    CONSTANT = "constant"
    """A value fixed for the whole program (never written)."""

    # Members are singletons compared by identity, so identity hashing is exact; Enum's own
    # hash is a Python-level call, which dominated set and dict lookups of kinds.
    __hash__ = object.__hash__

    @property
    def exists_before_step(self) -> bool:
        """True for kinds that are not produced by a kernel of the step."""
        return self in _PRE_EXISTING

    @property
    def survives_step(self) -> bool:
        """True for kinds that must still exist after the last kernel."""
        return self in _SURVIVING


_PRE_EXISTING = frozenset(
    {TensorKind.PARAMETER, TensorKind.OPTIMIZER_STATE, TensorKind.INPUT, TensorKind.CONSTANT}
)
_SURVIVING = frozenset(
    {TensorKind.PARAMETER, TensorKind.OPTIMIZER_STATE, TensorKind.CONSTANT, TensorKind.OUTPUT}
)


def _check_name(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if type(value) is str and value:  # the common case, decided at once
        return
    if not isinstance(value, str) or not value:
        raise GraphError(
            f"{type(instance).__name__} name {value!r} must be a non-empty string",
            hint="give every tensor and kernel a unique, non-empty name",
        )


MAX_NBYTES = 2**48
"""The largest tensor or workspace (256 TiB, far beyond any memory): byte counts and their
sums over a graph are 64-bit integers in the liveness, the simulator and the models."""
MAX_TOTAL_NBYTES = 2**60
"""The largest sum of a graph's tensor and workspace bytes (1 EiB), for the same reason."""


def _check_nbytes(instance: Tensor, attribute: attrs.Attribute, value: object) -> None:
    if type(value) is int and 0 <= value <= MAX_NBYTES:  # the common case, decided at once
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise GraphError(
            f"tensor {instance.name!r}: size {value!r} is not a whole number of bytes",
            hint="give nbytes as an integer count of bytes",
        )
    if value < 0:
        raise GraphError(
            f"tensor {instance.name!r}: size {value} is negative",
            hint="give nbytes as a count of bytes, 0 or more",
        )
    raise GraphError(
        f"tensor {instance.name!r}: size {too_big(value)} is more than the 2^48 bytes "
        "(256 TiB) autotm-core plans",
        hint="give nbytes in bytes (not bits or elements); a real tensor is far smaller",
    )


def too_big(value: int) -> str:
    """``value`` for a message: itself when short, else its power of two (``2^99`` and up;
    ``str`` refuses integers of over 4,300 digits)."""
    return str(value) if value.bit_length() <= 80 else f"of about 2^{value.bit_length() - 1}"


def _to_shape(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple):
        raise GraphError(f"shape {value!r} must be a list of non-negative integers")
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in value):
        raise GraphError(f"shape {list(value)!r} must be a list of non-negative integers")
    return tuple(value)


def _to_pools(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(p, str) for p in value):
        raise GraphError(f"pools {value!r} must be a list of pool names")
    return tuple(value)


def _to_kind(value: object) -> TensorKind:
    if type(value) is TensorKind:  # the common case, without Enum.__call__'s cost
        return value
    try:
        return TensorKind(value)
    except ValueError:
        raise GraphError(
            f"tensor kind {value!r} is not one of {', '.join(k.value for k in TensorKind)}"
        ) from None


@attrs.frozen(slots=True)
class Tensor:
    """One buffer of the program."""

    name: str = attrs.field(validator=_check_name)
    """Unique name within the graph."""
    nbytes: int = attrs.field(validator=_check_nbytes)
    """Size of its storage in bytes."""
    kind: TensorKind = attrs.field(converter=_to_kind, default=TensorKind.ACTIVATION)
    """Role in the step; decides its lifetime (see :class:`TensorKind`)."""
    shape: tuple[int, ...] | None = attrs.field(default=None, converter=_to_shape)
    """Logical shape, when known (informative; ``nbytes`` is what counts)."""
    dtype: str | None = attrs.field(default=None)
    """Element type name, when known (e.g. ``"float32"``)."""
    pools: tuple[str, ...] | None = attrs.field(default=None, converter=_to_pools)
    """Names of the pools it may live in; ``None`` means any pool."""


def nbytes_of(shape: tuple[int, ...] | list[int], dtype: str) -> int:
    """Bytes of a dense tensor of ``shape`` and ``dtype``."""
    try:
        width = DTYPE_NBYTES[dtype]
    except KeyError:
        raise GraphError(
            f"unknown dtype {dtype!r}",
            hint=f"use one of {', '.join(sorted(DTYPE_NBYTES))}, or give nbytes directly",
        ) from None
    return math.prod(shape) * width
