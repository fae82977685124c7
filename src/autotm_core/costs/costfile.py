"""The cost file: ``autotm-core/costs``, version 1 (documented in docs/formats.md).

A table of measured (or computed) kernel times: for each kernel, by name, the
configurations it may run in, each naming the pool of every tensor the kernel
touches (by tensor name, so no order can be confused) and its time in seconds.
Only the configurations listed are allowed.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from autotm_core.costs.model import CostTable, KernelCosts, TableCosts
from autotm_core.errors import FormatError, UsageError, summarize_problems
from autotm_core.formats.document import Fields, envelope, read_document, write_document
from autotm_core.ir import Graph, Kernel
from autotm_core.memory import MemorySystem

logger = logging.getLogger(__name__)

KIND = "costs"
VERSION = 1
_TOP_FIELDS = {"format", "version", "graph", "system", "machine", "context", "kernels"}
_SYSTEM_FIELDS = {"name", "pools"}
_KERNEL_FIELDS = {"name", "configs"}
_CONFIG_FIELDS = {"pools", "seconds"}


def costs_to_document(
    costs: KernelCosts,
    *,
    graph: Graph,
    system: MemorySystem,
    machine: str | None = None,
    context: str | None = None,
) -> dict[str, Any]:
    """The JSON document of ``costs``: every allowed configuration of every kernel."""
    if costs.n_pools != len(system.pools):
        raise UsageError(
            f"the costs are for {costs.n_pools} pools; memory system {system.name!r} has "
            f"{len(system.pools)}",
            hint="save the costs with the memory system they were made for",
        )
    pool_names = [pool.name for pool in system.pools]
    kernels = []
    for k, kernel in enumerate(graph.kernels):
        table = costs.table(k)
        names = kernel.tensors
        configs = [
            {"pools": {name: pool_names[p] for name, p in zip(names, row.tolist(), strict=True)},
             "seconds": float(seconds)}
            for row, seconds in zip(table.configs, table.seconds, strict=True)
        ]
        kernels.append({"name": kernel.name, "configs": configs})
    document: dict[str, Any] = {
        **envelope(KIND, VERSION),
        "graph": graph.name,
        "system": {"name": system.name, "pools": pool_names},
    }
    if machine is not None:
        document["machine"] = machine
    if context is not None:
        document["context"] = context
    document["kernels"] = kernels
    return document


def save_costs(
    costs: KernelCosts,
    path: str | os.PathLike[str],
    *,
    graph: Graph,
    system: MemorySystem,
    machine: str | None = None,
    context: str | None = None,
) -> None:
    """Write ``costs`` (any form) as a cost table to ``path``, atomically.

    A separable form is enumerated per kernel (:meth:`KernelCosts.table`), which
    raises :class:`PlanError` for a kernel with too many configurations.
    """
    write_document(
        path, costs_to_document(costs, graph=graph, system=system, machine=machine, context=context)
    )


def load_costs(path: str | os.PathLike[str], *, graph: Graph, system: MemorySystem) -> TableCosts:
    """Read a cost file for ``graph`` on ``system``; one :class:`FormatError` per problem found."""
    doc, fields = read_document(path, KIND, {VERSION})
    return _costs_from(doc, fields, graph=graph, system=system)


def _costs_from(
    doc: Mapping[str, Any], fields: Fields, *, graph: Graph, system: MemorySystem
) -> TableCosts:
    fields.unknown_keys(doc, _TOP_FIELDS, "")
    for key in ("machine", "context"):
        fields.get(doc, key, "", str, required=False)
    graph_name = fields.get(doc, "graph", "", str, required=False)
    if graph_name is not None and graph_name != graph.name:
        logger.warning(
            "%s: made for graph %r, used for graph %r", fields.origin, graph_name, graph.name
        )
    allowed = _read_system(fields.get(doc, "system", "", dict), fields, system)

    live = graph.liveness
    tables: list[CostTable | None] = [None] * len(graph.kernels)
    for where, obj in fields.entries(doc, "kernels", _KERNEL_FIELDS):
        name = fields.get(obj, "name", where, str)
        k = graph.kernel_index.get(name)
        if k is None:
            raise fields.fail(f"{where}.name", f"graph {graph.name!r} has no kernel {name!r}")
        if tables[k] is not None:
            raise fields.fail(f"{where}.name", f"kernel {name!r} is listed twice; keep one entry")
        tables[k] = _read_table(obj, where, fields, graph.kernels[k], allowed)

    missing = [
        f"kernel {kernel.name!r}"
        for kernel, table in zip(graph.kernels, tables, strict=True)
        if table is None
    ]
    if missing:
        raise FormatError(
            summarize_problems(f"{fields.origin}: kernels: no costs for", missing),
            hint="a cost file needs at least one configuration for every kernel of the graph",
        )
    return TableCosts(n_pools=len(system.pools), kernel_ptr=live.kernel_ptr, tables=tuple(tables))  # type: ignore[arg-type]


def _read_system(obj: Mapping[str, Any], fields: Fields, system: MemorySystem) -> dict[str, int]:
    """Pool position in ``system`` of each pool name the file may use."""
    fields.unknown_keys(obj, _SYSTEM_FIELDS, "system")
    name = fields.get(obj, "name", "system", str)
    if name != system.name:
        logger.warning(
            "%s: made for memory system %r, used with %r", fields.origin, name, system.name
        )
    known = [pool.name for pool in system.pools]
    allowed: dict[str, int] = {}
    pools = fields.get(obj, "pools", "system", list)
    if not pools:
        raise fields.fail("system.pools", "is empty; list the pools the configurations use")
    for j, pool in enumerate(pools):
        where = f"system.pools[{j}]"
        if not isinstance(pool, str):
            raise fields.fail(where, "expected a pool name (a string)")
        if pool not in known:
            raise fields.fail(
                where,
                f"memory system {system.name!r} has no pool {pool!r}; "
                f"its pools are {', '.join(known)}",
            )
        if pool in allowed:
            raise fields.fail(where, f"pool {pool!r} is listed twice")
        allowed[pool] = system.pool_index(pool)
    return allowed


def _read_table(
    obj: Mapping[str, Any], where: str, fields: Fields, kernel: Kernel, allowed: dict[str, int]
) -> CostTable:
    names = kernel.tensors
    configs = fields.get(obj, "configs", where, list)
    if not configs:
        raise fields.fail(
            f"{where}.configs", f"kernel {kernel.name!r} has no configuration; give one at least"
        )
    rows = np.empty((len(configs), len(names)), dtype=np.int8)
    seconds = np.empty(len(configs), dtype=np.float64)
    seen: dict[tuple[int, ...], int] = {}
    for c, raw in enumerate(configs):
        at = f"{where}.configs[{c}]"
        config = fields.object(raw, at)
        fields.unknown_keys(config, _CONFIG_FIELDS, at)
        pools = fields.get(config, "pools", at, dict)
        for tensor in pools:
            if tensor not in names:
                raise fields.fail(
                    f"{at}.pools.{tensor}",
                    f"kernel {kernel.name!r} does not touch tensor {tensor!r}; "
                    f"it touches {', '.join(names)}",
                )
        for t, tensor in enumerate(names):
            pool = pools.get(tensor)
            if pool is None:
                raise fields.fail(
                    f"{at}.pools", f"kernel {kernel.name!r}: tensor {tensor!r} is not given a pool"
                )
            if pool not in allowed:
                raise fields.fail(
                    f"{at}.pools.{tensor}",
                    f"kernel {kernel.name!r}, tensor {tensor!r}: {pool!r} is not a pool of "
                    f"system.pools ({', '.join(allowed)})",
                )
            rows[c, t] = allowed[pool]
        value = fields.get(config, "seconds", at, (int, float))
        if not math.isfinite(value) or value < 0:
            raise fields.fail(
                f"{at}.seconds",
                f"kernel {kernel.name!r}: time {value!r} must be a finite number of seconds >= 0",
            )
        seconds[c] = value
        key = tuple(rows[c].tolist())
        if key in seen:
            raise fields.fail(
                at, f"kernel {kernel.name!r}: same pools as configs[{seen[key]}]; keep one"
            )
        seen[key] = c
    return CostTable(configs=rows, seconds=seconds)
