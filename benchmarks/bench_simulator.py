"""Benchmark: simulate a 100,000-kernel plan with the numba loop and with the reference.

Prints the time to compile (or load from cache) the numba loop, one simulation through
:func:`autotm_core.simulation.simulate` with each engine (best of ``--rounds``), and the
loop alone, each engine on the same arrays, built as ``simulate`` builds them; both
engines must agree (exit status 1 if they do not).

    python benchmarks/bench_simulator.py [--layers 33333] [--rounds 5]

``--layers`` is the size of ``examples.networks.training_chain`` (3 x LAYERS + 1 kernels:
the default is 100,000 kernels); ``--smoke`` is ``--layers 10 --rounds 1``.
"""

from __future__ import annotations

import argparse
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


def loop_arguments(plan, graph, system, costs) -> tuple:  # type: ignore[no-untyped-def]
    """The arguments ``simulate`` gives the loop (see ``simulation.kernels.simulate_arrays``)."""
    from autotm_core.plans.arrays import encode_plan
    from autotm_core.simulation.simulate import copy_rates, kernel_traffic_seconds

    arrays, problems = encode_plan(plan, graph, system)
    if problems:
        raise SystemExit(f"bench_simulator: the plan does not encode: {problems[:3]}")
    sync_bps, async_bps = copy_rates(system)
    nbytes = graph.liveness.nbytes
    kernel_seconds = np.asarray(costs.seconds_all(arrays.entry_pools), dtype=np.float64)
    return (kernel_seconds, graph.liveness.workspace_nbytes, arrays.res_pool,
            arrays.res_first, arrays.res_last, nbytes[arrays.res_tensor], arrays.move_kernel,
            arrays.move_source, arrays.move_target, arrays.move_async, arrays.move_until,
            nbytes[arrays.move_tensor], sync_bps, async_bps, system.link_channels,
            kernel_traffic_seconds(graph, system, arrays.entry_pools))


def time_loop(loop, arguments: tuple, rounds: int):  # type: ignore[no-untyped-def]
    """Best of ``rounds`` calls of ``loop``, and the first call's results."""
    best, first = np.inf, None
    for _ in range(rounds):
        result, seconds = timed(lambda: loop(*arguments))
        best = min(best, seconds)
        if first is None:
            first = result
    return first, best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=33333,
                        help="layers of the training chain (default 33333: 100,000 kernels)")
    parser.add_argument("--rounds", type=int, default=5, help="timed runs, best kept (default 5)")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest input: --layers 10 --rounds 1")
    args = parser.parse_args(argv)
    layers, rounds = (10, 1) if args.smoke else (args.layers, max(1, args.rounds))
    from autotm_core.simulation import kernels, reference

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

    numba_seconds = min(timed(lambda: simulate(plan, graph, system, costs))[1]
                        for _ in range(rounds))
    numba_sim = simulate(plan, graph, system, costs)
    ref_sim, ref_seconds = timed(lambda: simulate(plan, graph, system, costs,
                                                  engine=Engine.REFERENCE))
    print(f"simulate, numba:     {numba_seconds:.3f} s (best of {rounds}; predicted step "
          f"{numba_sim.step_seconds:.6g} s)")
    print(f"simulate, reference: {ref_seconds:.3f} s (predicted step {ref_sim.step_seconds:.6g} s)")
    print(f"reference / numba:   {ref_seconds / numba_seconds:.1f}x")

    arguments, build_seconds = timed(lambda: loop_arguments(plan, graph, system, costs))
    numba_out, numba_loop = time_loop(kernels.simulate_arrays, arguments, rounds)
    ref_out, ref_loop = time_loop(reference.simulate_arrays, arguments, 1)
    print(f"of which plan -> loop arguments (encoding, costs, traffic): {build_seconds:.3f} s")
    print(f"the loop alone: numba {numba_loop * 1e3:.2f} ms, reference {ref_loop * 1e3:.1f} ms, "
          f"ratio {ref_loop / numba_loop:.0f}x")
    agree = np.isclose(numba_sim.step_seconds, ref_sim.step_seconds, rtol=1e-9) and all(
        np.allclose(np.asarray(a), np.asarray(b), rtol=1e-9)
        for a, b in zip(numba_out, ref_out, strict=True))
    if not agree:
        print("bench_simulator: the numba and reference engines disagree", file=sys.stderr)
        return 1
    print("numba and reference agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
