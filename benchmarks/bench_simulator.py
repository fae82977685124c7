"""Benchmark: simulate a 100,000-kernel plan with the numba loop and with the reference.

Run ``python benchmarks/bench_simulator.py [LAYERS]`` (default 33333 layers, i.e.
100,000 kernels of ``examples.networks.training_chain``). Prints the time to
compile (or load from cache) the numba loop, one simulation through
:func:`autotm_core.simulation.simulate` with each engine, and the loop alone.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from autotm_core import preset
from autotm_core.costs.roofline import roofline_costs
from autotm_core.examples.networks import training_chain
from autotm_core.plans import Move, MoveKind, Residency, make_plan
from autotm_core.simulation import Engine, simulate


def mixed_plan(graph, system):  # type: ignore[no-untyped-def]
    """Weights and gradients in slow memory; activations evicted during the kernel after
    their birth and fetched back just before their last use."""
    live = graph.liveness
    residencies, moves = [], []
    for t, tensor in enumerate(graph.tensors):
        first, last = int(live.first[t]), int(live.last[t])
        if tensor.kind.value in ("parameter", "gradient"):
            residencies.append(Residency(tensor.name, "pmm", first, last))
        elif last - first > 3:
            residencies += [Residency(tensor.name, "dram", first, first + 1),
                            Residency(tensor.name, "pmm", first + 1, last - 1),
                            Residency(tensor.name, "dram", last, last)]
            moves += [Move(tensor.name, "dram", "pmm", first + 1, MoveKind.ASYNC),
                      Move(tensor.name, "pmm", "dram", last)]
        else:
            residencies.append(Residency(tensor.name, "dram", first, last))
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="bench/mixed")


def timed(action):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = action()
    return result, time.perf_counter() - start


def main() -> None:
    layers = int(sys.argv[1]) if len(sys.argv) > 1 else 33333
    graph = training_chain(layers)
    system = preset("optane-2019")
    plan = mixed_plan(graph, system)
    costs = roofline_costs(graph, system)
    print(f"graph {graph.name}: {len(graph.kernels):,} kernels, {len(graph.tensors):,} tensors; "
          f"plan: {len(plan.residencies):,} residencies, {len(plan.moves):,} moves")

    small = training_chain(1)
    _, compile_seconds = timed(lambda: simulate(mixed_plan(small, system), small, system,
                                                roofline_costs(small, system)))
    print(f"numba import + compile (or cache load): {compile_seconds:.3f} s")

    runs = [timed(lambda: simulate(plan, graph, system, costs))[1] for _ in range(5)]
    numba_sim = simulate(plan, graph, system, costs)
    ref_sim, ref_seconds = timed(lambda: simulate(plan, graph, system, costs,
                                                  engine=Engine.REFERENCE))
    assert np.isclose(numba_sim.step_seconds, ref_sim.step_seconds)
    numba_seconds = min(runs)
    print(f"simulate, numba:     {numba_seconds:.3f} s (best of 5; predicted step "
          f"{numba_sim.step_seconds:.3f} s)")
    print(f"simulate, reference: {ref_seconds:.3f} s")
    print(f"reference / numba:   {ref_seconds / numba_seconds:.1f}x")

    from autotm_core.plans.arrays import encode_plan
    from autotm_core.simulation import kernels, reference

    arrays, _ = encode_plan(plan, graph, system)
    _, encode_seconds = timed(lambda: encode_plan(plan, graph, system))
    entry = arrays.entry_pools
    kernel_seconds, cost_seconds = timed(lambda: costs.seconds_all(entry))
    n_pools = len(system.pools)
    sync_bps = np.array([[np.inf if s == t else system.link(s, t).sync_bytes_per_second
                          for t in range(n_pools)] for s in range(n_pools)])
    async_bps = np.array([[np.inf if s == t else system.link(s, t).async_bytes_per_second
                           for t in range(n_pools)] for s in range(n_pools)])
    nbytes = graph.liveness.nbytes
    loop_args = (kernel_seconds, graph.liveness.workspace_nbytes, arrays.res_pool,
                 arrays.res_first, arrays.res_last, nbytes[arrays.res_tensor], arrays.move_kernel,
                 arrays.move_source, arrays.move_target, arrays.move_async,
                 nbytes[arrays.move_tensor], sync_bps, async_bps)
    numba_loop = min(timed(lambda: kernels.simulate_arrays(*loop_args))[1] for _ in range(5))
    _, ref_loop = timed(lambda: reference.simulate_arrays(*loop_args))
    print(f"of which plan -> arrays {encode_seconds:.3f} s, kernel costs {cost_seconds:.3f} s")
    print(f"the loop alone: numba {numba_loop * 1e3:.2f} ms, reference {ref_loop * 1e3:.1f} ms, "
          f"ratio {ref_loop / numba_loop:.0f}x")

if __name__ == "__main__":
    main()
