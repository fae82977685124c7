"""Options of the ILP formulations: which formulation, and the knobs AutoTM fixed."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from autotm_core.errors import UsageError
from autotm_core.ir import Graph, TensorKind
from autotm_core.memory import MemorySystem
from autotm_core.units import PAGE_NBYTES, parse_choice

Capacities = Mapping[str, "int | Sequence[int] | None"]
"""Limits per pool name: one for every kernel, one per kernel, or ``None`` (unbounded)."""


class Formulation(enum.Enum):
    """How much freedom the planner has to move tensors."""

    STATIC = "static"
    """Every tensor keeps one pool for its whole life; no moves."""
    SYNCHRONOUS = "synchronous"
    """Tensors move between kernels (blocking copies): evicted after a use, fetched before one."""
    ASYNCHRONOUS = "asynchronous"
    """As synchronous; a move may also overlap a nearby kernel that does not write the tensor."""

    @classmethod
    def parse(cls, value: Formulation | str) -> Formulation:
        """The member called ``value`` (any case)."""
        return parse_choice(cls, value, what="formulation")


PINNABLE_KINDS = frozenset({TensorKind.PARAMETER, TensorKind.INPUT, TensorKind.OUTPUT})
"""Kinds AutoTM pinned in fast memory: parameters, the step's inputs and its outputs."""


def _capacity_value(instance: object, attribute: attrs.Attribute, value: object) -> None:
    for pool, limit in value.items():  # type: ignore[attr-defined]
        values = [limit] if isinstance(limit, int) else list(limit)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
            raise UsageError(
                f"capacity of pool {pool!r} must be a whole number of bytes >= 0 "
                "(or one per kernel)",
                hint="give bytes, e.g. 16 * 2**30, or a list with one limit per kernel",
            )


def _to_name_sets(value: Mapping[str, Iterable[str]] | None) -> dict[str, frozenset[str]]:
    return {pool: frozenset(names) for pool, names in (value or {}).items() if names}


def _to_pairs(value: Iterable[tuple[int, int]] | None) -> frozenset[tuple[int, int]]:
    return frozenset((int(a), int(b)) for a, b in (value or ()))


def _to_capacities(value: Mapping[str, int | Sequence[int]] | None) -> dict[str, object]:
    out: dict[str, object] = {}
    for pool, limit in (value or {}).items():
        out[pool] = limit if isinstance(limit, int) else tuple(limit)
    return out


def _to_formulation(value: Formulation | str) -> Formulation:
    return Formulation.parse(value)


@attrs.frozen(kw_only=True)
class FormulationOptions:
    """Everything that shapes the model besides the graph, the costs and the memory system."""

    formulation: Formulation = attrs.field(default=Formulation.SYNCHRONOUS,
                                           converter=_to_formulation)
    """Static, synchronous or asynchronous."""
    async_window: int = attrs.field(default=15, validator=attrs.validators.ge(1))
    """Asynchronous only: a move may be issued (a fetch) or complete (an eviction) at most
    this many kernels away from the use it serves (AutoTM used 15)."""
    async_spans: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Asynchronous only: a copy is in flight from the kernel it is issued at to the one it
    serves (a fetch: issued up to :attr:`async_window` kernels ahead, complete by the use;
    an eviction: issued after the use, complete within the window), so it may take as
    many kernels' time as it needs. ``False``: each copy overlaps one kernel, as in AutoTM
    (for a runtime that cannot keep a copy in flight over kernels)."""
    page_nbytes: int = attrs.field(default=PAGE_NBYTES, validator=attrs.validators.ge(1))
    """Sizes are rounded up to a multiple of this in capacity constraints (1: no rounding)."""
    pin_to_fast: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Keep tensors of :data:`pinned_kinds` in the fastest pool for their whole life (AutoTM
    did, and left them out of the capacity; here they count towards it)."""
    pinned_kinds: frozenset[TensorKind] = attrs.field(default=PINNABLE_KINDS, converter=frozenset)
    """Kinds pinned when :attr:`pin_to_fast` is set."""
    reduce: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Leave out edges that cannot change the optimum (two pools, synchronous; see
    ``formulation._Builder._dominated``; and asynchronous edges that never beat the
    synchronous copy, ``formulation._Builder._async_pays``); off only to compare models."""
    recompute: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Let the model drop a recomputable activation between two uses and rerun its producer
    before the later one (:mod:`autotm_core.ilp.reruns`)."""
    recompute_depth: int = attrs.field(default=8, validator=attrs.validators.ge(0))
    """How many producers back a chain of reruns at one boundary may reach (a value recomputed
    from recomputed values); 0: only values whose inputs are at hand."""
    rerun_seeds: frozenset[tuple[int, int]] = attrs.field(factory=frozenset, converter=_to_pairs)
    """Reruns ``(kernel, before)`` (kernel positions) the model may choose beside those its
    chains reach (with :attr:`recompute`), where every input can be had as for any option:
    the planner offers the reruns of the plans it holds to start from, so that a
    practitioner's plan whose chains run deeper than :attr:`recompute_depth` (checkpointing
    a transformer layer reruns about 20 producers back) is one the model can express, start
    from and improve."""
    rerun_seeds_only: bool = attrs.field(default=False,
                                         validator=attrs.validators.instance_of(bool))
    """With :attr:`recompute`: the model's only rerun options are :attr:`rerun_seeds`, so that
    it chooses which of the held plans' reruns to keep and where everything else lives (a
    model about the size of keeping and moving: Hugging Face GPT-2 with checkpoint-layers'
    reruns solves to its gap where the model with every option does not; see
    docs/formulations.md)."""
    capacities: Mapping[str, int | tuple[int, ...]] = attrs.field(
        factory=dict, converter=_to_capacities, validator=_capacity_value)
    """Limit per pool name, overriding the memory system's: one number of bytes for the whole
    program, or a tuple with one limit per kernel (what the address-fitting loop tightens)."""
    begin_outside: Mapping[str, frozenset[str]] = attrs.field(factory=dict,
                                                               converter=_to_name_sets)
    """Per pool name, tensors (by name) that exist before the step and survive it and may not
    be in that pool when the step begins. The address-fitting loop sets it for a tensor whose
    stays in the pool at the step's start and at its end could not share one address
    (:attr:`autotm_core.addresses.Overflow.split_tensors`): begun elsewhere, it is read
    there by its first user, or fetched before it, and its stays need no common address."""

    def to_json(self) -> dict[str, object]:
        """The options as JSON values (kept in a plan's attributes)."""
        return {
            "formulation": self.formulation.value,
            "async_window": self.async_window,
            "async_spans": self.async_spans,
            "page_nbytes": self.page_nbytes,
            "pin_to_fast": self.pin_to_fast,
            "pinned_kinds": sorted(k.value for k in self.pinned_kinds),
            "recompute": self.recompute,
            "recompute_depth": self.recompute_depth,
            **({"begin_outside": {p: sorted(names) for p, names in self.begin_outside.items()}}
               if self.begin_outside else {}),
            **({"rerun_seeds": [list(pair) for pair in sorted(self.rerun_seeds)]}
               if self.rerun_seeds else {}),
            **({"rerun_seeds_only": True} if self.rerun_seeds_only else {}),
        }


def options_of(options: FormulationOptions | None,
               formulation: Formulation | str | None) -> FormulationOptions:
    """The options a planning call was given: ``options``, or the default options of
    ``formulation`` (synchronous when neither is given); both, when they disagree on the
    formulation, are one :class:`UsageError` instead of one of them silently ignored."""
    if options is None:
        return FormulationOptions(formulation=Formulation.parse(formulation or "synchronous"))
    given = None if formulation is None else Formulation.parse(formulation)
    if given is not None and given is not options.formulation:
        raise UsageError(
            f"the formulation is given twice and they differ: {given.value!r}, and "
            f"{options.formulation.value!r} in the options",
            hint="give it once: in the options, or as formulation= without options")
    return options


def resolve_capacities(graph: Graph, system: MemorySystem,
                       capacities: Capacities | None) -> list[np.ndarray | None]:
    """Per pool, its limit at every kernel: ``capacities`` where given, else the system's."""
    n = len(graph.kernels)
    given = dict(capacities or {})
    for name in given:
        system.pool_index(name)  # raises, naming the pools, on an unknown one
    out: list[np.ndarray | None] = []
    for pool in system.pools:
        limit = given.get(pool.name, pool.capacity_nbytes)
        if limit is None:
            out.append(None)
        elif isinstance(limit, int):
            out.append(np.full(n, limit, dtype=np.int64))
        else:
            array = np.asarray(limit, dtype=np.int64)
            if array.shape != (n,):
                raise UsageError(
                    f"capacity of pool {pool.name!r} has {array.size} limits; "
                    f"graph {graph.name!r} has {n} kernels",
                    hint="give one number, or one limit per kernel",
                )
            out.append(array)
    return out


def held_pages(graph: Graph, page_nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel, the pages (of ``page_nbytes``, sizes rounded up) of every tensor live at it
    or at the kernel before (the boundary before a kernel holds both), and of its workspace."""
    live, n = graph.liveness, len(graph.kernels)
    sizes = -(-live.nbytes.astype(np.int64) // page_nbytes)
    delta = np.zeros(n + 2, dtype=np.int64)
    alive = (live.last >= live.first) & (live.last >= 0)
    np.add.at(delta, live.first[alive], sizes[alive])
    np.add.at(delta, live.last[alive] + 2, -sizes[alive])
    return np.cumsum(delta)[:n], -(-live.workspace_nbytes.astype(np.int64) // page_nbytes)


def binding_pools(graph: Graph, capacities: Sequence[np.ndarray | None],
                  page_nbytes: int) -> list[int]:
    """Positions of the pools whose capacity can bind: those with a limit (per kernel, in
    ``capacities``) that all live tensors (sizes rounded up to ``page_nbytes``) and, in
    the fastest pool, the workspace, do not fit at every kernel. The others' capacity
    rows could never bind and are left out (an exact reduction)."""
    tensors, workspace = held_pages(graph, page_nbytes)
    return [q for q, cap in enumerate(capacities) if cap is not None and not np.all(
        (tensors + workspace if q == 0 else tensors) * page_nbytes <= cap)]
