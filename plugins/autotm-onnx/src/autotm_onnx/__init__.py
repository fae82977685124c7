"""autotm-onnx: the ONNX frontend of autotm-core (``onnx`` in ``autotm_core.frontends``).

``load("model.onnx", dims={"batch": 32})`` returns the model's inference graph;
see docs/frontends-onnx.md for the mapping rules and the limits.
"""

from autotm_onnx.frontend import OnnxFrontend, load

__all__ = ["OnnxFrontend", "load"]
