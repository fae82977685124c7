"""Benchmark address assignment on plans of synthetic training chains.

Two plans of ``examples.networks.training_chain(layers)`` (3 x layers + 1 kernels):

- ``all-fast``: every tensor lives in the fast pool for its whole life (about 4
  residencies per layer);
- ``evicted``: the same, but every weight but the last leaves the fast pool
  between its forward and its backward use (:func:`evicted_plan`), so it begins
  and ends the step in the fast pool in two residencies that must share one
  offset (the next step finds it there), and in the slow pool likewise.

Prints, per size and plan, the time of ``assign_offsets`` (best of ``--rounds``, in
wall and in CPU time: the latter is steadier on a machine shared with other jobs),
the height over the lower bound in each pool and the wrap-around pairs placed;
then, for the all-fast plan, each placement order alone.

    python benchmarks/bench_addresses.py [LAYERS ...] [--rounds N]   # default: 2500 6667 25000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from autotm_core import presets
from autotm_core.addresses import ORDERS, assign_offsets, lower_bound
from autotm_core.addresses.lowest_fit import lowest_fit
from autotm_core.baselines import all_fast
from autotm_core.examples.networks import training_chain
from autotm_core.ir import Graph, TensorKind
from autotm_core.memory import MemorySystem
from autotm_core.plans import Move, Plan, Residency, make_plan


def evicted_plan(graph: Graph, system: MemorySystem, layers: int) -> Plan:
    """Weights ``w0 .. w{layers-2}`` of a training chain leave the fast pool mid-step.

    Weight ``i`` is in the fast pool from kernel 0 to its forward use and keeps a
    clean copy in the slow pool; it is copied back before its backward use and
    stays until the end; the optimizer updates it there, and the updated value is
    copied back to the slow pool right after. Everything else stays in the fast pool.
    """
    fast, slow = system.fast.name, system.pools[1].name
    n = len(graph.kernels)
    residencies, moves = [], []
    for r in all_fast(graph, system).residencies:
        layer = int(r.tensor[1:]) if graph.tensor(r.tensor).kind is TensorKind.PARAMETER else -1
        if not 0 <= layer < layers - 1:  # the last weight is updated by the last kernel: stays
            residencies.append(r)
            continue
        w, backward, update = r.tensor, 2 * layers - layer, 2 * layers + 1 + layer
        residencies += [Residency(w, fast, 0, layer), Residency(w, slow, 0, update),
                        Residency(w, fast, backward, n - 1), Residency(w, slow, update + 1, n - 1)]
        moves += [Move(w, slow, fast, backward), Move(w, fast, slow, update + 1)]
    return make_plan(graph, system, residencies=residencies, moves=moves, planner="evicted")


def main(layers_list: list[int], rounds: int) -> None:
    system = presets.preset("optane-2019")
    warm = np.zeros(1, dtype=np.int64)
    lowest_fit(warm, warm, warm + 1, warm, 1, warm - 1)  # compile (or load) outside the timings
    for layers in layers_list:
        graph = training_chain(layers)
        for plan in (all_fast(graph, system), evicted_plan(graph, system, layers)):
            seconds, cpu_seconds = [], []
            for _ in range(rounds):
                start, cpu = time.perf_counter(), time.process_time()
                result = assign_offsets(plan, graph, system)
                seconds.append(time.perf_counter() - start)
                cpu_seconds.append(time.process_time() - cpu)
            pools = ", ".join(
                f"{p.pool} {p.height_nbytes / max(p.lower_bound_nbytes, 1):.6f} "
                f"({p.order}, {p.pairs} pairs)" for p in result.pools if p.items)
            print(f"{len(graph.kernels):>6} kernels {plan.planner:<18} {len(plan.residencies):>7} "
                  f"residencies: assign_offsets {min(seconds):6.2f} s wall, "
                  f"{min(cpu_seconds):6.2f} s CPU (best of {rounds}), height/bound {pools}, "
                  f"fits {result.fits}")
        live = graph.liveness
        s, e = 2 * live.first + 1, 2 * live.last + 1
        z = -(-live.nbytes // 4096) * 4096
        n_times = 2 * len(graph.kernels)
        bound = lower_bound(s, e, z, n_times)
        for name in ("size", "start"):
            order = ORDERS[name](s, e, z).astype(np.int64)
            start = time.perf_counter()
            offsets = lowest_fit(s, e, z, order, n_times, np.full(len(z), -1, dtype=np.int64))
            seconds_one = time.perf_counter() - start
            print(f"{'':>14} all-fast, order {name:<6} {seconds_one:6.2f} s, height/bound "
                  f"{(offsets + z).max() / bound:.6f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layers", nargs="*", type=int, default=[2500, 6667, 25000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    main(args.layers, args.rounds)
