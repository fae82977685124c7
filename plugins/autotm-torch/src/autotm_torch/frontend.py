"""The ``torch`` frontend: a PyTorch model's training step or inference pass as a graph.

This module imports no torch at import time, so that listing plugins stays
fast and works where torch is missing; the capture modules load on first use.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import TYPE_CHECKING, Any

import attrs

from autotm_core.errors import PluginError, UsageError
from autotm_core.ir import Graph

if TYPE_CHECKING:
    from collections.abc import Mapping

    from autotm_core.executor import KernelRunner
    from autotm_core.plans import Plan

REQUIRED_TORCH = "2.13.0"
"""The torch release the plugin is pinned to."""
INSTALL_HINT = f"pip install torch=={REQUIRED_TORCH}"
MODES = ("train", "inference")
"""Values of the ``mode`` option."""


@attrs.frozen
class Request:
    """What to capture: a model, its example inputs and how its step runs."""

    model: Any
    """The ``torch.nn.Module`` (or a ``torch.compile`` wrapper of one)."""
    example_inputs: Any
    """Its positional (a tensor or tuple) or keyword (a mapping) arguments."""
    loss: Any
    """``loss(output, *targets)``, ``"output"`` (the model's own loss) or ``None``."""
    targets: Any
    """Tensors handed to the loss."""
    optimizer: Any
    """A name, an optimizer, its class or a callable ``params -> optimizer``; ``None``
    for inference."""
    name: str
    """The graph's name."""
    device: Any
    """Device to trace for (``None``: the tensors' own)."""


class TorchFrontend:
    """Captures ``model`` (or a ``package.module:factory`` spec) with fake tensors."""

    name = "torch"
    description = (
        "PyTorch: a training step (forward, loss, backward, optimizer) or an inference pass, "
        "traced with fake tensors; SPEC is package.module:factory"
    )

    def unavailable_reason(self) -> str | None:
        """Why torch cannot be used here (missing, or another release), else ``None``."""
        if importlib.util.find_spec("torch") is None:
            return f"torch is not installed: {INSTALL_HINT}"
        try:
            installed = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return f"torch is importable but not installed as a distribution: {INSTALL_HINT}"
        if installed.split("+", 1)[0] != REQUIRED_TORCH:
            return (
                f"torch {installed} is installed; this plugin needs torch {REQUIRED_TORCH}: "
                + INSTALL_HINT
            )
        return None

    def load(self, source: Any, example_inputs: Any = None, **options: Any) -> Graph:
        """The graph of one step of ``source``.

        ``source`` is a ``torch.nn.Module`` (with ``example_inputs``) or a
        factory spec ``package.module:function`` called with ``batch_size`` and
        the options that are not the frontend's own (see docs/frontends-torch.md).
        The frontend's options: ``loss``, ``targets``, ``optimizer`` (a name: sgd,
        sgd-momentum, adam, adamw; an optimizer class or callable ``params ->
        optimizer``, or an instance), ``mode`` (``"train"`` or ``"inference"``; by
        default a step trains when a loss or an optimizer is given), ``name`` and
        ``device`` (trace for that device, e.g. ``"cuda"``).
        """
        return _graph(self.request(source, example_inputs, **options))

    def kernel_runner(self, spec: str, **options: Any) -> KernelRunner:
        """``run --kernels torch:SPEC``: the real ATen kernels of SPEC, captured again (as
        ``load`` with ``options`` would) when the run starts and checked to be the plan's
        graph (:class:`autotm_torch.plan_run.CapturedKernels`; this makes the frontend an
        :class:`autotm_core.executor.KernelSource`)."""
        from autotm_torch.plan_run import CapturedKernels

        return CapturedKernels(self.request(spec, None, **options))

    def kernel_rates(self) -> Any:
        """``calibrate --kernels torch``: this machine's compute rate, bandwidths and fixed
        time per kernel as the real ATen kernels get them
        (:class:`autotm_torch.calibration.TorchRates`; this makes the frontend an
        ``autotm_core.calibration.rates.RatesSource``)."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise PluginError(f"the torch frontend cannot run: {reason}", hint=INSTALL_HINT)
        from autotm_torch.calibration import TorchRates

        return TorchRates()

    def export_policy(self, plan: Plan, graph: Graph, *, fast_pool: str,
                      path: str) -> Mapping[str, int]:
        """``export-policy``: write the selective activation-checkpointing policy of ``plan``
        for ``graph`` (a training step this frontend captured) to ``path``
        (:func:`autotm_torch.policy.export_policy`; this makes the frontend an
        :class:`autotm_core.plugins.PolicyExporter`)."""
        from autotm_torch.policy import export_policy

        return export_policy(plan, graph, fast_pool=fast_pool, path=path)

    def request(
        self,
        source: Any,
        example_inputs: Any = None,
        *,
        loss: Any = None,
        targets: Any = (),
        optimizer: Any = None,
        mode: str | None = None,
        name: str | None = None,
        device: Any = None,
        batch_size: int | None = None,
        **options: Any,
    ) -> Request:
        """What ``load(source, example_inputs, **options)`` captures (a factory spec called)."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise PluginError(f"the torch frontend cannot run: {reason}", hint=INSTALL_HINT)
        from autotm_torch import factory

        if isinstance(source, str):
            if example_inputs is not None:
                raise UsageError("example_inputs are given by the factory of a spec, not to load()")
            kwargs = {k: factory.parse_value(v) for k, v in options.items()}
            if batch_size is not None:
                kwargs["batch_size"] = int(batch_size)
            made = factory.call(factory.resolve(source), source, kwargs)
            model, example_inputs = made["model"], made["example_inputs"]
            loss = factory.parse_value(loss) if loss is not None else made.get("loss")
            targets = targets if targets else made.get("targets", ())
            optimizer = optimizer if optimizer is not None else made.get("optimizer")
        else:
            if options:
                raise UsageError(
                    f"unknown options {sorted(options)} for a model object",
                    hint="options other than loss, targets, optimizer, mode, name and device go "
                    "to a factory spec only",
                )
            if batch_size is not None:
                raise UsageError(
                    "batch_size applies to a factory spec only",
                    hint="build the example inputs with the batch size you want",
                )
            model = source
            if example_inputs is None:
                raise UsageError(
                    "example_inputs are missing", hint="call load(model, example_inputs, ...)"
                )
        return make_request(model, example_inputs, loss=loss, targets=targets,
                            optimizer=optimizer, mode=mode, name=name, device=device)


def make_request(
    model: Any, example_inputs: Any, *, loss: Any, targets: Any, optimizer: Any,
    mode: str | None, name: str | None, device: Any,
) -> Request:
    """The :class:`Request` of these arguments: ``mode`` (default: ``train`` when a loss or
    an optimizer is given) decides whether loss and optimizer (default ``sgd``) are used."""
    if mode is None:
        mode = "train" if loss is not None or optimizer is not None else "inference"
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint=f"use one of {', '.join(MODES)}")
    if mode == "inference":
        loss, targets, optimizer = None, (), None
    elif optimizer is None:
        optimizer = "sgd"
    what = "training step" if mode == "train" else "inference"
    return Request(model, example_inputs, loss, targets, optimizer,
                   name or f"{_model_name(model)} {what}", device)


def _model_name(model: Any) -> str:
    original = getattr(model, "_orig_mod", None)  # a torch.compile wrapper: name what it wraps
    return type(original if original is not None else model).__name__


def capture_graph(
    model: Any,
    example_inputs: Any,
    *,
    loss: Any = None,
    targets: Any = (),
    optimizer: Any = None,
    mode: str | None = None,
    name: str | None = None,
    device: Any = None,
) -> Graph:
    """The verified graph of one training step or inference pass of ``model``."""
    return _graph(make_request(model, example_inputs, loss=loss, targets=targets,
                               optimizer=optimizer, mode=mode, name=name, device=device))


def _graph(request: Request) -> Graph:
    from autotm_torch.lower import lower

    return lower(trace_request(request), name=request.name)


def trace_request(request: Request) -> Any:
    """The :class:`~autotm_torch.capture.Traced` step that ``request`` names."""
    from autotm_torch.capture import capture

    return capture(request.model, request.example_inputs, loss=request.loss,
                   targets=request.targets, optimizer=request.optimizer, device=request.device)
