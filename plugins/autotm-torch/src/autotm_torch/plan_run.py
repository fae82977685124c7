"""``run PLAN --graph G --system S --kernels torch:SPEC``: a captured step's plan, run for real.

autotm-core's ``run`` command hands a frontend's ``run_plan`` hook the spec, the
plan and the predictions (docs/torch-execution.md). Here the spec is captured
again; the capture must be the graph the plan was made for. The model's real
parameters, a real optimizer of the same kind warmed up as the capture assumes,
and the example inputs then run the plan with the real ATen kernels
(:func:`autotm_torch.real_kernels.run_plan`) in arenas fitted to this machine;
the result is compared with one eager PyTorch step from the same state, and
measured time is reported next to the predicted, kernel by kernel, in the
executor's own :class:`~autotm_core.executor.ExecutionReport`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import ExecutionReport
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan
from autotm_torch import _torch_internals as internals
from autotm_torch.frontend import Request, trace_request
from autotm_torch.gpu_pools import TorchPools
from autotm_torch.inputs import example_inputs, output_tensors
from autotm_torch.optimizers import build_optimizer
from autotm_torch.pools import NumaPools
from autotm_torch.real_kernels import RealRun, captured_step, run_plan, step_device
from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up


def run_captured(
    request: Request, *, plan: Plan, graph: Graph, system: MemorySystem, repeat: int,
    bind: Mapping[str, int] | None, arena_nbytes: Mapping[str, int] | None,
    predicted_seconds: Any, predicted_step_seconds: float,
    progress: Callable[[int, int], None] | None = None,
) -> ExecutionReport:
    """Capture ``request`` again, check it is ``graph``, run ``plan`` with real kernels and
    report measured against the predicted times given (see the module doc)."""
    traced = trace_request(request)
    step = captured_step(traced, name=graph.name)
    _check_same(step.graph, graph, request)
    model = _real(request.model)
    optimizer = None
    if request.optimizer is not None:
        params = list(model.parameters())
        optimizer = build_optimizer(request.optimizer, fake_of={p: p for p in params},
                                    fake_params=params, capturable=False)
        warm_up(optimizer)
    values = step_values(traced, model=model, inputs=request.example_inputs,
                         targets=_targets(request.targets), optimizer=optimizer)
    device = step_device(traced)  # a CUDA capture runs in device memory, whatever the values
    pools = (functools.partial(TorchPools, device=device) if device.type == "cuda"
             else NumaPools)
    run = run_plan(step, plan, system, clone_values(values), pools=pools, repeat=repeat,
                   bind=bind, arena_nbytes=arena_nbytes, progress=progress)
    notes = [*run.notes, _modes(run), _compare(run, traced, request, model, optimizer)]
    if run.pools == "numa" and len({a.node for a in run.arenas}) == 1:
        notes.append(f"every arena is on NUMA node {run.arenas[0].node}, so the pools are the "
                     "same memory here: the plan's moves cost copies but cannot show a faster "
                     "pool")
    measured = run.kernel_seconds + run.sync_seconds + run.wait_seconds
    return ExecutionReport(
        graph=graph.name, system=system.name, planner=plan.planner, repeat=repeat,
        kernel_names=run.kernel_names, pools=run.arenas, notes=tuple(notes),
        same_memory=len({a.node for a in run.arenas}) == 1, kernel_seconds=run.kernel_seconds,
        sync_seconds=run.sync_seconds, wait_seconds=run.wait_seconds,
        measured_seconds=measured, step_seconds=run.step_seconds,
        step_on_cpu_seconds=run.step_on_cpu_seconds,
        predicted_seconds=np.asarray(predicted_seconds, dtype=np.float64),
        predicted_step_seconds=float(predicted_step_seconds), sync_nbytes=run.sync_nbytes,
        async_nbytes=run.async_nbytes, async_copy_seconds=0.0,
        digests=np.zeros(len(run.kernel_names), dtype=np.uint64),
        final_digests={name: _digest(value) for name, value in run.final.items()}, check=None,
    )


def _check_same(captured: Graph, given: Graph, request: Request) -> None:
    """One :class:`ExecutionError` naming the first difference of the two graphs."""
    difference = None
    if len(captured.tensors) != len(given.tensors) or len(captured.kernels) != len(given.kernels):
        difference = (f"{len(captured.kernels)} kernels and {len(captured.tensors)} tensors "
                      f"against {len(given.kernels)} and {len(given.tensors)}")
    else:
        for mine, theirs in zip(captured.tensors, given.tensors, strict=True):
            if (mine.name, mine.nbytes, mine.kind) != (theirs.name, theirs.nbytes, theirs.kind):
                difference = f"tensor {mine.name!r} ({mine.nbytes} bytes) against {theirs.name!r}"
                break
        for mine, theirs in zip(captured.kernels, given.kernels, strict=True):
            if difference is None and (mine.name, mine.op, mine.inputs, mine.outputs) != (
                    theirs.name, theirs.op, theirs.inputs, theirs.outputs):
                difference = f"kernel {mine.name!r} ({mine.op}) against {theirs.name!r}"
    if difference is not None:
        raise ExecutionError(
            f"the step captured for the torch kernels is not graph {given.name!r}: {difference}",
            hint="give --kernels, --batch-size and --option exactly as to 'import' for this graph",
        )


def _real(model: Any) -> torch.nn.Module:
    model = internals.compiled_original(model) or model
    if any(t.is_meta for t in (*model.parameters(), *model.buffers())):
        raise ExecutionError(
            f"the parameters of {type(model).__name__} are on the meta device: they have no "
            "values to run with",
            hint="make the factory build the model on a real device to run its plan",
        )
    return model


def _targets(targets: Any) -> tuple[torch.Tensor, ...]:
    return (targets,) if isinstance(targets, torch.Tensor) else tuple(targets)


def _modes(run: RealRun) -> str:
    copied = ", ".join(f"{op} x{n}" for op, n in run.copied.items()) or "none"
    return (f"real ATen kernels at this machine's speed: {run.in_place} in place, "
            f"{sum(run.out_variant.values())} writing into the arenas (out=), copied into "
            f"them: {copied}")


def _compare(run: RealRun, traced: Any, request: Request, model: torch.nn.Module,
             optimizer: torch.optim.Optimizer | None) -> str:
    """One eager PyTorch step (or pass) from the same state, compared with the run."""
    if optimizer is None:
        batch = example_inputs(request.example_inputs)
        args, kwargs = batch.arguments(batch.tensors)
        was_training = model.training
        model.eval()
        with torch.no_grad():
            expected = dict(enumerate(output_tensors(model(*args, **kwargs))))
        model.train(was_training)
        got = dict(enumerate(run.outputs))
    else:
        before = {r.name for r in traced.inputs if not r.name.startswith(("input:", "target:"))}
        reference = eager_step(model, request.example_inputs, loss=request.loss,
                               targets=_targets(request.targets), optimizer=optimizer)
        roles = [r.name for r in traced.outputs]
        got = {**dict(zip(roles, run.outputs, strict=True)), **run.final}
        expected = {"output:loss": reference.loss, **reference.grads}
        after = step_values(traced, model=model, inputs=request.example_inputs,
                            targets=_targets(request.targets), optimizer=optimizer)
        expected.update((r.name, v) for r, v in zip(traced.inputs, after, strict=True)
                        if r.name in before)
    worst, where = 0.0, ""
    for name, value in expected.items():
        if name not in got:
            continue
        difference = float((got[name].double() - value.detach().cpu().double()).abs().max()
                           ) if value.numel() else 0.0
        if difference > worst:
            worst, where = difference, str(name)
    equal = all(name not in got or torch.allclose(got[name], value.detach().cpu(), rtol=1.3e-6,
                                                   atol=1e-5) for name, value in expected.items())
    what = "step" if optimizer is not None else "inference pass"
    if equal:
        return f"the results equal one eager PyTorch {what} (largest difference {worst:.2g})"
    return (f"the results DIFFER from one eager PyTorch {what}: largest difference {worst:.3g} "
            f"in {where} (random ops such as dropout draw other numbers op by op)")


def _digest(value: torch.Tensor) -> int:
    data = value.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")
