"""The typed intermediate representation: tensors, kernels, graphs and their liveness.

Plugin API: plugins may import the names of ``__all__`` (see docs/writing-a-frontend.md)."""

from autotm_core.ir.builder import GraphBuilder
from autotm_core.ir.graph import Graph
from autotm_core.ir.kernel import Kernel
from autotm_core.ir.liveness import Liveness
from autotm_core.ir.tensor import DTYPE_NBYTES, Tensor, TensorKind, nbytes_of
from autotm_core.ir.verify import Problem, Severity, check_graph, verify_graph

__all__ = [
    "DTYPE_NBYTES",
    "Graph",
    "GraphBuilder",
    "Kernel",
    "Liveness",
    "Problem",
    "Severity",
    "Tensor",
    "TensorKind",
    "check_graph",
    "nbytes_of",
    "verify_graph",
]
