"""Memory systems: ordered pools, fastest first, and the copy bandwidth between them."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import attrs
import numpy as np

from autotm_core.errors import MemorySystemError


def _positive(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MemorySystemError(f"{_who(instance)}: {attribute.name} {value!r} is not a number")
    if value <= 0:
        raise MemorySystemError(
            f"{_who(instance)}: {attribute.name} is {value!r}; it must be greater than zero",
            hint="bandwidths are in bytes per second, e.g. 1e11 for 100 GB/s",
        )


def _non_negative(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MemorySystemError(f"{_who(instance)}: {attribute.name} {value!r} is not a number")
    if value < 0:
        raise MemorySystemError(f"{_who(instance)}: {attribute.name} is {value!r}; it must be >= 0")


def _capacity(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MemorySystemError(
            f"{_who(instance)}: capacity {value!r} must be a whole number of bytes >= 0, "
            "or null for unbounded"
        )


def _optional_int(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise MemorySystemError(
            f"{_who(instance)}: {attribute.name} {value!r} must be an integer >= 0"
        )


def _pool_name(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise MemorySystemError(
            f"{type(instance).__name__.lower()} {attribute.name} {value!r} "
            "must be a non-empty pool name"
        )


def _who(instance: object) -> str:
    if isinstance(instance, Pool):
        return f"pool {instance.name!r}"
    if isinstance(instance, CopyLink):
        return f"copy {instance.source!r} -> {instance.target!r}"
    return type(instance).__name__


@attrs.frozen(slots=True)
class Pool:
    """One kind of memory."""

    name: str = attrs.field(validator=_pool_name)
    """Unique name, e.g. ``"dram"``, ``"pmm"``, ``"hbm"``."""
    capacity_nbytes: int | None = attrs.field(validator=_capacity)
    """Bytes available to tensors; ``None`` when unbounded."""
    read_bytes_per_second: float = attrs.field(validator=_positive)
    """Bandwidth of a kernel reading from this pool."""
    write_bytes_per_second: float = attrs.field(validator=_positive)
    """Bandwidth of a kernel writing to this pool."""
    latency_seconds: float = attrs.field(default=0.0, validator=_non_negative)
    """Load latency, charged once per tensor a kernel touches here."""
    numa_node: int | None = attrs.field(default=None, validator=_optional_int)
    """NUMA node that backs it, where it is one (the executor binds to it)."""
    device: str | None = attrs.field(default=None)
    """Device that holds it, e.g. ``"cuda:0"`` or ``"host-pinned"``."""

    @property
    def bounded(self) -> bool:
        """Whether its capacity is limited."""
        return self.capacity_nbytes is not None


@attrs.frozen(slots=True)
class CopyLink:
    """Copy bandwidth from one pool to another."""

    source: str = attrs.field(validator=_pool_name)
    """Pool copied from."""
    target: str = attrs.field(validator=_pool_name)
    """Pool copied to."""
    sync_bytes_per_second: float = attrs.field(validator=_positive)
    """Bandwidth of a blocking copy (nothing else runs)."""
    async_bytes_per_second: float = attrs.field(validator=_positive)
    """Bandwidth of a copy overlapping kernels (and of the kernels' own traffic on this link,
    when :attr:`kernel_traffic`)."""
    duplex: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Whether overlapping copies on this link have a channel of their own (e.g. one
    direction of PCIe with its own copy engine); otherwise they share one engine with
    every other link that is not duplex, and their times add up during a kernel."""
    kernel_traffic: bool = attrs.field(default=False,
                                       validator=attrs.validators.instance_of(bool))
    """Whether kernels' own accesses cross this link too, sharing it with the copies: for
    a link into the fastest pool (where kernels run), their reads of tensors used from
    ``source``; for a link out of it, their writes of tensors used in ``target`` (a GPU
    reading host memory over PCIe)."""


def _to_pools(value: Iterable[Pool]) -> tuple[Pool, ...]:
    return tuple(value)


def _to_links(value: Iterable[CopyLink]) -> tuple[CopyLink, ...]:
    return tuple(value)


def derived_link(source: Pool, target: Pool) -> CopyLink:
    """The copy a system gets when it names none.

    It is as fast as reading one pool and writing the other.
    """
    bandwidth = min(source.read_bytes_per_second, target.write_bytes_per_second)
    return CopyLink(source.name, target.name, bandwidth, bandwidth)


@attrs.frozen(slots=True)
class MemorySystem:
    """Pools ordered fastest first, and how fast data moves between them.

    Copy links not given are derived by :func:`derived_link`.
    """

    name: str
    """A name for reports."""
    pools: tuple[Pool, ...] = attrs.field(converter=_to_pools)
    """Two or more pools, fastest first."""
    links: tuple[CopyLink, ...] = attrs.field(converter=_to_links, default=())
    """Copy bandwidths between pools, one per ordered pair at most."""
    flops_per_second: float = attrs.field(default=1e12, validator=_positive)
    """Sustained compute rate of the processor using these pools (for analytic costs)."""
    description: str = ""
    """What machine this is."""
    source: str = ""
    """Where its numbers come from."""
    kernel_overhead_seconds: float = attrs.field(default=0.0, validator=_non_negative)
    """Seconds every kernel takes besides its compute and memory traffic: a framework's
    dispatch and the executor's loop around each kernel (``calibrate --kernels torch``
    measures it for PyTorch's kernels on this machine; 0 for a published machine)."""

    def __attrs_post_init__(self) -> None:
        if len(self.pools) < 2:
            raise MemorySystemError(
                f"memory system {self.name!r} has {len(self.pools)} pool(s); it needs at least two",
                hint="list the pools fastest first, e.g. dram then pmm",
            )
        names = [pool.name for pool in self.pools]
        for name in names:
            if names.count(name) > 1:
                raise MemorySystemError(
                    f"memory system {self.name!r} names pool {name!r} twice; "
                    "pool names must be unique"
                )
        seen: set[tuple[str, str]] = set()
        for link in self.links:
            for end in (link.source, link.target):
                if end not in names:
                    raise MemorySystemError(
                        f"copy {link.source!r} -> {link.target!r} names unknown pool {end!r}",
                        hint=f"the pools are {', '.join(names)}",
                    )
            if link.source == link.target:
                raise MemorySystemError(f"copy {link.source!r} -> {link.target!r} goes nowhere")
            if (link.source, link.target) in seen:
                raise MemorySystemError(
                    f"copy {link.source!r} -> {link.target!r} is given twice; keep one"
                )
            seen.add((link.source, link.target))

    @functools.cached_property
    def _pool_index(self) -> dict[str, int]:
        return {pool.name: i for i, pool in enumerate(self.pools)}

    @functools.cached_property
    def _links(self) -> dict[tuple[int, int], CopyLink]:
        given = {(link.source, link.target): link for link in self.links}
        table = {}
        for i, a in enumerate(self.pools):
            for j, b in enumerate(self.pools):
                if i != j:
                    table[i, j] = given.get((a.name, b.name)) or derived_link(a, b)
        return table

    @property
    def fast(self) -> Pool:
        """The fastest pool (the first)."""
        return self.pools[0]

    @property
    def slow(self) -> Pool:
        """The slowest pool (the last)."""
        return self.pools[-1]

    def pool_index(self, name: str) -> int:
        """Position of the pool called ``name``."""
        try:
            return self._pool_index[name]
        except KeyError:
            raise MemorySystemError(
                f"memory system {self.name!r} has no pool {name!r}",
                hint=f"the pools are {', '.join(p.name for p in self.pools)}",
            ) from None

    def pool(self, name: str) -> Pool:
        """The pool called ``name``."""
        return self.pools[self.pool_index(name)]

    def link(self, source: int, target: int) -> CopyLink:
        """Copy link between two pool positions (given or derived)."""
        return self._links[source, target]

    @functools.cached_property
    def link_channels(self) -> np.ndarray:
        """``(n_pools, n_pools)`` channel of each link's overlapping copies: 0 is the one
        engine every link that is not :attr:`CopyLink.duplex` shares, each duplex link has
        its own from 1 up; -1 on the diagonal. During a kernel, each channel's copies (and
        kernel traffic) take their times one after the other; channels run side by side."""
        n = len(self.pools)
        out = np.full((n, n), -1, dtype=np.int64)
        channel = 0
        for s in range(n):
            for t in range(n):
                if s != t:
                    if self._links[s, t].duplex:
                        channel += 1
                        out[s, t] = channel
                    else:
                        out[s, t] = 0
        return out

    def kernel_traffic_seconds_per_byte(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pool ``p``: seconds per byte a kernel's read (first array) or write (second)
        of a tensor used from ``p`` keeps the link between ``p`` and the fastest pool busy
        (0 where that link carries no kernel traffic, and for the fastest pool itself)."""
        n = len(self.pools)
        reads, writes = np.zeros(n), np.zeros(n)
        for p in range(1, n):
            into, out = self._links[p, 0], self._links[0, p]
            if into.kernel_traffic:
                reads[p] = 1.0 / into.async_bytes_per_second
            if out.kernel_traffic:
                writes[p] = 1.0 / out.async_bytes_per_second
        return reads, writes

    def copy_seconds(self, nbytes: int, source: int, target: int, *, asynchronous: bool) -> float:
        """Time to copy ``nbytes`` from pool position ``source`` to ``target``."""
        link = self._links[source, target]
        bandwidth = link.async_bytes_per_second if asynchronous else link.sync_bytes_per_second
        return nbytes / bandwidth

    def with_capacity(self, pool: str, capacity_nbytes: int | None) -> MemorySystem:
        """A copy of this system whose pool ``pool`` holds ``capacity_nbytes``."""
        index = self.pool_index(pool)
        pools = list(self.pools)
        pools[index] = attrs.evolve(pools[index], capacity_nbytes=capacity_nbytes)
        return attrs.evolve(self, pools=tuple(pools))
