"""Record a forward pass on a tape, then emit its backward kernels and the optimizer update.

A :class:`Tape` wraps :class:`~autotm_core.ir.GraphBuilder`. Layer functions
(:mod:`autotm_core.zoo.layers`) call :meth:`Tape.record` once per forward
kernel, saying which tensors the backward kernels read (what a framework saves
for backward) and which gradients they write. :meth:`Tape.finish` then walks the
tape in reverse and emits, for each step whose output reaches the loss, its
backward kernels; a tensor that receives gradient from several users (a
residual branch, a concatenated feature map, a tied embedding) gets its
contributions summed by ``add`` kernels. Finally one update kernel per
parameter applies the optimizer (SGD, SGD with momentum or Adam, whose state
tensors are real ``OPTIMIZER_STATE`` tensors).

Networks say which module each forward kernel is called from, as a torch module path
(``h.3.attn``, ``layer1.0.conv1``, ``features.12``), by recording inside
:meth:`Tape.module` blocks; a kernel's :attr:`~autotm_core.ir.Kernel.module` is where
:func:`~autotm_core.ir.layer_of` finds its layer. Backward kernels carry their forward
kernel's module; the loss, gradient sums and the update carry none (``""``).
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import Iterable, Iterator, Sequence

import attrs

from autotm_core.costs.ops import flops_per_element
from autotm_core.errors import GraphError, UsageError
from autotm_core.ir import DTYPE_NBYTES, Graph, GraphBuilder, TensorKind


def _ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class Value:
    """A tensor as a layer sees it: its name and logical shape."""

    name: str
    """Name of the tensor in the graph."""
    shape: tuple[int, ...] = attrs.field(converter=_ints)
    """Logical shape (a view may give an existing tensor another shape)."""

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


class Optimizer(enum.Enum):
    """The update applied to every parameter after the backward pass."""

    SGD = "sgd"
    """Plain SGD, ``p -= lr * g`` (what AutoTM's nGraph graphs used): no state, 2 flops/element."""
    MOMENTUM = "momentum"
    """SGD with momentum: one state tensor per parameter, 4 flops/element."""
    ADAM = "adam"
    """Adam: two state tensors (first and second moments) per parameter, 12 flops/element."""


_OPTIMIZER_FLOPS_PER_ELEMENT = {Optimizer.SGD: 2, Optimizer.MOMENTUM: 4, Optimizer.ADAM: 12}
"""The zoo's own counts of its update kernels: the op table counts ``sgd_momentum`` at 3 and
``adam`` at 10 per element (see docs/zoo.md, "FLOPs per kernel")."""
LOSS_BACKWARD_FLOPS_PER_LOGIT = 3.0
"""The zoo's count of ``cross_entropy_backward`` (softmax minus one-hot, scaled): the op table
counts it at 5 per element of the logits (see docs/zoo.md, "FLOPs per kernel")."""

_OPTIMIZER_STATES = {Optimizer.SGD: (), Optimizer.MOMENTUM: ("momentum",),
                     Optimizer.ADAM: ("adam_m", "adam_v")}


def parse_optimizer(value: Optimizer | str) -> Optimizer:
    """``"adam"`` -> :attr:`Optimizer.ADAM`; a clear error for anything else."""
    try:
        return Optimizer(value)
    except ValueError:
        raise UsageError(
            f"unknown optimizer {value!r}",
            hint="choose one of " + ", ".join(o.value for o in Optimizer),
        ) from None


def check_positive(network: str, **values: int) -> None:
    """Raise a :class:`UsageError` naming the first option that is not a positive integer."""
    for option, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"network {network!r}: {option}={value!r} must be a positive integer",
                             hint=f"e.g. {option}=1")


@attrs.frozen(slots=True)
class Grad:
    """One backward kernel of a recorded step."""

    suffix: str
    """Appended to the step's name to name the kernel, e.g. ``"backward_data"``."""
    op: str
    """Operation kind, e.g. ``"conv2d_backward_data"``."""
    reads: tuple[str, ...] = attrs.field(converter=_names)
    """Tensors it reads besides the gradient of the step's output (what was saved)."""
    wrt: tuple[str, ...] = attrs.field(converter=_names)
    """Tensors whose gradient it writes; those that need none are dropped."""
    flops: float
    """Floating-point operations when it writes every gradient of :attr:`wrt`."""


@attrs.frozen(slots=True)
class _Step:
    name: str
    output: str
    grads: tuple[Grad, ...]
    passthrough: tuple[str, ...]
    module: str


class Tape:
    """Builds one training step: forward steps recorded, backward and update derived."""

    def __init__(self, name: str, *, dtype: str = "float32") -> None:
        if dtype not in DTYPE_NBYTES or not dtype.startswith(("float", "bfloat")):
            floats = ", ".join(d for d in DTYPE_NBYTES if d.startswith(("float", "bfloat")))
            raise UsageError(f"network {name!r}: dtype {dtype!r} is not a floating-point type",
                             hint=f"choose one of {floats}")
        self.name = name
        self.dtype = dtype
        self._b = GraphBuilder(name)
        self._steps: list[_Step] = []
        self._params: list[Value] = []
        self._shape: dict[str, tuple[int, ...]] = {}
        self._dtype: dict[str, str] = {}
        self._requires_grad: set[str] = set()
        self._loss_grad: tuple[str, str] | None = None
        self._accumulations = 0
        self._scope: list[str] = []

    # -- modules --------------------------------------------------------------------

    @contextlib.contextmanager
    def module(self, path: str) -> Iterator[None]:
        """Forward kernels recorded inside are called from module ``path``, relative to the
        enclosing block's: ``with t.module("h.3"): with t.module("attn"): ...`` records them
        under ``"h.3.attn"``."""
        self._scope.append(path)
        try:
            yield
        finally:
            self._scope.pop()

    @property
    def current_module(self) -> str:
        """The module path forward kernels are recorded under now (``""``: none)."""
        return ".".join(part for part in self._scope if part)

    # -- declarations -------------------------------------------------------------

    def _declare(self, name: str, shape: Sequence[int], dtype: str, kind: TensorKind) -> Value:
        shape = tuple(int(d) for d in shape)
        if any(d <= 0 for d in shape):
            raise UsageError(
                f"network {self.name!r}: tensor {name!r} would have shape {shape}",
                hint="the input is too small for this network; use a larger image or sequence",
            )
        self._b.tensor(name, shape=shape, dtype=dtype, kind=kind)
        self._shape[name] = shape
        self._dtype[name] = dtype
        return Value(name, shape)

    def input(self, name: str, shape: Sequence[int], *, dtype: str | None = None) -> Value:
        """A tensor fed to the step (images, labels, token ids); it needs no gradient."""
        return self._declare(name, shape, dtype or self.dtype, TensorKind.INPUT)

    def constant(self, name: str, shape: Sequence[int], *, dtype: str) -> Value:
        """A tensor fixed for the whole program (e.g. position indices)."""
        return self._declare(name, shape, dtype, TensorKind.CONSTANT)

    def parameter(self, name: str, shape: Sequence[int]) -> Value:
        """A trainable weight, updated by the optimizer at the end of the step."""
        value = self._declare(name, shape, self.dtype, TensorKind.PARAMETER)
        self._params.append(value)
        self._requires_grad.add(name)
        return value

    @property
    def parameters(self) -> tuple[Value, ...]:
        """Every parameter declared so far, in order."""
        return tuple(self._params)

    def parameter_named(self, name: str) -> Value:
        """The parameter called ``name`` (to tie it to a second layer)."""
        for p in self._params:
            if p.name == name:
                return p
        raise GraphError(f"network {self.name!r} has no parameter {name!r}")

    # -- forward --------------------------------------------------------------------

    def record(
        self,
        name: str,
        *,
        op: str,
        inputs: Sequence[Value],
        shape: Sequence[int],
        flops: float,
        params: Sequence[Value] = (),
        grads: Sequence[Grad] = (),
        passthrough: Sequence[str] = (),
        saved: Sequence[tuple[str, Sequence[int], str]] = (),
    ) -> Value:
        """Append a forward kernel called ``name`` whose main output is the tensor ``name``.

        ``saved`` declares extra outputs kept for backward only (statistics, masks):
        ``(suffix, shape, dtype)``, named ``name + "." + suffix``. ``passthrough``
        lists tensors that receive the output's gradient unchanged (add, views).
        """
        out = self._declare(name, shape, self.dtype, TensorKind.ACTIVATION)
        extra = [self._declare(f"{name}.{suffix}", s, d, TensorKind.ACTIVATION).name
                 for suffix, s, d in saved]
        reads = list(dict.fromkeys([v.name for v in inputs] + [p.name for p in params]))
        module = self.current_module
        self._b.kernel(name, op=op, inputs=reads, outputs=[out.name, *extra], flops=float(flops),
                       module=module)
        if any(r in self._requires_grad for r in reads):
            self._requires_grad.add(name)
            self._steps.append(_Step(name, name, tuple(grads), tuple(passthrough), module))
        return out

    def loss(self, logits: Value, labels: Value, *, name: str = "loss") -> Value:
        """Mean cross-entropy of ``logits`` (classes last) against integer ``labels``.

        Forward ``cross_entropy`` (log-softmax + NLL, the op table's 5 flops/logit)
        writes the scalar OUTPUT; ``cross_entropy_backward`` reads the logits and
        labels and writes the logits' gradient (:data:`LOSS_BACKWARD_FLOPS_PER_LOGIT`).
        It starts the backward pass.
        """
        if self._loss_grad is not None:
            raise GraphError(f"network {self.name!r}: the loss is already defined")
        out = self._declare(name, (), self.dtype, TensorKind.OUTPUT)
        self._b.kernel(name, op="cross_entropy", inputs=[logits.name, labels.name],
                       outputs=[out.name], flops=flops_per_element("cross_entropy") * logits.numel)
        grad = self._grad_tensor(logits.name, f"{logits.name}.grad")
        self._b.kernel(f"{name}.backward", op="cross_entropy_backward",
                       inputs=[logits.name, labels.name], outputs=[grad],
                       flops=LOSS_BACKWARD_FLOPS_PER_LOGIT * logits.numel)
        self._loss_grad = (logits.name, grad)
        return out

    # -- backward and update -----------------------------------------------------------

    def _grad_tensor(self, of: str, name: str) -> str:
        return self._b.tensor(name, shape=self._shape[of], dtype=self._dtype[of],
                              kind=TensorKind.GRADIENT)

    def _accumulate(self, grads: dict[str, str], of: str, grad: str) -> None:
        """Add ``grad`` to the gradient of ``of`` collected so far (an ``add`` kernel if any)."""
        old = grads.get(of)
        if old is None:
            grads[of] = grad
            return
        self._accumulations += 1
        total = self._grad_tensor(of, f"{of}.grad_sum{self._accumulations}")
        self._b.kernel(f"{of}.grad_add{self._accumulations}", op="add", inputs=[old, grad],
                       outputs=[total],
                       flops=flops_per_element("add") * math.prod(self._shape[of]))
        grads[of] = total

    def finish(self, *, optimizer: Optimizer | str = Optimizer.MOMENTUM) -> Graph:
        """Emit the backward pass and the optimizer update, then build and verify the graph."""
        optimizer = parse_optimizer(optimizer)
        if self._loss_grad is None:
            raise GraphError(f"network {self.name!r}: no loss was defined",
                             hint="call Tape.loss(logits, labels) before finish()")
        logits, first = self._loss_grad
        grads: dict[str, str] = {logits: first}
        for step in reversed(self._steps):
            dy = grads.pop(step.output, None)
            if dy is None:
                raise GraphError(f"network {self.name!r}: the output of {step.name!r} "
                                 "does not reach the loss", hint="remove the unused layer")
            for of in step.passthrough:
                self._accumulate(grads, of, dy)
            for g in step.grads:
                wrt = [w for w in g.wrt if w in self._requires_grad]
                if not wrt:
                    continue
                outs = [self._grad_tensor(w, f"{w}.grad.{step.name}" if w in grads
                                          else f"{w}.grad") for w in wrt]
                flops = g.flops * len(wrt) / len(g.wrt) if len(wrt) < len(g.wrt) else g.flops
                self._b.kernel(f"{step.name}.{g.suffix}", op=g.op, inputs=[dy, *g.reads],
                               outputs=outs, flops=float(flops), module=step.module)
                for w, out in zip(wrt, outs, strict=True):
                    self._accumulate(grads, w, out)
        self._update(grads, optimizer)
        return self._b.build()

    def _update(self, grads: dict[str, str], optimizer: Optimizer) -> None:
        """One kernel per parameter, in declaration order, updating it and its state in place."""
        per_element = _OPTIMIZER_FLOPS_PER_ELEMENT[optimizer]
        for p in self._params:
            grad = grads.get(p.name)
            if grad is None:
                raise GraphError(f"network {self.name!r}: parameter {p.name!r} gets no gradient",
                                 hint="use the parameter in a layer that reaches the loss")
            states = [self._b.tensor(f"{p.name}.{s}", shape=p.shape, dtype=self.dtype,
                                     kind=TensorKind.OPTIMIZER_STATE)
                      for s in _OPTIMIZER_STATES[optimizer]]
            self._b.kernel(f"{p.name}.{optimizer.value}", op=f"{optimizer.value}_update",
                           inputs=[p.name, grad, *states], outputs=[p.name, *states],
                           flops=float(per_element * p.numel))
