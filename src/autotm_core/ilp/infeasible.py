"""Why no plan fits: lower bounds checked before solving, and the message after a proof.

Before building a model, :func:`check_lower_bounds` adds up, at every kernel, the
bytes that must be in the fastest pool whatever the plan (the kernel's workspace
and every live tensor that may live nowhere else: pinned, or restricted to that
pool) and raises :class:`~autotm_core.errors.CapacityError` naming the kernel, the
bytes and the smallest capacity that could work.
"""

from __future__ import annotations

import numpy as np

from autotm_core.capacity import check_pools_hold, droppable_nbytes
from autotm_core.errors import CapacityError
from autotm_core.ilp.gadgets import allowed_states, states_for
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.units import format_bytes, round_up


def forced_fast_nbytes(graph: Graph, system: MemorySystem,
                       options: FormulationOptions) -> np.ndarray:
    """Bytes (page-rounded) that must be in the fastest pool at each kernel."""
    live = graph.liveness
    states = states_for(len(system.pools))
    page = options.page_nbytes
    delta = np.zeros(len(graph.kernels) + 1, dtype=np.int64)
    fast_only = np.zeros(len(graph.tensors), dtype=bool)
    for t in range(len(graph.tensors)):
        first, last = int(live.first[t]), int(live.last[t])
        if last < first or last < 0:
            continue
        if all(states[s].pools == {0} for s in allowed_states(graph, system, options, t)):
            fast_only[t] = True
            size = round_up(int(live.nbytes[t]), page)
            delta[first] += size
            delta[last + 1] -= size
    workspace = np.array([round_up(int(w), page) for w in live.workspace_nbytes], dtype=np.int64)
    forced = np.cumsum(delta[:-1]) + workspace
    if options.recompute:  # between its uses such a tensor may be dropped instead
        forced -= droppable_nbytes(graph, page_nbytes=page, among=fast_only)
    return forced


def check_lower_bounds(graph: Graph, system: MemorySystem, capacities: list[np.ndarray | None],
                       options: FormulationOptions) -> None:
    """Raise :class:`CapacityError` when the pools together cannot hold what is live, or the
    fastest pool what must be there (with ``options.recompute``, less what a plan may drop
    between its uses)."""
    check_pools_hold(graph, system, recompute=options.recompute)
    cap = capacities[0]
    if cap is None or not len(graph.kernels):
        return
    forced = forced_fast_nbytes(graph, system, options)
    over = np.flatnonzero(forced > cap)
    if not len(over):
        return
    k = int(over[np.argmax(forced[over] - cap[over])])
    pool = system.pools[0].name
    raise CapacityError(
        f"no plan fits: kernel {graph.kernels[k].name!r} (#{k}) needs "
        f"{format_bytes(int(forced[k]))} ({int(forced[k])} bytes) in pool {pool!r} (its workspace "
        f"and the tensors that may live nowhere else), more than its capacity of "
        f"{format_bytes(int(cap[k]))}",
        hint=f"give {pool!r} at least {int(forced.max())} bytes "
             f"({format_bytes(int(forced.max()))}), or let pinned tensors move "
             "(pin_to_fast off)",
    )


def explain_infeasible(graph: Graph, system: MemorySystem, capacities: list[np.ndarray | None],
                       options: FormulationOptions) -> CapacityError:
    """The error to raise when a solver proved the model infeasible."""
    limits = [None if c is None else int(c.min()) for c in capacities]
    bounded = [f"{p.name!r} ({format_bytes(c)})"
               for p, c in zip(system.pools, limits, strict=True) if c is not None]
    forced = int(forced_fast_nbytes(graph, system, options).max())
    fast = system.pools[0].name
    page = options.page_nbytes
    live = graph.liveness
    rounded = int(max((sum(round_up(int(live.nbytes[t]), page) for t in live.live_at(k))
                       + round_up(int(live.workspace_nbytes[k]), page)
                       for k in range(len(graph.kernels))), default=0))
    why = ("tensors being copied occupy both pools at once, and a tensor that exists before "
           "the step and survives it ends the step in every pool it began in")
    if forced:
        why = f"at least {format_bytes(forced)} must stay in {fast!r}; " + why
    if all(c is not None for c in limits) and rounded > sum(int(c or 0) for c in limits):
        total = sum(int(c or 0) for c in limits)
        why = (f"rounded up to {page}-byte pages, {format_bytes(rounded)} are live at once, "
               f"more than the {format_bytes(total)} all the pools hold together; " + why)
        hint = (f"give the pools at least {rounded - total:,} bytes more between them (raise "
                f"a slower pool's limit, e.g. --limit {system.pools[-1].name}=SIZE)")
    else:
        hint = (f"raise the capacity of {fast!r} (or of a slower pool, where a limit holds "
                f"it); the peak live memory is {format_bytes(int(live.peak_nbytes))}")
    return CapacityError(
        f"no plan of graph {graph.name!r} fits pools {', '.join(bounded)}: the solver proved it "
        f"({why})", hint=hint)
