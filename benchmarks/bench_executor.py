"""Benchmark the executor: copy bandwidth, per-kernel overhead, measured against predicted time.

1. Synchronous moves: for 1, 16 and 256 MiB, a plan whose one move copies that
   many bytes between two arenas, through the executor, against ``np.copyto``
   between two NumPy arrays of the same size (the single-thread copy bandwidth of
   this machine), both the median of ``--repeat`` copies, measured one after the
   other ``--rounds`` times (at least 3); the median ratio (goal: at least 80%).
   Once with the target at the same place in its page as the source, once 64
   bytes further (as tensors packed at 64-byte offsets usually are).
2. Overhead: a chain of 2,000 tiny kernels (64 bytes in, 64 out, no compute); the
   executor's median step time against the same replay calls in a bare loop, per
   kernel (goal: under 20 microseconds).
3. Overlap: one replay kernel (two 4 MiB reads, one 4 MiB write) with compute
   of half, once and twice its traffic's time; its CPU time (median) over
   ``max(compute, memory)`` of the two parts run alone.
4. Prediction: ``calibrate(quick=True)``, just before each graph, makes this
   machine's memory system (the replay kernels' own read, write and compute
   rates); first-touch and greedy plans of example and zoo graphs at half their
   peak run on it, with each kernel's FLOPs scaled so that the step's compute
   is four times its memory traffic (or as the IR says, if less) and so that
   the two are equal; the measured step time (median) is compared with the
   simulator's, both as wall time and as on-CPU time (the main thread's CPU time
   plus its waits for copies, which other processes taking the cores do not
   lengthen; calibration is timed the same way). The whole table runs
   ``--rounds`` times; a summary gives the distribution of the errors.

    python benchmarks/bench_executor.py [--repeat N] [--rounds N] [--accuracy-only | --moves-only]
    python benchmarks/bench_executor.py --smoke   # each part once, on its smallest input

``--smoke`` is the smallest input: ``--repeat 1 --rounds 1`` with only the 1 MiB moves,
100 tiny kernels and the accuracy of ``example:mlp`` (the overlap as usual): that the
benchmark runs, not figures worth keeping.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from autotm_core.baselines import run_baseline
from autotm_core.executor import ReplayKernels, execute, replay
from autotm_core.ir import GraphBuilder, TensorKind
from autotm_core.memory import CopyLink, MemorySystem, Pool
from autotm_core.plans import Move, Residency, make_plan
from autotm_core.units import format_bandwidth, format_seconds

MIB = 1 << 20


def median_seconds(action, repeat: int) -> float:  # type: ignore[no-untyped-def]
    action()  # untimed, as the executor's warm-up step
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def system_of(read: float, write: float, copy: float, flops: float) -> MemorySystem:
    return MemorySystem(
        name="this-machine", flops_per_second=flops,
        pools=(Pool("fast", None, read, write, numa_node=0), Pool("slow", None, read, write,
                                                                  numa_node=0)),
        links=(CopyLink("fast", "slow", copy, copy), CopyLink("slow", "fast", copy, copy)),
    )


def sync_moves(nbytes: int, repeat: int, rounds: int, *, shift: int) -> None:
    b = GraphBuilder("one-move")
    b.tensor("a", nbytes=nbytes, kind=TensorKind.INPUT)
    b.tensor("out", nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="touch", inputs=[], outputs=["out"], flops=0.0)
    b.kernel("k1", op="use", inputs=["out"], outputs=["out"], flops=0.0)
    b.kernel("k2", op="keep", inputs=["out", "a"], outputs=["out"], flops=0.0)
    graph = b.build()
    system = system_of(1e10, 1e10, 1e10, 1e9)
    plan = make_plan(graph, system, planner="bench/move", residencies=[
        Residency("a", "slow", 0, 2, offset=0), Residency("a", "fast", 2, 2, offset=shift),
        Residency("out", "fast", 0, 2, offset=shift + nbytes)],
        moves=[Move("a", "slow", "fast", 2)])
    source, target = np.ones(nbytes, dtype=np.uint8), np.ones(nbytes, dtype=np.uint8)
    references, moves = [], []
    for _ in range(rounds):
        references.append(nbytes / median_seconds(lambda: np.copyto(target, source), repeat))
        report = execute(plan, graph, system, repeat=repeat,
                     kernels=ReplayKernels(check=False))
        moves.append(report.sync_bytes_per_second)
    ratios = np.array(moves) / np.array(references)
    print(f"sync move of {nbytes // MIB} MiB, target {shift} bytes further in its page: "
          f"{format_bandwidth(float(np.median(moves)))}, "
          f"np.copyto {format_bandwidth(float(np.median(references)))}: ratio median "
          f"{np.median(ratios):.0%} (rounds: {', '.join(f'{r:.0%}' for r in ratios)}; "
          f"goal >= 80%; {load()})", flush=True)


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
    report = execute(plan, graph, system, repeat=repeat,
                     kernels=ReplayKernels(check=False))
    space = np.zeros(64 * (n_kernels + 2), dtype=np.uint8)
    words = space.view(np.uint64)
    ops = np.array([[64 * (k + i), 64, k, i] for k in range(n_kernels) for i in (0, 1)],
                   dtype=np.int64)

    def bare() -> None:
        run = replay.run_kernel
        for k in range(n_kernels):
            run(space, words, ops, 2 * k, 2 * k + 2, 0)

    bare_seconds = median_seconds(bare, repeat)
    per_kernel = (report.measured_step_seconds - bare_seconds) / n_kernels
    print(f"{n_kernels} tiny kernels: executor {format_seconds(report.measured_step_seconds)}, "
          f"bare replay loop {format_seconds(bare_seconds)}: overhead "
          f"{format_seconds(per_kernel)} per kernel (goal < 20 us; {load()})", flush=True)


def overlap(repeat: int) -> None:
    from autotm_core.executor.arena import ArenaRequest, Space

    def cpu_seconds(action) -> float:  # type: ignore[no-untyped-def]
        start = time.thread_time_ns()
        action()
        return (time.thread_time_ns() - start) * 1e-9

    nbytes = 4 * MIB
    empty = np.zeros((0, 4), dtype=np.int64)
    with Space([ArenaRequest("kernel", 3 * nbytes, 0)]) as space:
        memory, words = space.bytes, space.words
        base = space.arenas["kernel"].base
        ops = np.array([[base, nbytes, 0, replay.READ], [base + nbytes, nbytes, 0, replay.READ],
                        [base + 2 * nbytes, nbytes, 7, replay.WRITE]], dtype=np.int64)
        rounds = 200_000
        replay.run_kernel(memory, words, ops, 0, 3, rounds)  # compiled, warm
        ratios: dict[float, list[float]] = {0.5: [], 1.0: [], 2.0: []}
        for _ in range(max(repeat, 5)):
            per_round = cpu_seconds(lambda: replay.run_kernel(memory, words, empty, 0, 0,
                                                              rounds)) / rounds
            traffic = cpu_seconds(lambda: replay.run_kernel(memory, words, ops, 0, 3, 0))
            for share, samples in ratios.items():
                n = int(share * traffic / per_round)
                both = cpu_seconds(lambda n=n: replay.run_kernel(memory, words, ops, 0, 3, n))
                samples.append(both / max(traffic, n * per_round))
    print("one kernel, compute / traffic = " + ", ".join(
        f"{share:g}: {np.median(samples):.2f}x max" for share, samples in ratios.items())
        + f" ({load()})", flush=True)


GRAPHS: tuple[tuple[str, dict[str, int]], ...] = (
    ("example:mlp", {}), ("example:cnn", {}), ("example:chain-25", {}),
    ("zoo:resnet50", {"batch": 1}))
PLANNERS = ("first-touch", "greedy")


def balanced_scale(graph, system) -> float:  # type: ignore[no-untyped-def]
    """The FLOPs scale at which the step's compute equals its memory traffic (roofline rates)."""
    from autotm_core.costs.flops import estimate_flops

    live, pool = graph.liveness, system.pools[0]
    nbytes = live.nbytes[live.kernel_tensors].astype(np.float64)
    memory = ((nbytes * live.kernel_reads).sum() / pool.read_bytes_per_second
              + (nbytes * live.kernel_writes).sum() / pool.write_bytes_per_second
              + 2 * live.workspace_nbytes.sum() / pool.read_bytes_per_second)
    compute = estimate_flops(graph).flops.sum() / system.flops_per_second
    return min(1.0, memory / compute)


def accuracy(repeat: int, rounds: int,
             graphs: tuple[tuple[str, dict[str, int]], ...] = GRAPHS) -> None:
    """Measured against predicted step time on a calibrated system, per graph, planner, FLOPs scale.

    ``flops_scale`` s runs s of each kernel's FLOPs, so the prediction uses a system
    computing 1/s times faster: the roofline sees the same compute time the run does.
    """
    import attrs

    from autotm_core.calibration.calibrate import calibrate, calibrated_system
    from autotm_core.sources import load_source

    print("| round | graph | read, write, compute | planner | FLOPs scale | kernels | measured "
          "(on-CPU) | predicted | error | on-CPU error | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    errors: dict[str, list[tuple[float, float]]] = {"compute-heavy": [], "balanced": []}
    for round_number in range(1, rounds + 1):
        for source, options in graphs:
            graph = load_source(source, **options)
            # calibrated just before each graph: other jobs change this machine's speed
            system = calibrated_system(calibrate(quick=True))
            pool = system.pools[0]
            rates = (f"{format_bandwidth(pool.read_bytes_per_second)}, "
                     f"{format_bandwidth(pool.write_bytes_per_second)}, "
                     f"{system.flops_per_second / 1e9:.2f} GFLOP/s")
            limit = graph.liveness.peak_nbytes // 2
            balanced = balanced_scale(graph, system)
            for scale in sorted({min(1.0, 4 * balanced), balanced}, reverse=True):
                scaled = attrs.evolve(system, flops_per_second=system.flops_per_second / scale)
                scaled = scaled.with_capacity("dram", limit)
                for planner in PLANNERS:
                    plan = run_baseline(planner, graph, scaled, fast_capacity_nbytes=limit)
                    # greedy gives no addresses: its plan runs with the fast pool's arena
                    # laid out by the executor (same residencies, moves and prediction)
                    run_on = scaled
                    if not plan.has_offsets:
                        run_on = scaled.with_capacity("dram", None)
                        plan = attrs.evolve(plan, capacities={**plan.capacities, "dram": None})
                    report = execute(plan, graph, run_on, repeat=repeat, flops_scale=scale)
                    same = "" if report.check is None or report.check.matches else " DIFFER"
                    label = source + "".join(f" {k}={v}" for k, v in options.items())
                    kind = "balanced" if scale == balanced else "compute-heavy"
                    errors[kind].append((report.error, report.on_cpu_error))
                    print(f"| {round_number} | {label} | {rates} | {planner} | {scale:.3g} | "
                          f"{len(graph.kernels)} | "
                          f"{format_seconds(report.measured_step_seconds)} "
                          f"({format_seconds(report.on_cpu_step_seconds)}) | "
                          f"{format_seconds(report.predicted_step_seconds)} | "
                          f"{report.error:+.1%}{same} | {report.on_cpu_error:+.1%} | "
                          f"{os.getloadavg()[0]:.2f} |", flush=True)
    for kind, pairs in errors.items():
        for i, clock in enumerate(("wall", "on-CPU")):
            values = np.array([p[i] for p in pairs])
            print(f"{kind}, {clock} time: {np.sum(np.abs(values) < 0.15)} of {len(values)} within "
                  f"15%; error median {np.median(values):+.1%}, |error| median "
                  f"{np.median(np.abs(values)):.1%}, max {np.max(np.abs(values)):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2,
                        help="times the whole accuracy measurement runs (to show stability)")
    parser.add_argument("--accuracy-only", action="store_true")
    parser.add_argument("--moves-only", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest input: each part once, on the smallest sizes")
    args = parser.parse_args()
    sizes, kernels, graphs = (MIB, 16 * MIB, 256 * MIB), 2000, GRAPHS
    if args.smoke:
        args.repeat, args.rounds = 1, 1
        sizes, kernels, graphs = (MIB,), 100, GRAPHS[:1]
    if not args.accuracy_only:
        for nbytes in sizes:
            for shift in (0, 64):
                sync_moves(nbytes, args.repeat, max(args.rounds, 3), shift=shift)
        if args.moves_only:
            return
        overhead(kernels, args.repeat)
        overlap(args.repeat)
    accuracy(args.repeat, args.rounds, graphs)


if __name__ == "__main__":
    main()
