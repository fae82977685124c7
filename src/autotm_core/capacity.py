"""Capacity limits a planner works under: :class:`Limit`, parsed once from what the user wrote.

A limit is written one of three ways, the same on the command line, in a sweep
and in a grid file:

- a size, ``"16GiB"``, ``"512MiB"`` or a number of bytes: the fastest pool holds that;
- a slow:fast ratio (PMM:DRAM as the paper writes it; host:HBM on a GPU), ``"4:1"``: the
  fastest pool holds the graph's peak live bytes / (ratio + 1), as AutoTM;
- per pool, ``"hbm=4:1,dram=64GiB"``: each named pool gets a size or a ratio (a
  ratio again over the graph's peak live bytes); pools not named keep the system's
  own capacity.

An empty limit (``Limit()``, or ``Limit.parse("")``) means every pool keeps the
system's own capacity.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np

from autotm_core.errors import CapacityError, MemorySystemError, UsageError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.units import fast_capacity_for_ratio, format_bytes, parse_ratio, parse_size

LIMIT_HINT = ("write a size (16GiB), a slow:fast ratio (4:1) or per-pool limits "
              "(hbm=4:1,dram=64GiB)")
"""What a limit may look like, for error hints."""


@attrs.frozen
class PoolLimit:
    """The limit of one pool: a size, or a slow:fast ratio over the graph's peak live bytes."""

    pool: str | None
    """The pool's name; ``None`` for the fastest pool, whatever it is called."""
    nbytes: int | None = None
    """The limit in bytes, when given as a size."""
    ratio: Fraction | None = None
    """Slow over fast memory (``4`` for ``4:1``), when given as a ratio."""

    def __attrs_post_init__(self) -> None:
        if (self.nbytes is None) == (self.ratio is None):
            raise UsageError("a pool limit is either a size or a ratio", hint=LIMIT_HINT)

    def resolve(self, peak_nbytes: int) -> int:
        """The limit in bytes for a graph whose peak live bytes are ``peak_nbytes``."""
        if self.nbytes is not None:
            return self.nbytes
        assert self.ratio is not None
        return fast_capacity_for_ratio(peak_nbytes, self.ratio)

    def __str__(self) -> str:
        if self.ratio is not None:
            value = f"{self.ratio.numerator}:{self.ratio.denominator}"
        else:
            value = str(self.nbytes)
        return value if self.pool is None else f"{self.pool}={value}"


def _value(pool: str | None, text: str) -> PoolLimit:
    text = text.strip()
    if ":" in text:
        return PoolLimit(pool, ratio=parse_ratio(text))
    return PoolLimit(pool, nbytes=parse_size(text))


@attrs.frozen
class Limit:
    """Capacity limits of some pools of a memory system (see the module docstring)."""

    parts: tuple[PoolLimit, ...] = ()
    """One limit per pool named (at most one per pool); empty: the system's own."""
    text: str = attrs.field(default="", eq=False)
    """The limit as written, for messages (the canonical form when built in code)."""

    @classmethod
    def parse(cls, text: str | None) -> Limit:
        """The limit ``text`` writes (see the module docstring); ``None`` or ``""``: none."""
        if text is None or not str(text).strip():
            return cls()
        text = str(text).strip()
        if "=" not in text:
            return cls((_value(None, text),), text)
        parts = []
        for item in text.split(","):
            pool, sep, value = item.partition("=")
            if not sep or not pool.strip() or not value.strip():
                raise UsageError(f"cannot read {item.strip()!r} in limit {text!r} as POOL=LIMIT",
                                 hint=LIMIT_HINT)
            parts.append(_value(pool.strip(), value))
        names = [p.pool for p in parts]
        twice = sorted({n for n in names if names.count(n) > 1 and n is not None})
        if twice:
            raise UsageError(f"limit {text!r} gives pool {', '.join(twice)} twice", hint=LIMIT_HINT)
        return cls(tuple(parts), text)

    @classmethod
    def from_options(cls, *, nbytes: str | int | None = None, ratio: str | None = None,
                     pools: str | None = None) -> Limit:
        """The limit of ``--fast-capacity``, ``--ratio`` or ``--limit`` (at most one given)."""
        given = [v for v in (nbytes, ratio, pools) if v is not None]
        if len(given) > 1:
            raise UsageError("give one limit: a fast-memory capacity, a slow:fast ratio or "
                             "per-pool limits, not several",
                             hint="e.g. --fast-capacity 16GiB, --ratio 4:1, or "
                             "--limit hbm=4:1,dram=4:1")
        if nbytes is not None:
            try:
                size = parse_size(nbytes)
            except UsageError as exc:  # name the option: the message alone says "size '3.5'"
                raise UsageError(f"--fast-capacity: {exc.message}", hint=exc.hint) from None
            return cls((PoolLimit(None, nbytes=size),), str(nbytes))
        if ratio is not None:
            if "=" in ratio:
                raise UsageError(f"--ratio {ratio!r} is not a ratio",
                                 hint="write slow:fast memory, e.g. 4:1 (per-pool limits go "
                                 "to --limit)")
            return cls((PoolLimit(None, ratio=parse_ratio(ratio)),), ratio)
        return cls.parse(pools)

    def __str__(self) -> str:
        return self.text or ",".join(str(p) for p in self.parts)

    @property
    def is_ratio(self) -> bool:
        """Whether the limit is a ratio over the peak live bytes (of some pool)."""
        return any(p.ratio is not None for p in self.parts)

    def capacities(self, graph: Graph, system: MemorySystem) -> dict[str, int]:
        """The limit in bytes of each pool it names (the fastest for an unnamed one)."""
        peak = int(graph.liveness.peak_nbytes) if self.is_ratio else 0
        out: dict[str, int] = {}
        for part in self.parts:
            name = system.fast.name if part.pool is None else part.pool
            try:
                system.pool_index(name)
            except MemorySystemError as exc:  # a name given with the limit: a usage error
                raise UsageError(f"limit {self}: {exc.message}", hint=exc.hint) from None
            out[name] = part.resolve(peak)
        return out

    def apply(self, graph: Graph, system: MemorySystem) -> MemorySystem:
        """``system`` with the pools this limit names limited to it."""
        for name, nbytes in self.capacities(graph, system).items():
            system = system.with_capacity(name, nbytes)
        return system


def fast_capacity(
    graph: Graph, *, nbytes: str | int | None = None, ratio: str | None = None
) -> int | None:
    """The fast-pool limit in bytes that ``nbytes`` or ``ratio`` asks for (``None``: neither given).

    ``ratio`` is slow:fast memory (PMM:DRAM), e.g. ``"4:1"``; the limit is the graph's peak live
    bytes (tensors plus workspace) divided by ``ratio + 1``.
    """
    limit = Limit.from_options(nbytes=nbytes, ratio=ratio)
    if not limit.parts:
        return None
    return limit.parts[0].resolve(int(graph.liveness.peak_nbytes))


def with_fast_capacity(system: MemorySystem, capacity_nbytes: int | None) -> MemorySystem:
    """``system`` with its fastest pool limited to ``capacity_nbytes`` (unchanged when ``None``)."""
    if capacity_nbytes is None:
        return system
    return system.with_capacity(system.fast.name, capacity_nbytes)


def over_capacity(limit: Limit, graph: Graph, system: MemorySystem) -> list[str]:
    """What ``limit`` asks of ``system`` beyond its pools' own capacities, one sentence per
    pool, with what would fit (empty: every limit is within its pool). A plan for a pool
    larger than the hardware's is a what-if, not a plan that runs there."""
    out = []
    peak = int(graph.liveness.peak_nbytes)
    limit.capacities(graph, system)  # a pool the system lacks: the usage error it always was
    for part in limit.parts:
        name = system.fast.name if part.pool is None else part.pool
        own = system.pool(name).capacity_nbytes
        nbytes = part.resolve(peak)
        if own is None or nbytes <= own:
            continue
        if part.ratio is None:
            text = f"a limit of {format_bytes(nbytes)} ({nbytes:,} bytes) on pool {name!r}"
        else:
            text = (f"limit {part} gives pool {name!r} {format_bytes(nbytes)} ({nbytes:,} "
                    f"bytes: peak live {format_bytes(peak)} / {part.ratio + 1})")
        text += f" is more than the {format_bytes(own)} ({own:,} bytes) it has on {system.name}"
        if part.ratio is not None:
            least = -(-peak // own) - 1  # the smallest whole slow:fast ratio that fits
            text += f"; a ratio of at least {least}:1 fits"
        out.append(text)
    return out


def droppable_nbytes(graph: Graph, *, page_nbytes: int = 1,
                     among: np.ndarray | None = None) -> np.ndarray:
    """Per kernel, the bytes a recomputing plan may hold in no pool there: each recomputable
    tensor (:attr:`~autotm_core.ir.Graph.recompute`) live at the kernel that the kernel
    neither reads nor writes, its size rounded up to ``page_nbytes`` (only the tensors
    ``among`` marks, when given). More than any plan drops: a bound, not a plan."""
    live = graph.liveness
    first, last = live.first.astype(np.int64), live.last.astype(np.int64)
    wanted = np.asarray(graph.recompute.recomputable, dtype=bool) & (last >= first) & (last >= 0)
    if among is not None:
        wanted &= among
    size = -(-live.nbytes.astype(np.int64) // page_nbytes) * page_nbytes  # rounded up
    delta = np.zeros(len(graph.kernels) + 1, dtype=np.int64)
    np.add.at(delta, first[wanted], size[wanted])
    np.add.at(delta, last[wanted] + 1, -size[wanted])
    entries = np.asarray(live.kernel_tensors, dtype=np.int64)
    used = wanted[entries]  # each (kernel, tensor) once: the kernel holds the tensor there
    np.add.at(delta, live.entry_kernels()[used], -size[entries[used]])
    np.add.at(delta, live.entry_kernels()[used] + 1, size[entries[used]])
    return np.cumsum(delta[:-1])


def check_pools_hold(graph: Graph, system: MemorySystem, *, recompute: bool = False) -> None:
    """Raise :class:`CapacityError` when, at some kernel, the bytes live (tensors and the
    kernel's workspace) exceed what every pool of ``system`` holds together: no plan of any
    planner exists then. A system with an unbounded pool always holds them. With
    ``recompute``, a plan may hold a recomputable tensor in no pool between its uses
    (:func:`droppable_nbytes`): those bytes are not counted."""
    capacities = [p.capacity_nbytes for p in system.pools]
    if not graph.kernels or any(c is None for c in capacities):
        return
    total = sum(int(c or 0) for c in capacities)
    live = graph.liveness.live_nbytes
    if recompute:
        live = live - droppable_nbytes(graph)
    k = int(live.argmax())
    need = int(live[k])
    if need <= total:
        return
    pools = " + ".join(f"{p.name} {format_bytes(int(p.capacity_nbytes or 0))}"
                       for p in system.pools)
    raise CapacityError(
        f"no plan fits: at kernel {graph.kernels[k].name!r} (#{k}) {format_bytes(need)} "
        f"({need:,} bytes) are live (tensors and workspace"
        f"{', less every recomputable activation it does not use' if recompute else ''}), "
        "more than all the pools hold "
        f"together: {pools} = {format_bytes(total)} ({total:,} bytes), "
        f"{format_bytes(need - total)} short",
        hint=f"give the pools at least {format_bytes(need - total)} ({need - total:,} bytes) "
             "more between them: raise a "
             f"slower pool's limit (--limit {system.pools[-1].name}=SIZE; a pool not named keeps "
             "the system's capacity), plan on a memory system with more memory, or plan a "
             "smaller step (a smaller batch)",
    )


def check_workspace_fits(graph: Graph, capacity_nbytes: int | None, *, pool: str) -> None:
    """Raise :class:`CapacityError` when some kernel's workspace alone overflows the fast pool.

    A kernel's workspace lives in the fastest pool while it runs, whatever the
    plan does with the tensors, so no plan exists below the largest workspace.
    """
    if capacity_nbytes is None or not graph.kernels:
        return
    workspace = graph.liveness.workspace_nbytes
    k = int(workspace.argmax())
    if int(workspace[k]) > capacity_nbytes:
        raise CapacityError(
            f"kernel {graph.kernels[k].name!r} needs {format_bytes(int(workspace[k]))} of "
            f"workspace in pool {pool!r}, which holds only {format_bytes(capacity_nbytes)}",
            hint="give the fast pool at least the largest kernel workspace "
            "(raise --fast-capacity or lower the --ratio)",
        )
