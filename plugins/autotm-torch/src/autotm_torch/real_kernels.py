"""Carry a plan out with the captured ATen ops themselves, writing into the plan's arenas.

Every tensor a kernel touches is rebuilt, at that kernel, as a torch view over
the bytes of its residency: the pool ``plan.configs[k]`` names, at the
residency's offset (the executor's layout: :func:`~autotm_core.executor.plan_layout`),
with the shape, strides, storage offset and dtype the fake trace recorded. So
a tensor moved to another pool is read there afterwards, and the moves are
real copies between arena regions (:func:`~autotm_core.executor.build_program`
says which, when, and what to wait for). Each kernel then runs one of three ways:

- **in place**: an op that writes its arguments (``relu_``, ``add_``, optimizer
  updates) runs on the arena views as it is;
- **out=**: a functional op with an ``out=`` variant (:mod:`autotm_torch.out_variants`)
  writes its results straight into the arena views of its new storages;
- **copied**: any other op (no variant, or the variant refused these outputs)
  runs functionally and its results are copied into the arena; these are counted
  by op in :attr:`RealRun.copied`.

View-only nodes are not run: whoever reads a view rebuilds it from the arena.
A plan's reruns (:class:`autotm_core.plans.Rerun`) run the same op again, the same
way, over the rerun's places: its inputs where they are in the fastest pool at the
rerun's boundary, its outputs into the residency it restores or into scratch
(:attr:`autotm_core.executor.Program.reruns`), counted by op in :attr:`RealRun.reruns`.
A random op (dropout's ``bernoulli_``) draws the same numbers again: the state of the
step device's default generator is kept when the kernel first runs and set again around its
rerun (the numbers drawn after it are not changed by the rerun).
Tensors in a pool on another device than the step's (host memory of a GPU
step) are staged through a temporary on the step's device around the kernel,
and counted (:attr:`RealRun.staged_nbytes`). Where each tensor is, is resolved
once before the run (:mod:`autotm_torch.arena_views`).

The kernels are a :class:`autotm_core.executor.KernelRunner`
(:class:`TorchKernels`): the executor's one loop
(:func:`autotm_core.executor.execute`) does the joins, copies, timing and the
report; every step starts from the same values (the step is compared with one
eager step, not a loop of them).
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt
import torch

from autotm_core.errors import ExecutionError
from autotm_core.executor import (
    ArenaRequest,
    ExecutionReport,
    KernelsDone,
    RunSetup,
    execute,
    seed_of,
)
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan
from autotm_torch import _torch_internals as internals
from autotm_torch.arena_views import (
    TensorRef,
    bind,
    initial_values,
    placeholders,
    ref_of,
    resolve_kernels,
    resolve_reruns,
    snapshots,
    storage_bytes,
    view,
)
from autotm_torch.capture import Traced
from autotm_torch.out_variants import out_variant
from autotm_torch.pools import NumaPools, Pools

PoolsFactory = Callable[[Sequence[ArenaRequest], MemorySystem], Pools]
"""Makes the pools of a run from the layout's arena requests."""


@attrs.frozen
class CapturedStep:
    """A traced step, its graph, and the graph tensor of every storage of the trace."""

    traced: Traced
    """The FX graph and the roles of its placeholders and outputs."""
    graph: Graph
    """Its autotm-core graph (plans are made for this)."""
    storages: Mapping[Any, str]
    """Storage key (of the fake values) -> tensor name in :attr:`graph`; storages of no
    bytes are in no graph and not here."""


def captured_step(traced: Traced, *, name: str) -> CapturedStep:
    """Lower ``traced`` and keep the storage -> tensor map the run needs."""
    from autotm_torch.lower import lower_with_storages

    graph, storages = lower_with_storages(traced, name=name)
    return CapturedStep(traced, graph, storages)


@attrs.frozen
class RealRun:
    """What running a plan with real kernels produced, next to the executor's report."""

    report: ExecutionReport
    """The executor's report: measured against predicted time, copies, arenas, notes."""
    pools: str
    """Which pools ran it (``numa``, ``cuda``, ``cpu-test``)."""
    outputs: tuple[torch.Tensor, ...]
    """The step's returned values (loss, gradients), as CPU copies."""
    final: Mapping[str, torch.Tensor]
    """Value after the step of each placeholder that survives it (by role name), CPU copies."""
    in_place: int
    """Kernels that ran in place on their arguments."""
    out_variant: Mapping[str, int]
    """Op -> kernels that wrote their results into the arena through ``out=``."""
    copied: Mapping[str, int]
    """Op -> kernels whose results were copied into the arena (see the module doc)."""
    staged_nbytes: int
    """Bytes staged to the step's device and back, per step."""
    reruns: Mapping[str, int] = attrs.field(factory=dict)
    """Op -> reruns of the plan that ran it again (not counted among the kernels above)."""


class TorchKernels:
    """The captured step's ATen kernels as the executor's
    :class:`~autotm_core.executor.KernelRunner`, run on ``values`` (one per placeholder,
    only read: their bytes are written into the arenas before every step)."""

    name = "torch"
    hashes_reads = False

    def __init__(
        self, step: CapturedStep, values: Sequence[torch.Tensor], *,
        pools: PoolsFactory = NumaPools,
    ) -> None:
        self.step, self.values, self.pools = step, values, pools
        self.outputs: tuple[torch.Tensor, ...] = ()
        """The step's returned values (loss, gradients) as CPU copies, after :meth:`finish`."""
        self.ends: dict[str, torch.Tensor] = {}
        """Each surviving placeholder's value after the step (by role name), CPU copies,
        after :meth:`finish`."""

    def open(self, setup: RunSetup) -> Pools:
        """Make the pools and resolve every kernel's tensors to regions of them."""
        traced, program = self.step.traced, setup.program
        initial_by_name = initial_values(traced, self.step.storages, self.values)
        by_seed = {seed_of(t.name): t.name for t in setup.graph.tensors}
        mem = self.pools(setup.layout.requests, setup.system)
        try:
            self.mem, self.device = mem, step_device(traced)
            self.kernels = resolve_kernels(traced, setup.graph, self.step.storages, program,
                                           mem.device, self.device, self._region)
            self.reruns = resolve_reruns(traced, setup.graph, self.step.storages, program,
                                         mem.device, self.device, self._region)
            self.rerun_kernel = [ops.kernel for ops in program.reruns]
            self.random = {k for k in self.rerun_kernel
                           if internals.is_random(self.kernels[k].node.target)}
            self.generator_states: dict[int, torch.Tensor] = {}
            self.initial = [(self._region(*row[:3]),
                             storage_bytes(initial_by_name[by_seed[int(row[3])]]))
                            for row in program.initial]
            self.final = {name: self._region(*row[:3])
                          for name, row in zip(program.final_tensors, program.final, strict=True)}
            self.outputs_at, returned = snapshots(traced, setup.graph, self.step.storages,
                                                  self.final)
            self.returned: list[Any] = list(returned)  # refs, then values read out
        except BaseException:
            mem.close()
            raise
        return mem

    def _region(self, arena: int, offset: int, nbytes: int) -> torch.Tensor:
        return self.mem.region(int(arena), int(offset), int(nbytes))

    def begin_step(self, step: int) -> None:
        """Every value the step starts from, written again: each step is the same step."""
        for target, source in self.initial:
            target.copy_(source)

    def run_kernel(self, k: int) -> int:
        """The ATen op of kernel ``k`` on its arena views (0: the loop hashes reads itself)."""
        if k in self.random:
            self.generator_states[k] = _generator_state(self.device)
        _run(self.kernels[k], self.mem, self.device)
        return 0

    def run_rerun(self, rerun: int) -> int:
        """The ATen op of ``program.reruns[rerun]``'s kernel again, over the rerun's places
        (a random op from the generator state it first ran with)."""
        k = self.rerun_kernel[rerun]
        if k not in self.random:
            _run(self.reruns[rerun], self.mem, self.device)
            return 0
        now = _generator_state(self.device)
        _set_generator_state(self.device, self.generator_states[k])
        try:
            _run(self.reruns[rerun], self.mem, self.device)
        finally:
            _set_generator_state(self.device, now)
        return 0

    def after_kernel(self, k: int) -> None:
        """Copy out a returned value whose memory later kernels reuse."""
        for i, ref in self.outputs_at.get(k, ()):
            self.returned[i] = view(self._region(*self.kernels[k].places[ref.name]), ref).clone()

    def finish(
        self, *, digests: npt.NDArray[np.uint64], final_digests: dict[str, int]
    ) -> KernelsDone:
        """Read the results out (:attr:`run`); how the kernels ran, as a note. The comparison
        with eager PyTorch is the caller's (:mod:`autotm_torch.plan_run` makes it the check)."""
        step = self.step
        outputs = tuple(_cpu(view(self.final.get(r.name, _NOTHING), r))
                        if isinstance(r, TensorRef) else _cpu(r) for r in self.returned)
        ends = {}
        for node, role in zip(placeholders(step.traced), step.traced.inputs, strict=True):
            ref = ref_of(step.storages, node.meta["val"])
            if ref.name in self.final:
                ends[role.name] = _cpu(view(self.final[ref.name], ref))
        self.outputs, self.ends = outputs, ends
        listed = ", ".join(f"{op} x{n}" for op, n in self._modes("copied").items()) or "none"
        return KernelsDone(check=None, notes=(
            f"real ATen kernels at this machine's speed ({self.mem.name} pools): "
            f"{sum(self._modes('in place').values())} in place, "
            f"{sum(self._modes('out=').values())} writing into the arenas (out=), copied into "
            f"them: {listed}",))

    def _modes(self, mode: str) -> dict[str, int]:
        """Op -> kernels that ran in ``mode`` (``in place``, ``out=``, ``copied``)."""
        counts = collections.Counter(_op_name(k.node) for k in self.kernels if k.mode == mode)
        return dict(sorted(counts.items()))

    def result(self, report: ExecutionReport) -> RealRun:
        """What the run produced (after :meth:`finish`), with the executor's ``report``."""
        return RealRun(
            report=report, pools=self.mem.name, outputs=self.outputs, final=self.ends,
            in_place=sum(self._modes("in place").values()), out_variant=self._modes("out="),
            copied=self._modes("copied"),
            reruns=dict(sorted(collections.Counter(_op_name(k.node) for k in self.reruns).items())),
            staged_nbytes=sum(k.places[t][2] * (1 + (t in k.written))
                              for k in (*self.kernels, *self.reruns) for t in k.staged),
        )


def run_plan(
    step: CapturedStep,
    plan: Plan,
    system: MemorySystem,
    values: Sequence[torch.Tensor],
    *,
    pools: PoolsFactory = NumaPools,
    repeat: int = 1,
    bind: Mapping[str, int] | None = None,
    arena_nbytes: Mapping[str, int] | None = None,
    fit_machine: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RealRun:
    """Run ``plan`` for ``step`` with real kernels on ``values`` (one per placeholder) through
    the executor's loop (:func:`autotm_core.executor.execute` with :class:`TorchKernels`).

    One untimed warm-up step comes first, then ``repeat`` timed ones; ``progress(done,
    repeat)`` follows each. ``bind``, ``arena_nbytes`` and ``fit_machine`` lay the arenas
    out as :func:`autotm_core.executor.plan_layout` says: by default a preset is fitted to
    this machine (a pool whose NUMA node it lacks bound to one it has, a bounded pool's
    arena only what the plan uses of it, each said in the report's notes).
    """
    kernels = TorchKernels(step, values, pools=pools)
    report = execute(plan, step.graph, system, kernels=kernels, repeat=repeat, bind=bind,
                     arena_nbytes=arena_nbytes, fit_machine=fit_machine, progress=progress)
    return kernels.result(report)


_NOTHING = torch.empty(0, dtype=torch.uint8)
"""The bytes of a storage of no bytes."""


def _cpu(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to("cpu", copy=True)


def _op_name(node: torch.fx.Node) -> str:
    schema = getattr(node.target, "_schema", None)
    return schema.name if schema is not None else str(node.target)


def step_device(traced: Traced) -> torch.device:
    """The device the step was traced for (its first placeholder's)."""
    first = next(iter(placeholders(traced)), None)
    return first.meta["val"].device if first is not None else torch.device("cpu")


def _generator_state(device: torch.device) -> torch.Tensor:
    """The state of ``device``'s default random generator."""
    if device.type == "cpu":
        return torch.get_rng_state()
    return torch.get_device_module(device.type).get_rng_state(device)


def _set_generator_state(device: torch.device, state: torch.Tensor) -> None:
    if device.type == "cpu":
        torch.set_rng_state(state)
    else:
        torch.get_device_module(device.type).set_rng_state(state, device)


def _run(kernel: Any, mem: Pools, device: torch.device) -> None:
    """Run one kernel on its arena views (staging the ones on another device)."""
    staged: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    if kernel.bound is None:
        regions = {}
        for name, place in kernel.places.items():
            regions[name] = mem.region(*place)
            if name in kernel.staged:
                staged[name] = (regions[name], regions[name].to(device))
                regions[name] = staged[name][1]
        args, kwargs, outs = bind(kernel, regions, device)
    else:
        args, kwargs, outs = kernel.bound
    op, node = kernel.node.target, kernel.node
    with _naming(node):
        if kernel.mode == "out=":
            pointers = [o.data_ptr() for o in outs]
            try:
                out_variant(op).call(op, args, kwargs, outs)  # type: ignore[union-attr]
            except RuntimeError:  # the variant refused these outputs: copy from now on
                kernel.mode = "copied"
            else:
                if [o.data_ptr() for o in outs] != pointers:
                    raise ExecutionError(
                        f"kernel {node.name!r} ({_op_name(node)}) moved its output out of the "
                        "arena (resized it)",
                        hint="the captured shapes differ from the real ones; capture again",
                    )
        if kernel.mode == "copied":
            result = op(*args, **kwargs)
            for out, value in zip(outs, internals.tree_leaves(result), strict=False):
                if out is not None:
                    out.copy_(value)
        elif kernel.mode == "in place":
            op(*args, **kwargs)
    for name, (home, temporary) in staged.items():
        if name in kernel.written:
            home.copy_(temporary)


@contextlib.contextmanager
def _naming(node: torch.fx.Node) -> Iterator[None]:
    try:
        yield
    except ExecutionError:
        raise
    except Exception as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExecutionError(
            f"kernel {node.name!r} ({_op_name(node)}) failed on arena tensors: {text}",
            hint="the plan's pools and offsets are used as they are; check the plan with "
            "'python -m autotm_core verify'",
        ) from exc


__all__ = ["CapturedStep", "RealRun", "TorchKernels", "captured_step", "run_plan", "step_device"]
