"""Benchmark address assignment on all-fast plans of synthetic training chains.

Every tensor of ``examples.networks.training_chain(layers)`` lives in the fast
pool for its whole life (about 4 residencies per layer). Prints, per size and
per placement order, the time to pack and the height over the lower bound.

    python benchmarks/bench_addresses.py [LAYERS ...]    # default: 2500 12500 25000
"""

from __future__ import annotations

import sys
import time

import numpy as np

from autotm_core import presets
from autotm_core.addresses import ORDERS, assign_offsets, lower_bound
from autotm_core.addresses.lowest_fit import lowest_fit
from autotm_core.examples.networks import training_chain
from autotm_core.plans import Residency, make_plan
from autotm_core.units import format_bytes


def main(layers_list: list[int]) -> None:
    system = presets.preset("optane-2019")
    fast = system.fast.name
    warm = np.zeros(1, dtype=np.int64)
    lowest_fit(warm, warm, warm + 1, warm, 1)  # compile (or load the cache) outside the timings
    for layers in layers_list:
        graph = training_chain(layers)
        live = graph.liveness
        spans = [
            Residency(t.name, fast, int(live.first[i]), int(live.last[i]))
            for i, t in enumerate(graph.tensors)
        ]
        plan = make_plan(graph, system, residencies=spans, planner="all-fast")
        start = time.perf_counter()
        result = assign_offsets(plan, graph, system)
        seconds = time.perf_counter() - start
        packing = result.pool(fast)
        print(
            f"{layers:>6} layers {len(spans):>7} residencies: assign_offsets {seconds:7.2f} s, "
            f"height {format_bytes(packing.height_nbytes)}, "
            f"height/bound {packing.height_nbytes / packing.lower_bound_nbytes:.6f} "
            f"(order {packing.order}, fits {result.fits})"
        )
        s = 2 * live.first + 1
        e = 2 * live.last + 1
        z = -(-live.nbytes // 4096) * 4096
        bound = lower_bound(s, e, z, 2 * len(graph.kernels))
        for name in ("size", "start"):
            order = ORDERS[name](s, e, z).astype(np.int64)
            start = time.perf_counter()
            offsets = lowest_fit(s, e, z, order, 2 * len(graph.kernels))
            seconds = time.perf_counter() - start
            print(
                f"{'':>14} order {name:<6} {seconds:7.2f} s, height/bound "
                f"{(offsets + z).max() / bound:.6f}"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2500, 12500, 25000])
