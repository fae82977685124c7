"""A grid file: named experiments, each graphs x limits x planners on one system.

``sweep --grid FILE`` plans every point of every experiment of an
``autotm-core/grid`` document (version 1)::

    {"format": "autotm-core/grid", "version": 1,
     "name": "tiny", "description": "what the grid is for",
     "time_limit_seconds": 20, "relative_gap": 0.01, "solver": "highs",
     "mode": "auto", "addresses": true, "recompute": true,
     "experiments": [
       {"name": "conventional", "title": "Conventional networks on optane-2019",
        "system": "optane-2019",
        "graphs": [{"source": "zoo:vgg19:batch=128", "label": "VGG-19 (b128)",
                    "note": "VGG-19, batch 2048 in the paper"}],
        "limits": ["1:1", "4:1", "8:1"],
        "planners": ["static", "synchronous", "first-touch", "2lm", "greedy"]}]}

Everything but ``name``, ``experiments`` and, per experiment, ``name``, ``system``,
``graphs``, ``limits`` and ``planners`` may be left out; a graph may be a plain
source string. Points shared by experiments are planned once (a point's key is
what changes its answer). The paper's evaluation is such a grid
(``benchmarks/grids/``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from autotm_core.capacity import Limit
from autotm_core.errors import FormatError, UsageError
from autotm_core.formats.document import Fields, envelope, read_document, write_document
from autotm_core.planning import PlanMode, PlanSettings, get_planner
from autotm_core.solvers.base import DEFAULT_SOLVER
from autotm_core.sweep.point import SweepPoint

KIND = "grid"
VERSION = 1
_EXPERIMENT_FIELDS = {"name", "title", "system", "graphs", "limits", "planners"}


def _text(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"a grid's {attribute.name} must be a non-empty string, not {value!r}",
                         hint="see docs/formats.md, grid files")


def _some(_instance: object, attribute: attrs.Attribute, value: tuple[object, ...]) -> None:
    if not value:
        raise UsageError(f"an experiment needs at least one of its {attribute.name}",
                         hint="list at least one graph, limit and planner")


def _limits(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    _some(instance, attribute, value)
    for limit in value:
        Limit.parse(limit)


def _planners(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    _some(instance, attribute, value)
    for planner in value:
        get_planner(planner)


@attrs.frozen(kw_only=True)
class GridGraph:
    """One graph of an experiment."""

    source: str = attrs.field(validator=_text)
    """Graph source, as the command line takes it."""
    label: str = attrs.field(validator=_text)
    """Name in tables."""
    note: str = ""
    """Free text about it (e.g. which network of a paper it stands for)."""


@attrs.frozen(kw_only=True)
class Experiment:
    """Every graph at every limit under every planner, on one memory system."""

    name: str = attrs.field(validator=_text)
    """Identifier (``conventional``, ``large``, ...)."""
    title: str = attrs.field(validator=_text)
    """Heading in reports."""
    system: str = attrs.field(validator=_text)
    """Memory-system preset name or file (loaded when a point is planned)."""
    graphs: tuple[GridGraph, ...] = attrs.field(validator=_some)
    """The graphs."""
    limits: tuple[str, ...] = attrs.field(validator=_limits)
    """Capacity limits as written (:class:`~autotm_core.capacity.Limit`)."""
    planners: tuple[str, ...] = attrs.field(validator=_planners)
    """Planners of :data:`autotm_core.planning.PLANNERS`."""


def _unique_names(_instance: object, _attribute: attrs.Attribute,
                  value: tuple[Experiment, ...]) -> None:
    names = [e.name for e in value]
    if not names:
        raise UsageError("a grid needs at least one experiment", hint="see docs/formats.md")
    if len(set(names)) != len(names):
        raise UsageError("two experiments have the same name",
                         hint="give each experiment a name of its own (--only takes it)")


def _settings(instance: Grid, _attribute: attrs.Attribute, _value: object) -> None:
    PlanSettings(time_limit_seconds=instance.time_limit_seconds,
                 relative_gap=instance.relative_gap)


@attrs.frozen(kw_only=True)
class Grid:
    """Experiments and the ILP settings they share (checked when the grid is made)."""

    name: str = attrs.field(validator=_text)
    """Identifier of the grid."""
    description: str = ""
    """What the grid is for, for reports."""
    experiments: tuple[Experiment, ...] = attrs.field(validator=_unique_names)
    """The experiments, in running order."""
    solver: str = DEFAULT_SOLVER
    """ILP solver plugin."""
    time_limit_seconds: float | None = None
    """ILP time limit per point (``None``: none)."""
    relative_gap: float = attrs.field(default=0.01, validator=_settings)
    """ILP relative gap."""
    mode: str = attrs.field(default=PlanMode.AUTO.value,
                            converter=lambda v: PlanMode.parse(v).value)
    """ILP planning mode."""
    addresses: bool = True
    """Whether ILP plans get addresses that fit."""
    recompute: bool = True
    """Whether ILP plans may recompute activations."""

    def point(self, experiment: Experiment, graph: GridGraph, limit: str,
              planner: str) -> SweepPoint:
        """The sweep point of one cell of ``experiment``."""
        return SweepPoint(graph=graph.source, system=experiment.system, planner=planner,
                          limit=limit, solver=self.solver,
                          time_limit_seconds=self.time_limit_seconds,
                          relative_gap=self.relative_gap, mode=self.mode,
                          addresses=self.addresses, recompute=self.recompute)

    def cells(self, experiment: Experiment) -> list[tuple[GridGraph, SweepPoint]]:
        """Every (graph, point) of ``experiment``: graph-major, then limits, then planners."""
        return [(g, self.point(experiment, g, limit, planner)) for g in experiment.graphs
                for limit in experiment.limits for planner in experiment.planners]

    def points(self) -> list[SweepPoint]:
        """Every point of every experiment, each once, in running order."""
        out: dict[str, SweepPoint] = {}
        for experiment in self.experiments:
            for _graph, point in self.cells(experiment):
                out.setdefault(point.key, point)
        return list(out.values())

    def select(self, *, experiments: Sequence[str] | None = None) -> Grid:
        """The grid restricted to ``experiments`` (all when ``None`` or empty)."""
        if not experiments:
            return self
        known = {e.name for e in self.experiments}
        unknown = sorted(set(experiments) - known)
        if unknown:
            raise UsageError(f"grid {self.name!r} has no experiment {', '.join(unknown)}",
                             hint=f"its experiments: {', '.join(sorted(known))}")
        return attrs.evolve(self, experiments=tuple(
            e for e in self.experiments if e.name in experiments))

    def with_settings(self, *, solver: str | None = None,
                      time_limit_seconds: float | None = None,
                      relative_gap: float | None = None, mode: str | None = None,
                      addresses: bool | None = None, recompute: bool | None = None) -> Grid:
        """The grid with the ILP settings given (not ``None``) in place of its own."""
        given: dict[str, Any] = {"solver": solver, "time_limit_seconds": time_limit_seconds,
                                 "relative_gap": relative_gap, "mode": mode,
                                 "addresses": addresses, "recompute": recompute}
        return attrs.evolve(self, **{k: v for k, v in given.items() if v is not None})

    def to_document(self) -> dict[str, Any]:
        """The grid file's document."""
        data = attrs.asdict(self, value_serializer=_as_json)
        return {**envelope(KIND, VERSION), **data}


def _as_json(_instance: object, _attribute: object, value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _texts(fields: Fields, obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    items = fields.list(fields.get(obj, key, where, list), f"{where}.{key}")
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item.strip():
            raise fields.fail(f"{where}.{key}[{i}]", "expected a non-empty string")
    if not items:
        raise fields.fail(f"{where}.{key}", "is empty")
    return tuple(items)


def _graph(fields: Fields, raw: Any, where: str) -> GridGraph:
    if isinstance(raw, str):
        return GridGraph(source=raw, label=raw)
    obj = fields.object(raw, where)
    fields.unknown_keys(obj, {"source", "label", "note"}, where)
    source = fields.get(obj, "source", where, str)
    return GridGraph(source=source, label=fields.get(obj, "label", where, str, required=False,
                                                     default=source),
                     note=fields.get(obj, "note", where, str, required=False, default=""))


def _experiment(fields: Fields, where: str, obj: Mapping[str, Any]) -> Experiment:
    name = fields.get(obj, "name", where, str)
    graphs = fields.list(fields.get(obj, "graphs", where, list), f"{where}.graphs")
    if not graphs:
        raise fields.fail(f"{where}.graphs", "is empty")
    try:
        return Experiment(
            name=name, title=fields.get(obj, "title", where, str, required=False, default=name),
            system=fields.get(obj, "system", where, str),
            graphs=tuple(_graph(fields, g, f"{where}.graphs[{i}]")
                         for i, g in enumerate(graphs)),
            limits=_texts(fields, obj, "limits", where),
            planners=_texts(fields, obj, "planners", where))
    except UsageError as exc:
        raise fields.fail(where, exc.message) from None


def load_grid(path: str | os.PathLike[str]) -> Grid:
    """The grid file at ``path``; :class:`FormatError` naming the file and field when malformed."""
    doc, fields = read_document(path, KIND, {VERSION})
    fields.unknown_keys(doc, {"format", "version", "name", "description", "experiments",
                              "solver", "time_limit_seconds", "relative_gap", "mode",
                              "addresses", "recompute"}, "")
    experiments = list(fields.entries(doc, "experiments", _EXPERIMENT_FIELDS))
    if not experiments:
        raise fields.fail("experiments", "is empty")
    try:
        grid = Grid(
            name=fields.get(doc, "name", "", str),
            description=fields.get(doc, "description", "", str, required=False, default=""),
            experiments=tuple(_experiment(fields, where, obj) for where, obj in experiments),
            solver=fields.get(doc, "solver", "", str, required=False, default=DEFAULT_SOLVER),
            time_limit_seconds=fields.get(doc, "time_limit_seconds", "", (int, float),
                                          required=False),
            relative_gap=fields.get(doc, "relative_gap", "", (int, float), required=False,
                                    default=0.01),
            mode=fields.get(doc, "mode", "", str, required=False, default="auto"),
            addresses=fields.get(doc, "addresses", "", bool, required=False, default=True),
            recompute=fields.get(doc, "recompute", "", bool, required=False, default=True))
    except UsageError as exc:
        raise FormatError(f"{path}: {exc.message}", hint=exc.hint) from None
    return grid


def save_grid(grid: Grid, path: str | os.PathLike[str]) -> None:
    """Write ``grid`` to ``path`` atomically."""
    write_document(path, grid.to_document())
