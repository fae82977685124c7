"""Benchmark: the 2LM cache loop and the baselines on a 100,000-kernel graph.

Run ``python benchmarks/bench_cache.py [LAYERS] [BASE_NBYTES]`` (default 33333
layers of ``examples.networks.training_chain``, i.e. 100,000 kernels, with
64 KiB base tensors so that the step makes a few million 4 KiB-page accesses;
``10 4096`` is the smallest input). Prints the time to compile (or load from
cache) the numba loop, the compiled loop against the plain-Python reference per
access (the reference on a prefix of the stream), accesses per second, and the
wall time of every baseline at a 4:1 PMM:DRAM ratio.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from autotm_core import preset
from autotm_core.baselines.cache_kernels import new_state, reference_cache, run_cache
from autotm_core.baselines.first_touch import address_layout
from autotm_core.baselines.two_level import access_stream
from autotm_core.capacity import fast_capacity
from autotm_core.errors import CapacityError
from autotm_core.examples.networks import training_chain
from autotm_core.planning import BASELINE_PLANNERS, load_problem, plan

LINE_NBYTES = 4096
REFERENCE_ACCESSES = 300_000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("layers", nargs="?", type=int, default=33333,
                        help="layers of the training chain (default 33333: 100,000 kernels)")
    parser.add_argument("base_nbytes", nargs="?", type=int, default=64 * 1024,
                        metavar="BASE_NBYTES", help="bytes of its base tensor (default 65536)")
    args = parser.parse_args(argv)
    layers, base = args.layers, args.base_nbytes
    graph = training_chain(layers, base_nbytes=base)
    system = preset("optane-2019")
    live = graph.liveness
    capacity = fast_capacity(graph, ratio="4:1")
    print(f"graph {graph.name}: {live.n_kernels:,} kernels, {len(graph.tensors):,} tensors, "
          f"peak {live.peak_nbytes / 2**20:.1f} MiB, cache (4:1) {capacity / 2**20:.1f} MiB")

    start = time.perf_counter()
    first_line, n_lines = access_stream(graph, address_layout(graph), LINE_NBYTES)
    print(f"address layout + access stream: {time.perf_counter() - start:.3f} s, "
          f"{int(n_lines.sum()):,} page accesses in {len(n_lines):,} entries")
    reads, writes = live.kernel_reads, live.kernel_writes
    n_sets = capacity // LINE_NBYTES

    start = time.perf_counter()
    tiny = np.zeros(1, dtype=np.int64)
    run_cache(tiny, tiny, reads[:1], writes[:1], 1, 1, *new_state(1, 1), 0)
    print(f"numba compile or cache load: {time.perf_counter() - start:.3f} s")

    for ways in (1, 4):
        state = new_state(n_sets // ways, ways)
        start = time.perf_counter()
        *_, _clock = run_cache(first_line, n_lines, reads, writes, n_sets // ways, ways, *state, 0)
        seconds = time.perf_counter() - start
        accesses = int(n_lines.sum())
        print(f"numba, {ways}-way: {seconds:.3f} s, {seconds / accesses * 1e9:.2f} ns per access, "
              f"{accesses / seconds / 1e6:.1f} M accesses/s")

    cut = int(np.searchsorted(np.cumsum(n_lines), REFERENCE_ACCESSES))
    prefix = int(n_lines[:cut].sum())
    args = (first_line[:cut].tolist(), n_lines[:cut].tolist(), reads[:cut].tolist(),
            writes[:cut].tolist(), n_sets, 1)
    start = time.perf_counter()
    reference_cache(*args)
    ref = time.perf_counter() - start
    state = new_state(n_sets, 1)
    start = time.perf_counter()
    run_cache(first_line[:cut], n_lines[:cut], reads[:cut], writes[:cut], n_sets, 1, *state, 0)
    fast = time.perf_counter() - start
    print(f"reference on the first {prefix:,} accesses: {ref / prefix * 1e9:.0f} ns per access "
          f"({prefix / ref / 1e6:.2f} M/s); numba {fast / prefix * 1e9:.2f} ns per access, "
          f"{ref / fast:.0f}x faster")

    problem = load_problem(graph, system, limit=str(capacity))
    for name in BASELINE_PLANNERS:
        if name == "all-fast":
            continue
        start = time.perf_counter()
        try:
            outcome = plan(problem, name)  # verified and simulated, as every command plans
        except CapacityError as refused:  # recomputing or offloading alone may not fit
            print(f"baseline {name}: {time.perf_counter() - start:.2f} s, no plan: "
                  f"{refused.message}")
            continue
        extra = ""
        if outcome.cache is not None:
            extra = (f", hit rate {outcome.cache.hit_rate:.3f}, predicted "
                     f"{outcome.step_seconds:.3f} s")
        print(f"baseline {name}: {time.perf_counter() - start:.2f} s{extra}")


if __name__ == "__main__":
    main()
