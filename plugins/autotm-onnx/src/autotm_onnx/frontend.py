"""The ``onnx`` frontend plugin: an ``.onnx`` file (or ``ModelProto``) into a graph.

Importing this module imports no ``onnx``: plugin discovery and ``--help`` stay
fast, and a missing ``onnx`` is reported by :meth:`OnnxFrontend.unavailable_reason`.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from autotm_core.errors import PluginError, UsageError
from autotm_core.ir import Graph

OPTIONS = ("dims", "batch_size", "name")
"""Options :meth:`OnnxFrontend.load` accepts."""


class OnnxFrontend:
    """Loads an ONNX model (an inference graph) with its shapes inferred and dimensions bound."""

    name = "onnx"
    description = "an ONNX model (.onnx), inference graph; bind symbolic dims with --dim NAME=SIZE"

    def unavailable_reason(self) -> str | None:
        """Why the frontend cannot run here: ``None`` unless the ``onnx`` package is missing."""
        if importlib.util.find_spec("onnx") is None:
            return "the onnx package is not installed; pip install onnx"
        return None

    def load(self, source: Any, **options: Any) -> Graph:
        """The graph of the ONNX model at path ``source`` (or a ``ModelProto``).

        Options: ``dims`` binds symbolic dimensions (a mapping such as
        ``{"batch": 32}``, ``"batch=32,seq=128"``, or a list of ``"NAME=SIZE"``);
        ``batch_size`` binds the one symbolic leading dimension of the graph inputs;
        ``name`` names the graph (default: the file's stem, else the ONNX graph's name).
        """
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise UsageError(
                f"the onnx frontend has no option {unknown[0]!r}",
                hint=f"its options are {', '.join(OPTIONS)} (e.g. --dim batch=32)",
            )
        reason = self.unavailable_reason()
        if reason is not None:
            raise PluginError(f"the onnx frontend cannot run: {reason}", hint="pip install onnx")
        from autotm_onnx.convert import convert_model
        from autotm_onnx.dims import parse_dims, with_batch_size
        from autotm_onnx.reading import read_model

        dims = parse_dims(options.get("dims"))
        model = read_model(source)
        if options.get("batch_size") is not None:
            dims = with_batch_size(model, dims, options["batch_size"])
        name = options.get("name")
        if name is None:
            is_path = isinstance(source, str | os.PathLike)
            name = Path(source).stem if is_path else (model.graph.name or "onnx-model")
        if not isinstance(name, str) or not name:
            raise UsageError(f"graph name {name!r} must be a non-empty string")
        return convert_model(model, name=name, dims=dims)


def load(
    source: Any, *, dims: Any = None, batch_size: int | None = None, name: str | None = None
) -> Graph:
    """The graph of the ONNX model ``source``: ``load("model.onnx", dims={"batch": 32})``."""
    return OnnxFrontend().load(source, dims=dims, batch_size=batch_size, name=name)
