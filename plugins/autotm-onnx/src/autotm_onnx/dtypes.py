"""Element types of ONNX tensors: the IR's dtype name and the exact storage size.

Every ``TensorProto.DataType`` is mapped by name (so an older ``onnx`` that lacks
a recent type still imports this table). Sub-byte types (4-bit, 2-bit, 6-bit)
are stored packed, as ONNX serialises them: ``ceil(elements * bits / 8)`` bytes.
Strings have no fixed size and are refused.
"""

from __future__ import annotations

import math

from autotm_core.errors import GraphError

ELEMENT_TYPES: dict[str, tuple[str, int]] = {
    "FLOAT": ("float32", 32),
    "UINT8": ("uint8", 8),
    "INT8": ("int8", 8),
    "UINT16": ("uint16", 16),
    "INT16": ("int16", 16),
    "INT32": ("int32", 32),
    "INT64": ("int64", 64),
    "BOOL": ("bool", 8),
    "FLOAT16": ("float16", 16),
    "DOUBLE": ("float64", 64),
    "UINT32": ("uint32", 32),
    "UINT64": ("uint64", 64),
    "COMPLEX64": ("complex64", 64),
    "COMPLEX128": ("complex128", 128),
    "BFLOAT16": ("bfloat16", 16),
    "FLOAT8E4M3FN": ("float8_e4m3fn", 8),
    "FLOAT8E4M3FNUZ": ("float8_e4m3fnuz", 8),
    "FLOAT8E5M2": ("float8_e5m2", 8),
    "FLOAT8E5M2FNUZ": ("float8_e5m2fnuz", 8),
    "FLOAT8E8M0": ("float8_e8m0fnu", 8),
    "UINT4": ("uint4", 4),
    "INT4": ("int4", 4),
    "FLOAT4E2M1": ("float4_e2m1fn", 4),
    "UINT2": ("uint2", 2),
    "INT2": ("int2", 2),
    "FLOAT6E2M3": ("float6_e2m3fn", 6),
    "FLOAT6E3M2": ("float6_e3m2fn", 6),
}
"""IR dtype name and bits per element, by ``TensorProto.DataType`` name."""


def element_type(elem_type: int, *, value: str) -> tuple[str, int]:
    """The IR dtype name and bits per element of ONNX ``elem_type`` (of the value ``value``)."""
    from onnx import TensorProto

    try:
        type_name = TensorProto.DataType.Name(elem_type)
    except ValueError:
        type_name = f"#{elem_type}"
    if type_name == "STRING":
        raise GraphError(
            f"value {value!r} is a string tensor, whose size is not fixed",
            hint="autotm-onnx plans only numeric tensors; cut the string pre/post-processing "
            "out of the model (e.g. with onnx.utils.extract_model)",
        )
    try:
        return ELEMENT_TYPES[type_name]
    except KeyError:
        raise GraphError(
            f"value {value!r} has element type {type_name}, which autotm-onnx does not know",
            hint="give the value a numeric element type, or report the type to autotm-onnx",
        ) from None


def storage_nbytes(shape: tuple[int, ...], bits: int) -> int:
    """Bytes of a dense tensor of ``shape`` with ``bits`` per element, packed."""
    return (math.prod(shape) * bits + 7) // 8
