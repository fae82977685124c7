"""Binding symbolic dimensions (``batch``, ``sequence``) to sizes before shape inference.

Users bind them with ``dims={"batch": 32}`` in the library, or ``--dim batch=32``
(repeatable) on the command line. The bindings rewrite every declared value's
dimension of that name (graph inputs, outputs and any value_info the model
carries) into a fixed size, so that shape inference propagates it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from autotm_core.errors import UsageError

if TYPE_CHECKING:
    from onnx import ModelProto, ValueInfoProto

_HINT = (
    "bind each symbolic dimension as NAME=SIZE, e.g. --dim batch=32 "
    "(library: dims={'batch': 32})"
)


def parse_dims(value: object) -> dict[str, int]:
    """The bindings in ``value``: a mapping, ``"a=1,b=2"``, or a list of ``"NAME=SIZE"`` strings."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        pairs: Iterable[tuple[object, object]] = value.items()
    elif isinstance(value, str):
        pairs = (_split(item) for item in value.split(",") if item.strip())
    elif isinstance(value, list | tuple):
        pairs = (_split(item) for item in value)
    else:
        raise UsageError(f"dims {value!r} must map dimension names to sizes", hint=_HINT)
    return dict(_binding(name, size) for name, size in pairs)


def _split(item: object) -> tuple[str, str]:
    if not isinstance(item, str) or "=" not in item:
        raise UsageError(f"dimension binding {item!r} is not NAME=SIZE", hint=_HINT)
    name, _, size = item.partition("=")
    return name.strip(), size.strip()


def _binding(name: object, size: object) -> tuple[str, int]:
    if not isinstance(name, str) or not name:
        raise UsageError(f"dimension name {name!r} must be a non-empty string", hint=_HINT)
    if isinstance(size, str):
        try:
            size = int(size)
        except ValueError:
            raise UsageError(
                f"dimension {name!r}: size {size!r} is not a whole number", hint=_HINT
            ) from None
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise UsageError(
            f"dimension {name!r}: size {size!r} must be a whole number >= 1", hint=_HINT
        )
    return name, size


def symbolic_dims(model: ModelProto) -> list[str]:
    """Names of the symbolic dimensions of the model's declared values, in order of appearance."""
    return list(dict.fromkeys(
        dim.dim_param for value in _declared(model) for dim in _dims(value) if dim.dim_param
    ))


def with_batch_size(model: ModelProto, dims: dict[str, int], batch_size: object) -> dict[str, int]:
    """``dims`` plus the model's batch dimension bound to ``batch_size`` (``--batch-size``).

    The batch dimension is the symbolic leading dimension of the graph inputs that
    are not initializers; there must be exactly one such name.
    """
    _, size = _binding("batch_size", batch_size)
    weights = {t.name for t in model.graph.initializer}
    leading: dict[str, None] = {}
    for value in model.graph.input:
        first = next(iter(_dims(value)), None)
        if value.name not in weights and first is not None and first.dim_param:
            leading[first.dim_param] = None
    if len(leading) != 1:
        found = ", ".join(repr(n) for n in leading) or "none"
        raise UsageError(
            f"--batch-size needs one symbolic leading dimension among the model's inputs "
            f"(found: {found})",
            hint="bind the dimensions by name instead: --dim NAME=SIZE",
        )
    name = next(iter(leading))
    if dims.get(name, size) != size:
        raise UsageError(f"dimension {name!r} is bound to {dims[name]} and to --batch-size {size}")
    return {**dims, name: size}


def bind_dims(model: ModelProto, dims: Mapping[str, int]) -> None:
    """Replace, in place, every declared dimension named in ``dims`` by its size."""
    if not dims:
        return
    names = symbolic_dims(model)
    unknown = [name for name in dims if name not in names]
    if unknown:
        known = ", ".join(repr(n) for n in names) or "none"
        raise UsageError(
            f"the model has no symbolic dimension {unknown[0]!r} "
            f"(its symbolic dimensions: {known})",
            hint="check the spelling; bind only dimensions the model declares",
        )
    for value in _declared(model):
        for dim in _dims(value):
            if dim.dim_param in dims:
                dim.dim_value = dims[dim.dim_param]  # a oneof: clears dim_param


def _declared(model: ModelProto) -> Iterable[ValueInfoProto]:
    graph = model.graph
    yield from graph.input
    yield from graph.output
    yield from graph.value_info


def _dims(value: ValueInfoProto) -> Iterable:  # type: ignore[type-arg]
    type_proto = value.type
    if type_proto.HasField("tensor_type") and type_proto.tensor_type.HasField("shape"):
        yield from type_proto.tensor_type.shape.dim
