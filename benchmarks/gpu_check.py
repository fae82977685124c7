"""GPU check: profile, plan and execute a small ResNet training step under a device-memory limit.

Run on a machine with a CUDA GPU (one short run, a few minutes)::

    python benchmarks/gpu_check.py [--batch 256] [--width 64] [--ratio 0.5] [--repeat 5]

1. Captures one training step (SGD with momentum) of a small ResNet on the GPU
   (fake tensors), and measures host<->device copy bandwidth with pinned memory.
2. *Profiles*: runs the all-in-device plan with the real ATen kernels in a device
   arena (CUDA-event time per kernel, median of the repetitions). Costs: a
   kernel takes its measured time, plus, for each tensor it finds in host
   memory, staging it over PCIe (both ways when written) at the measured rate.
3. *Plans* with the device pool limited to ``ratio`` x the step's peak live
   bytes: greedy (synchronous moves) and, when time allows, the ILP (synchronous).
4. *Executes* each plan with real kernels: device arena + pinned host arena,
   synchronous copies on the compute stream, asynchronous ones on a side stream.
   Prints measured against predicted (simulator) step time, the slowdown against
   all-in-device, and the largest difference of loss and gradients from eager PyTorch.
5. *Recomputes*: plans again with recomputation (the synchronous ILP, ``--recompute``),
   exports the plan as a selective activation-checkpointing policy
   (``autotm_torch.policy``) and runs forward and backward passes of the model eagerly:
   without checkpointing, checkpointed with the policy, and checkpointed without one.
   Prints the bytes each forward pass leaves for the backward pass (live storages its ops
   made) against the plan's kept bytes and what the policy saves (selective checkpointing
   caches every output of an op it saves: batch-norm's normalised output too, since an op
   that updates running statistics must not be replayed), the device's peak over the pass
   (``torch.cuda.max_memory_allocated``), the time of a pass and the largest difference
   of loss and gradients from the uncheckpointed pass.
6. *Recomputes dropout*: an MLP with dropout (batch 32 x ``batch``), captured on the device (one
   ``native_dropout`` kernel per dropout on a GPU), planned with recomputation at
   ``ratio`` x its peak (again with host copies 20x slower when that plan reruns no
   random kernel); the plan and the all-in-device one are executed from the same
   seed. Prints how many dropout kernels the plan reruns and the largest difference of
   loss, gradients and updated parameters between the two runs (0 when each rerun draws
   the first run's numbers: the executor restores the generator's state around it).

Without a GPU it says so and exits with status 0; without PyTorch or the autotm-torch
plugin it says which to install and exits with status 2. ``--cpu-test`` runs the whole
check on the CPU instead (the smallest input: ``--cpu-test --batch 2 --width 4 --repeat 1
--copy-mib 4``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def _model(width: int):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.short = nn.Sequential()
            if stride != 1 or c_in != c_out:
                self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                           nn.BatchNorm2d(c_out))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.short(x))

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(width), nn.ReLU())
            self.layers = nn.Sequential(Block(width, width, 1), Block(width, width, 1),
                                        Block(width, 2 * width, 2), Block(2 * width, 2 * width, 1),
                                        Block(2 * width, 4 * width, 2))
            self.fc = nn.Linear(4 * width, 10)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet()


def _bandwidths(device: str, nbytes: int) -> dict[str, float]:
    """Bytes per second of pinned host->device, device->host and device->device copies."""
    import torch

    host = torch.zeros(nbytes, dtype=torch.uint8, pin_memory=device == "cuda")
    dev = torch.zeros(nbytes, dtype=torch.uint8, device=device)
    dev2 = torch.zeros(nbytes, dtype=torch.uint8, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    found = {}
    for name, (src, dst) in {"h2d": (host, dev), "d2h": (dev, host), "d2d": (dev, dev2)}.items():
        dst.copy_(src)
        sync()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            sync()
            times.append(time.perf_counter() - start)
        found[name] = nbytes / float(np.median(times))
    return found


def _system(rates: dict[str, float], fast_nbytes: int | None):
    from autotm_core.memory import CopyLink, MemorySystem, Pool

    return MemorySystem(
        name="gpu-measured", flops_per_second=50e12,
        description="this GPU's device memory + pinned host memory, copy rates measured",
        pools=(Pool("hbm", fast_nbytes, rates["d2d"], rates["d2d"], device="cuda:0"),
               Pool("host", None, rates["h2d"], rates["d2h"], device="host-pinned")),
        links=(CopyLink("host", "hbm", rates["h2d"], rates["h2d"]),
               CopyLink("hbm", "host", rates["d2h"], rates["d2h"])),
    )


def _costs(graph, kernel_seconds, rates):
    """Measured all-in-device time per kernel, plus staging each host-resident tensor."""
    from autotm_core.costs.model import SeparableCosts

    live = graph.liveness
    n_entries = len(live.kernel_tensors)
    coefficients = np.zeros((n_entries, 1, 2))
    nbytes = live.nbytes[live.kernel_tensors]
    coefficients[:, 0, 1] = (nbytes / rates["h2d"]) * live.kernel_reads + \
        (nbytes / rates["d2h"]) * live.kernel_writes
    return SeparableCosts(n_pools=2, kernel_ptr=live.kernel_ptr,
                          constants=np.asarray(kernel_seconds, dtype=np.float64)[:, None],
                          coefficients=coefficients)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--ratio", type=float, default=0.5, help="device limit / peak live bytes")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ilp-seconds", type=float, default=90.0)
    parser.add_argument("--copy-mib", type=int, default=256,
                        help="MiB copied to measure each copy bandwidth (default 256)")
    parser.add_argument("--cpu-test", action="store_true",
                        help="run the whole check on the CPU (GPU pools' test mode), to try it")
    args = parser.parse_args(argv)
    import functools
    import importlib.util

    missing = [name for name, module in (("torch", "torch"), ("autotm-torch", "autotm_torch"))
               if importlib.util.find_spec(module) is None]
    if missing:
        print(f"gpu_check: needs {' and '.join(missing)}: pip install -e plugins/autotm-torch "
              "(it brings PyTorch)", file=sys.stderr)
        return 2
    import torch

    device = "cpu" if args.cpu_test else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print(f"gpu_check: no GPU here (torch {torch.__version__}, CUDA not available); "
              "nothing to measure.")
        return 0
    from autotm_torch.capture import capture
    from autotm_torch.gpu_pools import TorchPools
    from autotm_torch.plan_addresses import fit_addresses
    from autotm_torch.real_kernels import captured_step, run_plan
    from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up

    from autotm_core.baselines import all_fast
    from autotm_core.planning import PlanSettings, Problem
    from autotm_core.planning import plan as plan_point
    from autotm_core.simulation import simulate
    from autotm_core.units import format_bytes

    started = time.perf_counter()
    torch.manual_seed(0)
    model = _model(args.width).to(device)
    x = torch.randn(args.batch, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    pools = functools.partial(TorchPools, device=device)
    loss = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    warm_up(opt)
    traced = capture(model, (x,), loss=loss, targets=(y,), optimizer=opt)
    step = captured_step(traced, name=f"resnet batch {args.batch} width {args.width}")
    graph = step.graph
    values = step_values(traced, model=model, inputs=(x,), targets=(y,), optimizer=opt)
    initial = clone_values(values)
    peak = graph.liveness.peak_nbytes
    rates = _bandwidths(device, args.copy_mib << 20)
    where = torch.cuda.get_device_name() if device == "cuda" else "CPU test mode"
    print(f"{where}: {len(graph.kernels)} kernels, peak live "
          f"{format_bytes(peak)}; copies h2d {rates['h2d'] / 1e9:.1f} GB/s, d2h "
          f"{rates['d2h'] / 1e9:.1f} GB/s, d2d {rates['d2d'] / 1e9:.0f} GB/s "
          f"(set-up {time.perf_counter() - started:.0f} s)")

    roomy = _system(rates, 2 * peak + (64 << 20))
    ideal, roomy = fit_addresses(all_fast(graph, roomy), graph, roomy)
    base = run_plan(step, ideal, roomy, initial, pools=pools, repeat=args.repeat)
    costs = _costs(graph, base.report.kernel_seconds, rates)
    limit = int(args.ratio * peak)
    limited = _system(rates, limit)
    plans = {"all-in-device": (ideal, roomy)}
    problem = Problem(graph=graph, system=limited, costs=costs)
    for name, planner in (("greedy", "greedy"), ("ilp-sync", "synchronous")):
        try:  # planned as every command plans a point; addresses from the torch plugin
            outcome = plan_point(problem, planner, PlanSettings(
                mode="exact", addresses=False, time_limit_seconds=args.ilp_seconds))
            plans[name] = fit_addresses(outcome.plan, graph, limited)
        except Exception as exc:  # the check goes on with the other plans
            print(f"{name}: no plan ({type(exc).__name__}: {str(exc).splitlines()[0]})")

    eager = eager_step(model, (x,), loss=loss, targets=(y,), optimizer=opt)
    after = {r.name: v.detach().to("cpu") for r, v in zip(traced.inputs, values, strict=True)}
    rows = []
    ideal_seconds = None
    copied_ops: dict[str, int] = {}
    for name, (plan, system) in plans.items():
        run = base if name == "all-in-device" else run_plan(
            step, plan, system, initial, pools=pools, repeat=args.repeat)
        measured = run.report.measured_step_seconds
        ideal_seconds = ideal_seconds or measured
        predicted = float(simulate(plan, graph, system, costs).step_seconds)
        diffs = [float((run.outputs[0] - eager.loss.cpu()).abs().max())]
        diffs += [float((g - eager.grads[r.name].cpu()).abs().max())
                  for r, g in zip(traced.outputs[1:], run.outputs[1:], strict=True)]
        diffs += [float((v - after[k]).abs().max()) for k, v in run.final.items()]
        fast = plan.capacities.get("hbm")
        rows.append((name, fast, measured, predicted, measured / ideal_seconds, max(diffs),
                     run.report.sync_nbytes + run.report.async_nbytes, run.staged_nbytes,
                     sum(run.copied.values())))
        copied_ops = run.copied
    print(f"\ndevice limit {format_bytes(limit)} ({args.ratio:.2f} x peak); "
          f"median of {args.repeat} steps; total {time.perf_counter() - started:.0f} s")
    print(f"{'plan':14} {'hbm arena':>10} {'measured':>10} {'predicted':>10} {'error':>7} "
          f"{'slowdown':>8} {'moved':>10} {'staged':>10} {'copied ops':>10} {'max |diff|':>10}")
    for name, fast, measured, predicted, slowdown, diff, moved, staged, copied in rows:
        error = (predicted - measured) / measured
        print(f"{name:14} {format_bytes(fast or 0):>10} {measured * 1e3:>8.2f}ms "
              f"{predicted * 1e3:>8.2f}ms {error:>+7.1%} {slowdown:>7.2f}x "
              f"{format_bytes(moved):>10} {format_bytes(staged):>10} {copied:>10} {diff:>10.2e}")
    print("ops whose results were copied into the arena (no usable out= variant): "
          + (", ".join(f"{op} x{n}" for op, n in copied_ops.items()) or "none"))
    try:
        recomputing = plan_point(problem, "synchronous", PlanSettings(
            mode="exact", addresses=False, recompute=True,
            time_limit_seconds=args.ilp_seconds)).plan
    except Exception as exc:  # the check has measured the rest already
        print(f"ilp-recompute: no plan ({type(exc).__name__}: {str(exc).splitlines()[0]})")
        return 0
    _policy_check(model, x, y, loss, graph, recomputing, repeat=args.repeat, device=device)
    _dropout_check(device, rates, args, pools)
    return 0


def _dropout_check(device: str, rates: dict[str, float], args: argparse.Namespace,
                   pools) -> None:
    """Step 6: a plan rerunning dropout, executed, against the all-in-device plan."""
    import torch
    from autotm_torch.capture import capture
    from autotm_torch.plan_addresses import fit_addresses
    from autotm_torch.real_kernels import captured_step, run_plan
    from autotm_torch.step_values import clone_values, step_values, warm_up

    from autotm_core.baselines import all_fast
    from autotm_core.ir import reruns_safely
    from autotm_core.planning import PlanSettings, load_problem
    from autotm_core.planning import plan as plan_point

    torch.manual_seed(0)
    width = 16 * args.width
    model = torch.nn.Sequential(
        torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Dropout(0.5),
        torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Dropout(0.5),
        torch.nn.Linear(width, 10)).to(device)
    batch = 32 * args.batch  # activations, not parameters, fill the device
    x = torch.randn(batch, 64, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    loss = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    warm_up(opt)
    traced = capture(model, (x,), loss=loss, targets=(y,), optimizer=opt)
    step = captured_step(traced, name="dropout mlp")
    graph = step.graph
    values = clone_values(step_values(traced, model=model, inputs=(x,), targets=(y,),
                                      optimizer=opt))
    peak = graph.liveness.peak_nbytes
    roomy = _system(rates, 2 * peak + (64 << 20))
    # at the measured rates, then with host copies 20x slower (recomputing pays there)
    for slower in (1, 20):
        limited = _system({**rates, "h2d": rates["h2d"] / slower, "d2h": rates["d2h"] / slower},
                          int(args.ratio * peak))
        try:
            outcome = plan_point(load_problem(graph, limited), "synchronous", PlanSettings(
                mode="exact", addresses=False, recompute=True,
                time_limit_seconds=args.ilp_seconds))
        except Exception as exc:  # the check has measured the rest already
            print(f"dropout: no plan ({type(exc).__name__}: {str(exc).splitlines()[0]})")
            return
        chosen, random = outcome.plan, [r for r in outcome.plan.reruns
                                        if not reruns_safely(graph.kernels[r.kernel].op)]
        how = (f"the ILP's plan at {args.ratio:.2f} x peak (host copies {slower}x slower than "
               "measured)")
        if random:
            break
    else:  # no plan chose to: a random valid plan with reruns (the verifier's property tests')
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.plans.random_reruns import random_plan_with_reruns

        limited = _system(rates, None)
        for seed in range(20):
            chosen = random_plan_with_reruns(graph, limited, seed, drop_rate=0.9)
            random = [r for r in chosen.reruns
                      if not reruns_safely(graph.kernels[r.kernel].op)]
            how = f"a random valid plan (seed {seed}; the ILP's rerun no random kernel)"
            if random:
                break
    runs = {}
    for name, (plan, system) in (("all-in-device", fit_addresses(all_fast(graph, roomy), graph,
                                                                 roomy)),
                                 ("recompute", fit_addresses(chosen, graph, limited))):
        torch.manual_seed(1)
        runs[name] = run_plan(step, plan, system, values, pools=pools, repeat=1)
    a, b = runs["all-in-device"], runs["recompute"]
    diffs = [float((got - want).abs().max()) for got, want in zip(b.outputs, a.outputs,
                                                                  strict=True)]
    diffs += [float((b.final[k] - v).abs().max()) for k, v in a.final.items()]
    ops = sorted({graph.kernels[r.kernel].op for r in random})
    print(f"\ndropout: {len(graph.kernels)} kernels; {how} reruns "
          f"{len(chosen.reruns)} kernels, "
          f"{len(random)} of them random ({', '.join(ops) or 'none'}); "
          f"{b.report.measured_step_seconds * 1e3:.3f} ms a step; max |diff| against the "
          f"all-in-device run from the same seed {max(diffs):.2e}")


def _policy_check(model, x, y, loss_fn, graph, plan, *, repeat: int, device: str) -> None:
    """Step 5: the recompute plan as a checkpoint policy, against eager PyTorch."""
    import torch
    from autotm_torch.policy import checkpoint_policy

    from autotm_core.units import format_bytes

    policy = checkpoint_policy(plan, graph, fast_pool="hbm")
    counts = ", ".join(f"{d} {n}" for d, n in policy.counts.items())
    print(f"\nilp-recompute: {len(plan.reruns)} reruns; policy {counts}; "
          f"{len(policy.unexpressed)} reruns no policy says; the plan keeps "
          f"{format_bytes(policy.kept_nbytes)} for the backward pass, recomputes "
          f"{format_bytes(policy.recomputed_nbytes)}; the policy saves "
          f"{format_bytes(policy.saved_nbytes)} (every output of an op it saves)")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    others = [*model.parameters(), *model.buffers(), x, y]
    rows = []
    reference = None
    with policy.attach(model) as policy_fn:
        for name, context_fn in (("eager", None), ("policy", policy_fn.context_fn),
                                 ("checkpoint", None)):
            forward = _pass(model, loss_fn, x, y, checkpointed=name != "eager",
                            context_fn=context_fn)
            left, peak, result = _one_pass(model, forward, others, device)
            seconds = []
            for _ in range(repeat):
                model.zero_grad(set_to_none=True)
                sync()
                start = time.perf_counter()
                forward().backward()
                sync()
                seconds.append(time.perf_counter() - start)
            reference = reference or result
            diff = max(float((got - want).abs().max())
                       for got, want in zip(result, reference, strict=True))
            unmatched = sum(policy_fn.unmatched.values()) if name == "policy" else 0
            rows.append((name, left, peak, float(np.median(seconds)), diff, unmatched))
    print(f"{'pass':12} {'left for backward':>18} {'device peak':>12} {'time':>10} "
          f"{'max |diff|':>10} {'unmatched':>9}")
    for name, left, peak, seconds, diff, unmatched in rows:
        shown = format_bytes(peak) if peak is not None else "n/a"
        print(f"{name:12} {format_bytes(left):>18} {shown:>12} {seconds * 1e3:>8.2f}ms "
              f"{diff:>10.2e} {unmatched:>9}")


def _pass(model, loss_fn, x, y, *, checkpointed: bool, context_fn):
    """A forward pass returning the loss: plain, or checkpointed as one region (with the
    policy's contexts when ``context_fn`` is given)."""
    from torch.utils.checkpoint import checkpoint

    def step(inputs, targets):
        return loss_fn(model(inputs), targets)

    if not checkpointed:
        return lambda: step(x, y)
    kwargs = {"context_fn": context_fn} if context_fn is not None else {}
    return lambda: checkpoint(step, x, y, use_reentrant=False, **kwargs)


def _one_pass(model, forward, others, device: str):
    """One forward and backward pass: the bytes of the storages the forward pass's ops made
    that are alive when it returns (the loss left out), the device's peak over the pass
    above what was allocated before it (CUDA only), and the loss and gradients."""
    import torch
    from autotm_torch.replay_eager import StorageTracker
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    def key(tensor):
        from torch.multiprocessing.reductions import StorageWeakRef

        return StorageWeakRef(tensor.untyped_storage())

    kept = {key(t) for t in others}

    class Made(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.tracker = StorageTracker()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.tracker.add([t for t in tree_leaves(out)
                              if isinstance(t, torch.Tensor) and key(t) not in kept])
            return out

    model.zero_grad(set_to_none=True)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    made = Made()
    with made:
        loss = forward()
    left = made.tracker.live_nbytes() - loss.untyped_storage().nbytes()
    loss.backward()
    peak = torch.cuda.max_memory_allocated() - before if cuda else None
    result = [loss.detach().float().cpu()] + [p.grad.detach().float().cpu()
                                               for p in model.parameters()]
    return left, peak, result


if __name__ == "__main__":
    sys.exit(main())
