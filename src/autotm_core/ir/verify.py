"""Verification of a graph's invariants, separate from its construction.

:func:`verify_graph` collects every problem it finds, each naming the kernel or
tensor at fault and saying what to change; :func:`check_graph` raises one
:class:`~autotm_core.errors.GraphError` carrying all of them.
"""

from __future__ import annotations

import enum
from collections import Counter

import attrs

from autotm_core.errors import GraphError, summarize_problems
from autotm_core.ir.graph import Graph
from autotm_core.ir.tensor import MAX_TOTAL_NBYTES, TensorKind


class Severity(enum.Enum):
    """How bad a problem is."""

    ERROR = "error"
    """The graph cannot be planned or run."""
    WARNING = "warning"
    """Harmless for planning, but probably not what the author meant."""


@attrs.frozen(slots=True)
class Problem:
    """One thing wrong with a graph."""

    severity: Severity
    """Whether it stops the graph from being used."""
    subject: str
    """What it is about, e.g. ``"kernel 'conv1'"``."""
    message: str
    """What is wrong and what to change."""

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}"


def verify_graph(graph: Graph) -> list[Problem]:
    """Every problem of ``graph``, errors and warnings, in the order found."""
    problems: list[Problem] = []

    def error(subject: object, message: str) -> None:
        problems.append(Problem(Severity.ERROR, str(subject), message))

    if len(graph.tensor_index) != len(graph.tensors):
        for name, count in Counter(t.name for t in graph.tensors).items():
            if count > 1:
                error(f"tensor {name!r}",
                      f"is declared {count} times; give each tensor a unique name")
    if len(graph.kernel_index) != len(graph.kernels):
        for name, count in Counter(k.name for k in graph.kernels).items():
            if count > 1:
                error(f"kernel {name!r}", f"appears {count} times; give each kernel a unique name")

    total = graph.total_nbytes + sum(k.workspace_nbytes for k in graph.kernels)
    if total > MAX_TOTAL_NBYTES:
        error(f"graph {graph.name!r}", f"holds {total:,} bytes of tensors and workspaces, more "
              "than the 2^60 bytes (1 EiB) autotm-core plans; give sizes in bytes")
    kinds = {t.name: t.kind for t in graph.tensors}
    pre_existing = {name for name, kind in kinds.items() if kind.exists_before_step}
    first_writer: dict[str, str] = {}
    for kernel in graph.kernels:
        for name in kernel.outputs:
            if name not in kernel.inputs:
                first_writer.setdefault(name, kernel.name)
    producer: dict[str, int] = {}
    used: set[str] = set()
    for position, kernel in enumerate(graph.kernels):
        inputs, outputs = kernel.inputs, kernel.outputs
        used.update(inputs)
        used.update(outputs)
        subject = _KernelSubject(kernel.name, position)
        if not inputs and not outputs:
            error(subject, "reads and writes nothing; remove it or list its tensors")
        if len(set(inputs)) != len(inputs) or len(set(outputs)) != len(outputs):
            for role, names in (("inputs", inputs), ("outputs", outputs)):
                for name, count in Counter(names).items():
                    if count > 1:
                        error(subject, f"lists tensor {name!r} {count} times among its {role}")
        for name in inputs:
            if name in producer or name in pre_existing:  # the common case, decided at once
                continue
            kind = kinds.get(name)
            if kind is None:
                error(subject, f"reads unknown tensor {name!r}; declare it or fix the name")
            elif name in first_writer:
                error(
                    subject,
                    f"reads tensor {name!r} before kernel {first_writer[name]!r} produces it; "
                    "move the producer earlier",
                )
            else:
                error(
                    subject,
                    f"reads tensor {name!r} ({kind.value}) that no kernel produces; add its "
                    "producer, or make it an input, parameter or constant",
                )
        for name in outputs:
            kind = kinds.get(name)
            if kind is None:
                error(subject, f"writes unknown tensor {name!r}; declare it or fix the name")
            elif name in inputs:
                if kind is TensorKind.CONSTANT:
                    error(
                        subject, f"updates constant {name!r} in place; constants are never written"
                    )
            elif name in pre_existing:
                error(
                    subject,
                    f"writes {kind.value} {name!r} as a new value, but it exists before the step; "
                    "list it among the inputs too to update it in place, or change its kind",
                )
            elif name in producer:
                error(
                    subject,
                    f"writes tensor {name!r}, already produced by kernel "
                    f"{graph.kernels[producer[name]].name!r}; each tensor has one producer "
                    "(list it among the inputs too for an in-place update)",
                )
            else:
                producer[name] = position

    for tensor in graph.tensors:
        if tensor.name not in used:
            problems.append(
                Problem(
                    Severity.WARNING,
                    f"tensor {tensor.name!r}",
                    "is declared but no kernel reads or writes it; remove it",
                )
            )
    return problems


class _KernelSubject:
    """A kernel's name and position, formatted only when a problem is reported."""

    __slots__ = ("name", "position")

    def __init__(self, name: str, position: int) -> None:
        self.name, self.position = name, position

    def __str__(self) -> str:
        return f"kernel {self.name!r} (#{self.position})"


def check_graph(graph: Graph) -> Graph:
    """Return ``graph`` unchanged, or raise :class:`GraphError` listing every error."""
    errors = [str(p) for p in graph.problems if p.severity is Severity.ERROR]
    if errors:
        raise GraphError(summarize_problems(f"graph {graph.name!r}", errors), problems=errors)
    return graph
