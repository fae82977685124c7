"""What address assignment returns: the plan with offsets, and how well each pool packed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from autotm_core.errors import UsageError
from autotm_core.plans.model import Plan


def _non_negative(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"{type(instance).__name__}.{attribute.name} is {value!r}; give bytes >= 0"
        )


def _to_ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def _to_names(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class PoolPacking:
    """How the residencies of one capacity-limited pool were packed into addresses."""

    pool: str = attrs.field(validator=attrs.validators.instance_of(str))
    """Pool name."""
    capacity_nbytes: int = attrs.field(validator=_non_negative)
    """The capacity the plan holds this pool to."""
    height_nbytes: int = attrs.field(validator=_non_negative)
    """Highest end address of the packing (aligned sizes): the arena it needs."""
    lower_bound_nbytes: int = attrs.field(validator=_non_negative)
    """Most aligned bytes present at any one time: no packing needs less."""
    order: str = attrs.field(validator=attrs.validators.instance_of(str))
    """The placement order that gave this height (see ``ORDERS``)."""
    items: int = attrs.field(validator=_non_negative)
    """Residencies packed, plus kernel workspaces in the fastest pool."""
    pairs: int = attrs.field(default=0, validator=_non_negative)
    """Tensors held here both from the step's first kernel and at its last by two residencies,
    placed at one offset (the next step finds them where this one leaves them)."""

    @property
    def fragmentation_nbytes(self) -> int:
        """Bytes the packing wastes over the bound: ``height - lower bound``."""
        return self.height_nbytes - self.lower_bound_nbytes

    @property
    def fits(self) -> bool:
        """Whether the packing lies inside the capacity."""
        return self.height_nbytes <= self.capacity_nbytes


@attrs.frozen(slots=True)
class Overflow:
    """Where the packing of one pool reaches past its capacity."""

    pool: str = attrs.field(validator=attrs.validators.instance_of(str))
    """Pool name."""
    kernels: tuple[int, ...] = attrs.field(converter=_to_ints)
    """Kernel positions (ascending) at which something placed reaches past the capacity.

    A synchronous copy before kernel ``k`` counts at ``k``."""
    excess_nbytes: tuple[int, ...] = attrs.field(converter=_to_ints)
    """For each of :attr:`kernels`, how far past the capacity the highest placed item there ends."""
    split_tensors: tuple[str, ...] = attrs.field(default=(), converter=_to_names)
    """Tensors that exist before the step and survive it, held here at the step's start and,
    after leaving the pool, again at its end, whose one shared offset (the next step finds
    them where this one leaves them) lies past the capacity: no address was free during
    both stays. Held outside this pool at the step's start they need no shared offset."""

    def __attrs_post_init__(self) -> None:
        if len(self.kernels) != len(self.excess_nbytes) or not self.kernels:
            raise UsageError(
                f"overflow of pool {self.pool!r}: {len(self.kernels)} kernels but "
                f"{len(self.excess_nbytes)} excesses; give one excess per kernel, at least one"
            )

    @property
    def overflow_nbytes(self) -> int:
        """The largest excess over all :attr:`kernels`."""
        return max(self.excess_nbytes)


def _to_packings(value: Iterable[PoolPacking]) -> tuple[PoolPacking, ...]:
    return tuple(value)


def _to_overflows(value: Iterable[Overflow]) -> tuple[Overflow, ...]:
    return tuple(value)


@attrs.frozen(slots=True)
class OffsetAssignment:
    """The result of :func:`autotm_core.addresses.assign_offsets`."""

    plan: Plan
    """The plan with an offset on every residency of every bounded pool when :attr:`fits`;
    otherwise the input plan with every offset removed."""
    pools: tuple[PoolPacking, ...] = attrs.field(converter=_to_packings)
    """One packing per capacity-limited pool, in the memory system's order."""
    overflows: tuple[Overflow, ...] = attrs.field(converter=_to_overflows)
    """One entry per pool whose packing does not fit; empty when :attr:`fits`."""
    alignment_nbytes: int
    """Every size was rounded up to a multiple of this (offsets are multiples of it)."""
    workspace_offsets: Mapping[int, int] = attrs.field(factory=dict)
    """Offset of each kernel's workspace in the fastest pool, by kernel position (kernels with a
    workspace only; empty when the fastest pool is unbounded or the packing does not fit)."""

    @property
    def fits(self) -> bool:
        """Whether every bounded pool's packing lies inside its capacity."""
        return not self.overflows

    @property
    def fragmentation_nbytes(self) -> int:
        """Bytes wasted over the lower bounds, summed over the pools."""
        return sum(p.fragmentation_nbytes for p in self.pools)

    def pool(self, name: str) -> PoolPacking:
        """The packing of pool ``name``."""
        for packing in self.pools:
            if packing.pool == name:
                return packing
        raise UsageError(
            f"no packing for pool {name!r}; packed pools: {', '.join(p.pool for p in self.pools)}",
            hint="only pools with a capacity in plan.capacities are packed",
        )
