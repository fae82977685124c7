"""Benchmark: roofline costs of a 100,000-kernel training chain.

Run: ``python tests/costs/bench_roofline.py``.

Not a test (no timed assertions); it prints the seconds of each step, measured
after the graph and its liveness exist (they are the IR's cost, not the model's).
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from autotm_core.costs import estimate_flops, roofline_costs
from autotm_core.examples.networks import training_chain
from autotm_core.presets import preset


def _timed(label: str, step):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:44s} {wall:7.3f} s wall {cpu:7.3f} s cpu")
    return result


def main() -> None:
    system = preset("optane-2019")
    graph = training_chain(33_333)  # 3 x 33,333 + 1 = 100,000 kernels
    n_entries = len(graph.liveness.kernel_tensors)
    print(f"{len(graph.kernels)} kernels, {n_entries} kernel-tensor entries")
    costs = _timed("roofline_costs, FLOPs given by the IR", lambda: roofline_costs(graph, system))
    placement = np.random.default_rng(0).integers(0, 2, n_entries)
    _timed("seconds_all of one placement", lambda: costs.seconds_all(placement))
    # The same graph with no FLOPs and op kinds the estimator table knows.
    ops = {"layer": "linear", "layer_backward": "linear_backward", "loss": "cross_entropy"}
    bare = attrs.evolve(graph, kernels=[attrs.evolve(k, flops=None, op=ops.get(k.op, k.op))
                                        for k in graph.kernels])
    assert len(bare.liveness.kernel_tensors) == n_entries
    estimate = _timed("estimate_flops, every kernel estimated", lambda: estimate_flops(bare))
    _timed("roofline_costs with that estimate",
           lambda: roofline_costs(bare, system, flops=estimate))


if __name__ == "__main__":
    main()
