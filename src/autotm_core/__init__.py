"""autotm-core: plan where every tensor of a deep-learning program lives in
heterogeneous memory, and when it moves, by integer linear programming.

The public API is what ``__all__`` lists; everything else may change.
"""

from importlib.metadata import PackageNotFoundError, version

from autotm_core.errors import (
    AutotmError,
    CapacityError,
    FormatError,
    GraphError,
    MemorySystemError,
    PlanError,
    PluginError,
    SolverError,
    UsageError,
)
from autotm_core.formats import load_graph, load_system, save_graph, save_system
from autotm_core.ir import (
    Graph,
    GraphBuilder,
    Kernel,
    Liveness,
    Problem,
    Severity,
    Tensor,
    TensorKind,
    check_graph,
    verify_graph,
)
from autotm_core.memory import CopyLink, MemorySystem, Pool
from autotm_core.plugins import Frontend, frontends, get_frontend
from autotm_core.presets import PRESETS, preset, resolve_system
from autotm_core.sources import load_source

try:
    __version__ = version("autotm-core")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "PRESETS",
    "AutotmError",
    "CapacityError",
    "CopyLink",
    "FormatError",
    "Frontend",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "Kernel",
    "Limit",
    "Liveness",
    "MemorySystem",
    "MemorySystemError",
    "Outcome",
    "PlanError",
    "PlanSettings",
    "PluginError",
    "Pool",
    "Problem",
    "Severity",
    "SolverError",
    "Tensor",
    "TensorKind",
    "UsageError",
    "__version__",
    "check_graph",
    "frontends",
    "get_frontend",
    "load_graph",
    "load_problem",
    "load_source",
    "load_system",
    "plan",
    "preset",
    "resolve_system",
    "save_graph",
    "save_system",
    "verify_graph",
]


_PLANNING = ("Limit", "Outcome", "PlanSettings", "load_problem", "plan")
"""Names of :mod:`autotm_core.planning` importable from here (the planning layer's front door)."""


def __getattr__(name: str) -> object:
    # The planners import the baselines and, when called, Pyomo and a solver: keep
    # `import autotm_core` free of them.
    if name in _PLANNING:
        from autotm_core import planning

        return getattr(planning, name)
    raise AttributeError(f"module 'autotm_core' has no attribute {name!r}")
