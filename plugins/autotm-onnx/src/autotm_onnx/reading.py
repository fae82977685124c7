"""Reading an ``.onnx`` file into a ``ModelProto``, with one clear error per way it can be bad."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotm_core.errors import FormatError

if TYPE_CHECKING:
    from onnx import ModelProto

_HINT = "give the path of an ONNX model (.onnx), e.g. one written by torch.onnx.export or onnx.save"


def read_model(source: Any) -> ModelProto:
    """The model in ``source`` (a path, or a ``ModelProto`` already in memory).

    External tensor data is not read: only shapes and element types matter here.
    """
    import onnx

    if isinstance(source, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(source)  # binding dimensions rewrites it; the caller's stays as it was
        return _checked(model, "the ONNX model given")
    if not isinstance(source, str | os.PathLike):
        raise FormatError(
            f"the onnx frontend takes a path or an onnx.ModelProto, not {type(source).__name__}",
            hint=_HINT,
        )
    path = Path(source)
    if not path.exists():
        raise FormatError(f"{path}: no such file", hint=_HINT)
    if not path.is_file():
        raise FormatError(f"{path}: not a file", hint=_HINT)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot be read: {exc.strerror or exc}", hint=_HINT) from None
    return parse_model(data, where=str(path))


def parse_model(data: bytes, *, where: str) -> ModelProto:
    """The model serialised in ``data`` (read from ``where``, for messages)."""
    import onnx

    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # protobuf's DecodeError, and RuntimeError from some of its backends
        raise FormatError(
            f"{where}: not an ONNX model (the protobuf cannot be decoded: the file is truncated, "
            "corrupt or of another kind)",
            hint=_HINT,
        ) from None
    return _checked(model, where)


def _checked(model: ModelProto, where: str) -> ModelProto:
    """``model`` when it has what every ONNX model has (an IR version, a graph, an opset)."""
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise FormatError(
            f"{where}: not an ONNX model (no IR version or no graph; the file may be truncated "
            "or of another kind)",
            hint=_HINT,
        )
    if not model.graph.output:
        raise FormatError(
            f"{where}: the graph declares no outputs (the file may be truncated)", hint=_HINT
        )
    return model
