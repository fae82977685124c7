"""The typed intermediate representation: tensors, kernels, graphs and their liveness.

Plugin API: plugins may import the names of ``__all__`` (see docs/writing-a-frontend.md)."""

from autotm_core.ir.builder import GraphBuilder
from autotm_core.ir.graph import Graph
from autotm_core.ir.kernel import Kernel, reruns_safely
from autotm_core.ir.liveness import Liveness
from autotm_core.ir.recompute import RecomputeFacts, layer_of
from autotm_core.ir.tensor import DTYPE_NBYTES, Tensor, TensorKind, nbytes_of
from autotm_core.ir.verify import Problem, Severity, check_graph, verify_graph

__all__ = [
    "DTYPE_NBYTES",
    "Graph",
    "GraphBuilder",
    "Kernel",
    "Liveness",
    "Problem",
    "RecomputeFacts",
    "Severity",
    "Tensor",
    "TensorKind",
    "check_graph",
    "layer_of",
    "nbytes_of",
    "reruns_safely",
    "verify_graph",
]
