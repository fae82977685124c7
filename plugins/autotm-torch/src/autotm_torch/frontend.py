"""The ``torch`` frontend: a PyTorch model's training step or inference pass as a graph.

This module imports no torch at import time, so that listing plugins stays
fast and works where torch is missing; the capture modules load on first use.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Any

from autotm_core.errors import UsageError
from autotm_core.ir import Graph

REQUIRED_TORCH = "2.13.0"
"""The torch release the plugin is pinned to."""
INSTALL_HINT = f"pip install torch=={REQUIRED_TORCH}"
MODES = ("train", "inference")
"""Values of the ``mode`` option."""


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

    def load(
        self,
        source: Any,
        example_inputs: Any = None,
        *,
        loss: Any = None,
        targets: Any = (),
        optimizer: Any = None,
        mode: str | None = None,
        name: str | None = None,
        batch_size: int | None = None,
        **options: Any,
    ) -> Graph:
        """The graph of one step of ``source``.

        ``source`` is a ``torch.nn.Module`` (with ``example_inputs``) or a
        factory spec ``package.module:function`` called with ``batch_size`` and
        ``options`` (see docs/frontends-torch.md). ``mode`` is ``"train"`` or
        ``"inference"``; by default a step trains when a loss or an optimizer is
        given. ``optimizer`` is a name (sgd, sgd-momentum, adam, adamw), an
        optimizer class or callable ``params -> optimizer``, or an instance.
        """
        reason = self.unavailable_reason()
        if reason is not None:
            from autotm_core.errors import PluginError

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
            loss = loss if loss is not None else made.get("loss")
            targets = targets if targets else made.get("targets", ())
            optimizer = optimizer if optimizer is not None else made.get("optimizer")
        else:
            if options:
                raise UsageError(
                    f"unknown options {sorted(options)} for a model object",
                    hint="options other than loss, targets, optimizer, mode and name go to a "
                    "factory spec only",
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
        return capture_graph(
            model, example_inputs, loss=loss, targets=targets, optimizer=optimizer,
            mode=mode, name=name,
        )


def capture_graph(
    model: Any,
    example_inputs: Any,
    *,
    loss: Any = None,
    targets: Any = (),
    optimizer: Any = None,
    mode: str | None = None,
    name: str | None = None,
) -> Graph:
    """The verified graph of one training step or inference pass of ``model``."""
    from autotm_torch.capture import capture
    from autotm_torch.lower import lower

    if mode is None:
        mode = "train" if loss is not None or optimizer is not None else "inference"
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}", hint=f"use one of {', '.join(MODES)}")
    if mode == "inference":
        loss, targets, optimizer = None, (), None
    elif optimizer is None:
        optimizer = "sgd"
    traced = capture(model, example_inputs, loss=loss, targets=targets, optimizer=optimizer)
    what = "training step" if mode == "train" else "inference"
    return lower(traced, name=name or f"{type(model).__name__} {what}")
