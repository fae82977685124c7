"""Profile-guided kernel costs: every distinct kernel, every placement, measured for real.

:func:`profile_graph` does what AutoTM's profiler did, on this machine:

1. each pool gets a NUMA node (``bind``, else the pool's ``numa_node``, else
   the first allowed node), checked against the nodes this process may use;
2. each kernel gets a signature (:mod:`.signature`) and its configurations
   (:mod:`.configs`); a configuration maps to a *NUMA placement*, the node of
   each tensor (and of the workspace: the fastest pool's). Kernels with equal
   signatures, and configurations with equal placements, share one measurement;
3. each needed (signature, placement) is looked up in the cache
   (:mod:`.cache`); the rest are measured (:mod:`.measure`: replay kernels on
   NUMA-bound arenas, one warm-up, ``repeat`` timed runs, the median kept with
   the minimum and the interquartile range) and stored;
4. the cost table gets, for each kernel and configuration, the median of its
   placement's measurement.

:func:`save_profile` writes it as a cost file (``autotm-core/costs`` v1) that
``solve --costs`` and ``simulate --costs`` read.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping

import numpy as np

from autotm_core.costs.model import CostTable, TableCosts
from autotm_core.errors import UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem, allowed_pools
from autotm_core.profiler.cache import CacheKey, ProfileCache
from autotm_core.profiler.configs import DEFAULT_MAX_CONFIGS, kernel_configs
from autotm_core.profiler.context import current_context
from autotm_core.profiler.records import Measurement, ProfileResult
from autotm_core.profiler.signature import kernel_signatures

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
"""``progress(done, total, kernel)`` after each measurement (``total``: measurements needed)."""

SLOWEST_LISTED = 10
"""Kernels the result lists as the slowest."""


def profile_graph(
    graph: Graph,
    system: MemorySystem,
    *,
    repeat: int = 3,
    cache: ProfileCache | None = None,
    bind: Mapping[str, int] | None = None,
    max_configs: int = DEFAULT_MAX_CONFIGS,
    progress: Progress | None = None,
) -> ProfileResult:
    """Measure every kernel of ``graph`` in every configuration on ``system`` (module doc)."""
    from autotm_core.costs import estimate_flops
    from autotm_core.executor.layout import resolve_nodes

    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat {repeat!r} must be a whole number >= 1", hint="e.g. --repeat 3")
    if isinstance(max_configs, bool) or not isinstance(max_configs, int) or max_configs < 1:
        raise UsageError(f"max configs {max_configs!r} must be a whole number >= 1",
                         hint="e.g. --max-configs 256")
    started = time.perf_counter()
    pool_nodes, notes = resolve_nodes(system, bind)
    context = current_context()
    signatures = kernel_signatures(graph, flops=estimate_flops(graph).flops)
    positions = {pool.name: i for i, pool in enumerate(system.pools)}
    allowed_of = [[positions[name] for name in names] for names in allowed_pools(graph, system)]
    live = graph.liveness
    workspace_node = pool_nodes[0]

    configs, keys_of, restricted = [], [], []
    keys: dict[str, CacheKey] = {}
    for k, kernel in enumerate(graph.kernels):
        tensors = live.kernel_tensors[live.kernel_tensor_slice(k)].tolist()
        rows, cut = kernel_configs([allowed_of[t] for t in tensors], n_pools=len(system.pools),
                                   max_configs=max_configs)
        if cut:
            restricted.append(kernel.name)
        row_keys = []
        for row in rows.tolist():
            key = CacheKey(signatures[k], tuple(pool_nodes[p] for p in row), workspace_node,
                           context)
            row_keys.append(keys.setdefault(key.digest, key).digest)
        configs.append(rows)
        keys_of.append(row_keys)
    if restricted:
        notes.append(f"{len(restricted)} kernel(s) had more than {max_configs} configurations; "
                     f"only the uniform ones and single deviations from all-fast were profiled "
                     f"(first: {restricted[0]!r})")
    if len(set(pool_nodes)) == 1 and len(system.pools) > 1:
        notes.append(f"every pool is bound to NUMA node {pool_nodes[0]}: the pools are the same "
                     "memory, so each kernel was measured once and every configuration got that "
                     "time")

    found: dict[str, Measurement] = {}
    missing: list[str] = []
    for digest, key in keys.items():
        hit = cache.get(key, min_repeat=repeat) if cache is not None else None
        if hit is None:
            missing.append(digest)
        else:
            found[digest] = hit
    hits = len(found)
    measure_started = time.perf_counter()
    if missing:
        _measure(missing, keys, found, repeat=repeat, cache=cache, progress=progress,
                 names={d: graph.kernels[k].name for k in range(len(graph.kernels))
                        for d in keys_of[k]})
    measured_seconds = time.perf_counter() - measure_started

    tables = tuple(
        CostTable(configs=rows, seconds=np.array([found[d].median_seconds for d in row_keys],
                                                 dtype=np.float64))
        for rows, row_keys in zip(configs, keys_of, strict=True)
    )
    costs = TableCosts(n_pools=len(system.pools), kernel_ptr=live.kernel_ptr, tables=tables)
    fast = [(graph.kernels[k].name, found[keys_of[k][0]]) for k in range(len(graph.kernels))
            if len(keys_of[k])]
    fast.sort(key=lambda item: -item[1].median_seconds)
    return ProfileResult(
        costs=costs, kernels=len(graph.kernels),
        distinct_kernels=len({s.digest for s in signatures}),
        configurations=sum(len(rows) for rows in configs), restricted_kernels=tuple(restricted),
        placements=len(keys), cache_hits=hits, measured=len(missing),
        measured_seconds=measured_seconds, total_seconds=time.perf_counter() - started,
        nodes=tuple(pool_nodes), notes=tuple(notes),
        slowest=tuple((name, m.median_seconds, m.iqr_seconds)
                      for name, m in fast[:SLOWEST_LISTED]),
    )


def _measure(
    missing: list[str], keys: Mapping[str, CacheKey], found: dict[str, Measurement], *,
    repeat: int, cache: ProfileCache | None, progress: Progress | None, names: Mapping[str, str],
) -> None:
    from autotm_core.profiler.measure import Bench, footprint, summarize

    need: dict[int, int] = {}
    for digest in missing:
        key = keys[digest]
        for node, nbytes in footprint(key.signature, key.nodes, key.workspace_node).items():
            need[node] = max(need.get(node, 0), nbytes)
    with Bench(need) as bench:
        for done, digest in enumerate(missing, start=1):
            key = keys[digest]
            samples = bench.measure(key.signature, key.nodes, key.workspace_node, repeat=repeat)
            found[digest] = summarize(samples)
            if cache is not None:
                cache.put(key, found[digest], samples_seconds=samples)
            logger.debug("measured %s on nodes %s: %.3g s", names[digest], key.nodes,
                         found[digest].median_seconds)
            if progress is not None:
                progress(done, len(missing), names[digest])


def save_profile(result: ProfileResult, path: str | os.PathLike[str], *, graph: Graph,
                 system: MemorySystem) -> None:
    """Write the profiled cost table as a cost file, with the machine it was measured on."""
    from autotm_core.costs.costfile import save_costs

    context = current_context()
    save_costs(result.costs, path, graph=graph, system=system, machine=context.description,
               context=f"{context.summary}; each time is the median of the timed repetitions "
               "(after one warm-up)")
