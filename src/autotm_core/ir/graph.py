"""The program: kernels in execution order and the tensors they touch."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from autotm_core.errors import GraphError
from autotm_core.ir.kernel import Kernel
from autotm_core.ir.tensor import Tensor

if TYPE_CHECKING:
    from autotm_core.ir.liveness import Liveness
    from autotm_core.ir.recompute import RecomputeFacts
    from autotm_core.ir.verify import Problem


def _to_tuple(value: Iterable[object]) -> tuple[object, ...]:
    return tuple(value)


def _check_graph_name(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, str):
        raise GraphError(f"graph name {value!r} must be a string")


@attrs.frozen(slots=True)
class Graph:
    """A static program: ``kernels`` run in this order and touch ``tensors``.

    Construction checks only the type of each record; call
    :func:`autotm_core.verify_graph` (or :func:`autotm_core.check_graph`) for
    the relations between them. Derived facts (indices, liveness) are computed
    once, on first use, and cached.
    """

    name: str = attrs.field(validator=_check_graph_name)
    """A name for reports."""
    tensors: tuple[Tensor, ...] = attrs.field(converter=_to_tuple)
    """Every tensor of the program."""
    kernels: tuple[Kernel, ...] = attrs.field(converter=_to_tuple)
    """Kernels in execution order."""
    captured_for: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """The kind of device a frontend captured the graph for (``"cpu"``, ``"cuda"``, as torch
    names device types): kernels chosen for it (attention, fused optimizers) may differ on
    another. Empty: not device-specific, or unknown."""

    @functools.cached_property
    def tensor_index(self) -> dict[str, int]:
        """Position of each tensor in :attr:`tensors`, by name (last one wins on a duplicate)."""
        return {tensor.name: i for i, tensor in enumerate(self.tensors)}

    @functools.cached_property
    def kernel_index(self) -> dict[str, int]:
        """Position of each kernel in :attr:`kernels`, by name."""
        return {kernel.name: i for i, kernel in enumerate(self.kernels)}

    def tensor(self, name: str) -> Tensor:
        """The tensor called ``name``."""
        try:
            return self.tensors[self.tensor_index[name]]
        except KeyError:
            raise GraphError(
                f"graph {self.name!r} has no tensor {name!r}",
                hint="check the spelling; 'python -m autotm_core info GRAPH' lists the graph",
            ) from None

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``."""
        try:
            return self.kernels[self.kernel_index[name]]
        except KeyError:
            raise GraphError(
                f"graph {self.name!r} has no kernel {name!r}",
                hint="check the spelling; 'python -m autotm_core info GRAPH' lists the graph",
            ) from None

    @functools.cached_property
    def problems(self) -> tuple[Problem, ...]:
        """Every problem :func:`autotm_core.verify_graph` finds, computed once."""
        from autotm_core.ir.verify import verify_graph

        return tuple(verify_graph(self))

    @functools.cached_property
    def liveness(self) -> Liveness:
        """Producers, users, lifetimes and live bytes; raises :class:`GraphError` if invalid."""
        from autotm_core.ir.liveness import analyse

        return analyse(self)

    @functools.cached_property
    def recompute(self) -> RecomputeFacts:
        """Which kernels may run again and which tensors a plan may recompute (computed once)."""
        from autotm_core.ir.recompute import recompute_facts

        return recompute_facts(self)

    @property
    def total_nbytes(self) -> int:
        """Bytes of all tensors together."""
        return sum(tensor.nbytes for tensor in self.tensors)
