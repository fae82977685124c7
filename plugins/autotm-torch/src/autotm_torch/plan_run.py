"""``run PLAN --graph G --system S --kernels torch:SPEC``: a captured step's plan, run for real.

autotm-core's ``run`` command asks the torch frontend (a
:class:`autotm_core.executor.KernelSource`) for the kernels of SPEC
(:meth:`autotm_torch.frontend.TorchFrontend.kernel_runner`), a
:class:`CapturedKernels`, and runs the plan with them through the executor's one
loop (docs/torch-execution.md). When the run starts the spec is captured again;
the capture must be the graph the plan was made for. The model's real
parameters, a real optimizer of the same kind warmed up as the capture assumes,
and the example inputs then run the plan with the real ATen kernels
(:class:`autotm_torch.real_kernels.TorchKernels`) in arenas fitted to this
machine as the executor decides; the result is compared with one eager PyTorch
step from the same state, and that comparison is the report's check.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import KernelsDone, ResultCheck, RunSetup
from autotm_core.ir import Graph
from autotm_torch import _torch_internals as internals
from autotm_torch.frontend import Request, trace_request
from autotm_torch.gpu_pools import TorchPools
from autotm_torch.inputs import example_inputs, output_tensors
from autotm_torch.optimizers import build_optimizer
from autotm_torch.pools import NumaPools, Pools
from autotm_torch.real_kernels import TorchKernels, captured_step, step_device
from autotm_torch.step_values import clone_values, eager_step, step_values, warm_up

RTOL, ATOL = 1.3e-6, 1e-5
"""Tolerances of the comparison with eager PyTorch (``torch.allclose``)."""


class CapturedKernels:
    """The real kernels of a request captured again when the run starts
    (:class:`~autotm_torch.real_kernels.TorchKernels` of the capture), checked against
    one eager PyTorch step (see the module doc)."""

    name = TorchKernels.name
    hashes_reads = TorchKernels.hashes_reads

    def __init__(self, request: Request) -> None:
        self.request = request

    def open(self, setup: RunSetup) -> Pools:
        """Capture the request, check it is the plan's graph, take the real values."""
        request = self.request
        traced = trace_request(request)
        step = captured_step(traced, name=setup.graph.name)
        _check_same(step.graph, setup.graph, request)
        self.model = _real(request.model)
        self.optimizer = None
        if request.optimizer is not None:
            params = list(self.model.parameters())
            self.optimizer = build_optimizer(request.optimizer, fake_of={p: p for p in params},
                                             fake_params=params, capturable=False)
            warm_up(self.optimizer)
        values = clone_values(step_values(
            traced, model=self.model, inputs=request.example_inputs,
            targets=_targets(request.targets), optimizer=self.optimizer))
        device = step_device(traced)  # a CUDA capture runs in device memory, whatever the values
        pools = (functools.partial(TorchPools, device=device) if device.type == "cuda"
                 else NumaPools)
        self.kernels = TorchKernels(step, values, pools=pools)
        return self.kernels.open(setup)

    def begin_step(self, step: int) -> None:
        """The captured values, written again."""
        self.kernels.begin_step(step)

    def run_kernel(self, k: int) -> int:
        """The ATen op of kernel ``k``."""
        return self.kernels.run_kernel(k)

    def run_rerun(self, rerun: int) -> int:
        """The ATen op of a rerun's kernel again."""
        return self.kernels.run_rerun(rerun)

    def after_kernel(self, k: int) -> None:
        """A returned value read out."""
        self.kernels.after_kernel(k)

    def finish(
        self, *, digests: npt.NDArray[np.uint64], final_digests: dict[str, int]
    ) -> KernelsDone:
        """The results read out, compared with one eager PyTorch step (or pass)."""
        done = self.kernels.finish(digests=digests, final_digests=final_digests)
        return KernelsDone(check=self._compare(), notes=done.notes)

    def _compare(self) -> ResultCheck:
        """One eager PyTorch step (or pass) from the same state, compared with the run."""
        request, model, optimizer, traced = (self.request, self.model, self.optimizer,
                                             self.kernels.step.traced)
        if optimizer is None:
            batch = example_inputs(request.example_inputs)
            args, kwargs = batch.arguments(batch.tensors)
            was_training = model.training
            model.eval()
            with torch.no_grad():
                expected = {str(i): v for i, v in enumerate(output_tensors(model(*args,
                                                                                 **kwargs)))}
            model.train(was_training)
            got = {str(i): v for i, v in enumerate(self.kernels.outputs)}
        else:
            before = {r.name for r in traced.inputs
                      if not r.name.startswith(("input:", "target:"))}
            reference = eager_step(model, request.example_inputs, loss=request.loss,
                                   targets=_targets(request.targets), optimizer=optimizer)
            roles = [r.name for r in traced.outputs]
            got = {**dict(zip(roles, self.kernels.outputs, strict=True)), **self.kernels.ends}
            expected = {"output:loss": reference.loss, **reference.grads}
            after = step_values(traced, model=model, inputs=request.example_inputs,
                                targets=_targets(request.targets), optimizer=optimizer)
            expected.update((r.name, v) for r, v in zip(traced.inputs, after, strict=True)
                            if r.name in before)
        worst, where, differ = 0.0, "", []
        for name, value in expected.items():
            if name not in got:
                continue
            value = value.detach().cpu()
            difference = (float((got[name].double() - value.double()).abs().max())
                          if value.numel() else 0.0)
            if difference > worst:
                worst, where = difference, name
            if not torch.allclose(got[name], value, rtol=RTOL, atol=ATOL):
                differ.append(name)
        what = "step" if optimizer is not None else "inference pass"
        detail = f"largest difference {worst:.3g}" + (f" in {where}" if differ else "")
        if differ:
            detail += "; random ops such as dropout draw other numbers op by op"
        return ResultCheck(reference=f"one eager PyTorch {what}", matches=not differ,
                           tensors=tuple(sorted(differ)), detail=detail)


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
        for kernel, other in zip(captured.kernels, given.kernels, strict=True):
            if difference is None and (kernel.name, kernel.op, kernel.inputs, kernel.outputs) != (
                    other.name, other.op, other.inputs, other.outputs):
                difference = f"kernel {kernel.name!r} ({kernel.op}) against {other.name!r}"
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
