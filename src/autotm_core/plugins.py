"""Plugins found through entry points: frontends and solvers.

Two entry-point groups are part of the public API:

``autotm_core.frontends``
    Each entry point names a class (or a factory) whose instances satisfy
    :class:`Frontend`: they turn a source (a file, a model object) into a
    :class:`~autotm_core.ir.Graph`.
``autotm_core.solvers``
    Each names a class whose instances satisfy the solver protocol of
    :mod:`autotm_core.solvers` (ILP backends).

A frontend may do more than load graphs: one that is a :class:`PolicyExporter` writes a
plan's decisions as its framework's own policy (``export-policy``), one that is an
:class:`autotm_core.executor.KernelSource` runs plans with its own kernels (``run
--kernels``).

The built-in plugins are registered through autotm-core's own entry points,
exactly as a third party's. Discovery is deterministic (sorted by name, then
distribution), type-checks what it loads, keeps a plugin that fails to import
as an unusable entry with the reason instead of failing, and reports a name
claimed by two distributions as a conflict naming both.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from autotm_core.errors import PluginError, UnknownPluginError
from autotm_core.ir import Graph

if TYPE_CHECKING:
    from collections.abc import Mapping

    from autotm_core.plans import Plan
    from autotm_core.solvers.base import Solver

log = logging.getLogger(__name__)

FRONTENDS_GROUP = "autotm_core.frontends"
SOLVERS_GROUP = "autotm_core.solvers"


@runtime_checkable
class Frontend(Protocol):
    """Turns something a user has into a :class:`Graph`."""

    name: str
    """Short name, the entry point's."""
    description: str
    """One line for ``python -m autotm_core plugins``."""

    def unavailable_reason(self) -> str | None:
        """Why it cannot run here (e.g. a missing package), or ``None`` when it can."""

    def load(self, source: Any, **options: Any) -> Graph:
        """Build the graph of ``source``.

        Raise an :class:`~autotm_core.errors.AutotmError` on bad input.
        """


@runtime_checkable
class PolicyExporter(Protocol):
    """A frontend that writes a plan's decisions in its framework's own terms: the torch
    plugin's writes a selective activation-checkpointing policy (``export-policy``)."""

    def export_policy(self, plan: Plan, graph: Graph, *, fast_pool: str,
                      path: str) -> Mapping[str, int]:
        """Write the policy of ``plan`` (verified against ``graph``; ``fast_pool`` is the
        memory system's fastest pool) to ``path``, and say what it holds as named counts
        for the command's report (ops per decision, bytes).

        Raise an :class:`~autotm_core.errors.AutotmError` on a graph or plan it cannot
        express.
        """


@attrs.frozen
class PluginEntry:
    """One discovered plugin, loaded or not."""

    group: str
    """Entry-point group."""
    name: str
    """Entry-point name."""
    distribution: str
    """Distribution that declares it."""
    value: str
    """``module:attribute`` it points to."""
    plugin: Any = None
    """The instance, when it loaded."""
    error: str | None = None
    """Why it cannot be used (import failure, wrong type, conflict, missing dependency)."""

    @property
    def usable(self) -> bool:
        """Whether it loaded and can run here."""
        return self.error is None


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = entry_point.dist
    return dist.metadata["Name"] if dist is not None else "<unknown distribution>"


def discover(
    group: str,
    check: Callable[[Any], bool],
    *,
    entry_points: Iterable[importlib.metadata.EntryPoint] | None = None,
) -> dict[str, PluginEntry]:
    """Load every entry point of ``group``; broken ones are kept with the reason."""
    found = importlib.metadata.entry_points(group=group) if entry_points is None else entry_points
    ordered = sorted({(ep.name, _distribution_name(ep), ep.value): ep for ep in found}.items())
    by_name: dict[str, list[PluginEntry]] = {}
    for (name, dist, value), entry_point in ordered:
        by_name.setdefault(name, []).append(_load_one(group, name, dist, value, entry_point, check))
    result = {}
    for name, entries in by_name.items():
        if len(entries) == 1:
            result[name] = entries[0]
            continue
        dists = " and ".join(repr(e.distribution) for e in entries)
        why = f"the name {name!r} is claimed by {dists}; uninstall one of them"
        log.warning("plugin conflict in %s: %s", group, why)
        result[name] = attrs.evolve(entries[0], plugin=None, error=why)
    return result


def _load_one(
    group: str,
    name: str,
    dist: str,
    value: str,
    entry_point: importlib.metadata.EntryPoint,
    check: Callable[[Any], bool],
) -> PluginEntry:
    entry = PluginEntry(group=group, name=name, distribution=dist, value=value)
    try:
        factory = entry_point.load()
        plugin = factory() if callable(factory) else factory
    except Exception as exc:  # a third party's import may fail in any way
        log.warning("plugin %s from %s failed to load: %s", name, dist, exc)
        return attrs.evolve(entry, error=f"failed to load: {type(exc).__name__}: {exc}")
    if not check(plugin):
        return attrs.evolve(entry, error=f"{value} is not a valid plugin for {group}")
    return with_availability(attrs.evolve(entry, plugin=plugin))


def with_availability(entry: PluginEntry) -> PluginEntry:
    """``entry`` with its plugin's availability asked now (a package may have been installed)."""
    if entry.plugin is None:
        return entry
    try:
        reason = entry.plugin.unavailable_reason()
    except Exception as exc:
        reason = f"availability check failed: {type(exc).__name__}: {exc}"
    return attrs.evolve(entry, error=reason)


def _is_frontend(obj: Any) -> bool:
    return isinstance(obj, Frontend) and isinstance(getattr(obj, "name", None), str)


@functools.cache
def _discovered(group: str) -> dict[str, PluginEntry]:
    # Importing plugins is done once per process; their availability is asked on every call.
    check = _is_frontend if group == FRONTENDS_GROUP else is_solver
    return discover(group, check)


def frontends() -> dict[str, PluginEntry]:
    """Every frontend plugin installed, by name (imported once per process)."""
    return {name: with_availability(e) for name, e in _discovered(FRONTENDS_GROUP).items()}


def get_frontend(name: str) -> Frontend:
    """The usable frontend called ``name``, or a :class:`PluginError` saying why not (an
    :class:`UnknownPluginError`, a usage error, when none of that name is installed)."""
    return _usable(frontends(), name, "frontend")


def _usable(entries: dict[str, PluginEntry], name: str, what: str) -> Any:
    entry = entries.get(name)
    if entry is None:
        usable = ", ".join(n for n in sorted(entries) if entries[n].usable) or "none"
        unusable = [n for n in sorted(entries) if not entries[n].usable]
        also = f"; installed but unusable here: {', '.join(unusable)}" if unusable else ""
        raise UnknownPluginError(
            f"no {what} called {name!r} is installed (usable: {usable}{also})")
    if entry.error is not None:
        raise PluginError(
            f"{what} {name!r} from {entry.distribution!r} cannot be used: {entry.error}"
        )
    return entry.plugin


def is_solver(obj: Any) -> bool:
    """Whether ``obj`` satisfies the :class:`~autotm_core.solvers.Solver` protocol: a string
    ``name`` and ``description``, a :class:`~autotm_core.solvers.SolverCapabilities` as
    ``capabilities``, and callable ``unavailable_reason`` and ``solve``."""
    from autotm_core.solvers.base import SolverCapabilities

    return (
        isinstance(getattr(obj, "name", None), str)
        and isinstance(getattr(obj, "description", None), str)
        and isinstance(getattr(obj, "capabilities", None), SolverCapabilities)
        and callable(getattr(obj, "solve", None))
        and callable(getattr(obj, "unavailable_reason", None))
    )


def solvers() -> dict[str, PluginEntry]:
    """Every solver plugin installed, by name (imported once per process)."""
    return {name: with_availability(e) for name, e in _discovered(SOLVERS_GROUP).items()}


def get_solver(name: str) -> Solver:
    """The usable solver called ``name`` (it passed :func:`is_solver` when discovered), or a
    :class:`PluginError` saying why not (an :class:`UnknownPluginError`, a usage error, when
    none of that name is installed)."""
    solver: Solver = _usable(solvers(), name, "solver")
    return solver
