"""Benchmark the executor: copy bandwidth, per-kernel overhead, measured against predicted time.

1. Reference: ``np.copyto`` of 256 MiB between pre-faulted buffers (best of 5), the
   single-thread copy bandwidth of this machine.
2. Synchronous moves: a plan whose one move copies 256 MiB between two arenas,
   through the executor; its bandwidth against the reference (goal: at least 80%).
3. Overhead: a chain of 2,000 tiny kernels (64 bytes in, 64 out, no compute); the
   executor's median step time against the same replay calls in a bare loop, per
   kernel (goal: under 20 microseconds).
4. Prediction: the replay kernels' read, write and compute rates measured here
   make a two-pool system (both on node 0); a first-touch plan of a training
   chain runs on it and its measured step time is compared with the simulator's.

    python benchmarks/bench_executor.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from autotm_core.baselines import run_baseline
from autotm_core.examples.networks import training_chain
from autotm_core.executor import replay
from autotm_core.executor.run import execute
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.memory import CopyLink, MemorySystem, Pool
from autotm_core.plans import Move, Residency, make_plan
from autotm_core.units import format_bandwidth, format_seconds

MIB = 1 << 20


def best_seconds(action, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def copy_reference(nbytes: int) -> float:
    source, target = np.ones(nbytes, dtype=np.uint8), np.ones(nbytes, dtype=np.uint8)
    return nbytes / best_seconds(lambda: np.copyto(target, source), 5)


def system_of(read: float, write: float, copy: float, flops: float) -> MemorySystem:
    return MemorySystem(
        name="this-machine", flops_per_second=flops,
        pools=(Pool("fast", None, read, write, numa_node=0), Pool("slow", None, read, write,
                                                                  numa_node=0)),
        links=(CopyLink("fast", "slow", copy, copy), CopyLink("slow", "fast", copy, copy)),
    )


def sync_moves(nbytes: int, repeat: int, reference: float) -> None:
    b = GraphBuilder("one-move")
    b.tensor("a", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("out", nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="touch", inputs=[], outputs=["out"], flops=0.0)
    b.kernel("k1", op="use", inputs=["out"], outputs=["out"], flops=0.0)
    b.kernel("k2", op="keep", inputs=["out", "a"], outputs=["out"], flops=0.0)
    graph = b.build()
    system = system_of(1e10, 1e10, reference, 1e9)
    plan = make_plan(graph, system, planner="bench/move", residencies=[
        Residency("a", "slow", 0, 2), Residency("a", "fast", 2, 2),
        Residency("out", "fast", 0, 2)], moves=[Move("a", "slow", "fast", 2)])
    report = execute(plan, graph, system, repeat=repeat, check=False)
    achieved = report.sync_bytes_per_second
    print(f"sync move of {nbytes // MIB} MiB: {format_bandwidth(achieved)} "
          f"= {achieved / reference:.0%} of the reference (goal >= 80%)")


def overhead(n_kernels: int, repeat: int) -> None:
    b = GraphBuilder("tiny")
    previous = b.tensor("t0", nbytes=64, kind=TensorKind.INPUT)
    for k in range(n_kernels):
        kind = TensorKind.OUTPUT if k == n_kernels - 1 else TensorKind.ACTIVATION
        out = b.tensor(f"t{k + 1}", nbytes=64, kind=kind)
        b.kernel(f"k{k}", op="tiny", inputs=[previous], outputs=[out], flops=0.0)
        previous = out
    graph = b.build()
    system = system_of(1e10, 1e10, 1e10, 1e9)
    plan = run_baseline("all-fast", graph, system)
    report = execute(plan, graph, system, repeat=repeat, check=False)
    space = np.zeros(64 * (n_kernels + 2), dtype=np.uint8)
    words = space.view(np.uint64)
    ops = np.array([[64 * (k + i), 64, k, i] for k in range(n_kernels) for i in (0, 1)],
                   dtype=np.int64)

    def bare() -> None:
        run = replay.run_kernel
        for k in range(n_kernels):
            run(space, words, ops, 2 * k, 2 * k + 2, 0)

    bare_seconds = best_seconds(bare, repeat)
    per_kernel = (report.measured_step_seconds - bare_seconds) / n_kernels
    print(f"{n_kernels} tiny kernels: executor {format_seconds(report.measured_step_seconds)}, "
          f"bare replay loop {format_seconds(bare_seconds)}: overhead "
          f"{format_seconds(per_kernel)} per kernel (goal < 20 us)")


def calibrate_replay() -> tuple[float, float, float]:
    """Read and write bandwidth and compute rate of the replay kernels here."""
    nbytes = 64 * MIB
    space = np.ones(2 * nbytes, dtype=np.uint8)
    words = space.view(np.uint64)
    ops = np.array([[0, nbytes, 0, 0], [nbytes, nbytes, 1, 1]], dtype=np.int64)
    replay.run_kernel(space, words, ops, 0, 2, 0)
    read = nbytes / best_seconds(lambda: replay.run_kernel(space, words, ops, 0, 1, 0), 5)
    write = nbytes / best_seconds(lambda: replay.run_kernel(space, words, ops, 1, 2, 0), 5)
    rounds = 20_000_000
    flops = rounds * replay.FLOPS_PER_ITERATION / best_seconds(
        lambda: replay.run_kernel(space, words, ops, 0, 0, rounds), 3)
    return read, write, flops


def prediction(repeat: int, reference: float) -> None:
    read, write, flops = calibrate_replay()
    print(f"replay kernels here: read {format_bandwidth(read)}, write {format_bandwidth(write)}, "
          f"compute {flops / 1e9:.2f} GFLOP/s")
    graph = training_chain(8, base_nbytes=4 * MIB)
    limit = graph.liveness.peak_nbytes // 2
    plan = run_baseline("first-touch", graph, system_of(read, write, reference, flops * 64)
                        .with_capacity("fast", limit), fast_capacity_nbytes=limit)
    # the run does 1/64 of each kernel's FLOPs, so the prediction's rate is 64x the measured one
    system = system_of(read, write, reference, flops * 64).with_capacity("fast", limit)
    report = execute(plan, graph, system, repeat=repeat, flops_scale=1 / 64)
    print(f"{graph.name} ({len(graph.kernels)} kernels, first-touch at half the peak, FLOPs "
          f"scaled by 1/64): measured {format_seconds(report.measured_step_seconds)}, predicted "
          f"{format_seconds(report.predicted_step_seconds)}, error {report.error:+.1%}; bytes "
          f"{'match' if report.check.matches else 'DIFFER'} the one-pool replay")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    reference = copy_reference(256 * MIB)
    print(f"reference np.copyto of 256 MiB: {format_bandwidth(reference)}")
    sync_moves(256 * MIB, args.repeat, reference)
    overhead(2000, args.repeat)
    prediction(args.repeat, reference)


if __name__ == "__main__":
    main()
