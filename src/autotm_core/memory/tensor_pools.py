"""Which pools of a memory system each tensor may live in (``Tensor.pools``)."""

from __future__ import annotations

from autotm_core.errors import PlanError
from autotm_core.ir import Graph
from autotm_core.memory.system import MemorySystem


def allowed_pools(graph: Graph, system: MemorySystem) -> tuple[tuple[str, ...], ...]:
    """For each tensor of ``graph``, the pools of ``system`` it may live in, fastest first.

    A tensor without ``pools`` may live in any pool. Raises :class:`PlanError` naming
    the first tensor none of whose pools the system has.
    """
    names = tuple(pool.name for pool in system.pools)
    result = []
    for tensor in graph.tensors:
        if tensor.pools is None:
            result.append(names)
            continue
        allowed = tuple(name for name in names if name in tensor.pools)
        if not allowed:
            raise PlanError(
                f"tensor {tensor.name!r} may live only in {', '.join(tensor.pools) or 'no pool'}"
                f", and memory system {system.name!r} has none of them",
                hint=f"the pools are {', '.join(names)}; fix the tensor's pools in the graph",
            )
        result.append(allowed)
    return tuple(result)
