"""Strict ONNX shape inference and the exact type of every value it leaves.

Inference runs with ``strict_mode=True`` (an op whose inputs it cannot type is an
error, not a silent gap) and ``data_prop=True`` (shapes computed from shape
tensors, e.g. ``Shape -> Gather -> Reshape``, propagate). Any dimension still
symbolic or unknown afterwards is an error naming the value and the dimension.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs
from autotm_core.errors import GraphError

from autotm_onnx.dims import symbolic_dims
from autotm_onnx.dtypes import element_type, storage_nbytes

if TYPE_CHECKING:
    from onnx import ModelProto, TypeProto

_INFERRED_PREFIX = "unk__"
"""How onnx names a dimension its inference could not compute."""


@attrs.frozen
class ValueType:
    """The exact type of one ONNX value."""

    shape: tuple[int, ...]
    """Its dimensions, all known."""
    dtype: str
    """The IR's name of its element type."""
    nbytes: int
    """Bytes of its storage (shape x element size, sub-byte types packed)."""


def infer_shapes(model: ModelProto) -> ModelProto:
    """``model`` with every value's type inferred; :class:`GraphError` where inference fails."""
    import onnx.shape_inference

    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except onnx.shape_inference.InferenceError as exc:
        raise GraphError(
            f"ONNX shape inference rejects the model: {_first_error(str(exc))}",
            hint="fix the node it names (shapes, attributes or opset), or re-export the model",
        ) from None
    except (ValueError, RuntimeError) as exc:  # e.g. a model over protobuf's 2 GB limit
        raise GraphError(
            f"ONNX shape inference failed: {_first_error(str(exc))}",
            hint="store large weights as external data "
            "(onnx.save(..., save_as_external_data=True))",
        ) from None


def _first_error(text: str) -> str:
    lines = [line.strip() for line in text.replace("Inference error(s):", "\n").splitlines()]
    lines = [line.removeprefix("[ShapeInferenceError]").strip() for line in lines]
    found = [line for line in lines if line]
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return (found[0] if found else "unknown error") + more


class ValueTypes:
    """The types of the values of an inferred model, looked up by name."""

    def __init__(self, model: ModelProto) -> None:
        graph = model.graph
        self._declared: dict[str, TypeProto] = {}
        for value in (*graph.value_info, *graph.output, *graph.input):  # inputs win
            self._declared[value.name] = value.type
        self._unbound = [d for d in symbolic_dims(model) if not d.startswith(_INFERRED_PREFIX)]

    def of_initializer(self, name: str, *, dims: Iterable[int], elem_type: int) -> ValueType:
        """The type of the initializer ``name``, from its own dims and element type."""
        shape = tuple(int(d) for d in dims)
        dtype, bits = element_type(elem_type, value=name)
        return ValueType(shape=shape, dtype=dtype, nbytes=storage_nbytes(shape, bits))

    def of(self, name: str) -> ValueType:
        """The type of the value ``name``; :class:`GraphError` unless it is fully known."""
        type_proto = self._declared.get(name)
        if type_proto is None:
            raise GraphError(
                f"value {name!r} has no type after shape inference",
                hint=self._hint("declare its type in the model's value_info (ops of custom "
                                "domains are not inferred)"),
            )
        if not type_proto.HasField("tensor_type"):
            kind = type_proto.WhichOneof("value") or "untyped"
            raise GraphError(
                f"value {name!r} is a {kind.removesuffix('_type')} value, not a tensor",
                hint="autotm-onnx plans dense tensors only; export the model without "
                "sequences, maps, optionals and sparse tensors",
            )
        tensor_type = type_proto.tensor_type
        dtype, bits = element_type(tensor_type.elem_type, value=name)
        if not tensor_type.HasField("shape"):
            raise GraphError(
                f"value {name!r} has no known shape (not even its rank) after shape inference",
                hint=self._hint("give the model's inputs full shapes"),
            )
        shape = []
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
                continue
            raise self._unknown_dim(name, axis, dim.dim_param)
        shape_tuple = tuple(shape)
        return ValueType(shape=shape_tuple, dtype=dtype, nbytes=storage_nbytes(shape_tuple, bits))

    def _unknown_dim(self, name: str, axis: int, dim_param: str) -> GraphError:
        if dim_param and not dim_param.startswith(_INFERRED_PREFIX):
            return GraphError(
                f"value {name!r} has the unbound symbolic dimension {dim_param!r} (axis {axis})",
                hint=f"pass --dim {dim_param}=SIZE (library: dims={{{dim_param!r}: SIZE}})",
            )
        return GraphError(
            f"value {name!r}: shape inference could not compute dimension {axis}"
            + (f" ({dim_param!r})" if dim_param else ""),
            hint=self._hint("its size depends on data (e.g. NonZero) or on an op inference "
                            "cannot follow; autotm-onnx needs static shapes"),
        )

    def _hint(self, otherwise: str) -> str:
        if self._unbound:
            dims = " ".join(f"--dim {name}=SIZE" for name in self._unbound)
            return f"bind the model's symbolic dimensions first: {dims}; otherwise {otherwise}"
        return otherwise
