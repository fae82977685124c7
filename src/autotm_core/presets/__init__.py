"""Built-in memory systems: one memory-system file per preset, in this folder.

Each ``NAME.json`` is an ordinary ``autotm-core/memory-system`` document (see
docs/formats.md) whose ``name`` is ``NAME`` and whose ``source`` says where its
numbers come from. Adding a preset is adding a file: every command that takes
``--system`` accepts it. Capacities are the machine's; planners usually
override the fast pool's with ``--fast-capacity`` or ``--ratio``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from autotm_core.errors import MemorySystemError, UnknownPresetError
from autotm_core.formats.system_json import load_system
from autotm_core.memory import MemorySystem

_FOLDER = resources.files(__name__)
_SUFFIX = ".json"


@functools.cache
def _load(name: str) -> MemorySystem:
    with resources.as_file(_FOLDER / f"{name}{_SUFFIX}") as path:
        system = load_system(path)
    if system.name != name:
        raise MemorySystemError(
            f"preset file {name}{_SUFFIX} describes a system called {system.name!r}",
            hint="a preset's file name and its \"name\" field must agree",
        )
    return system


PRESETS: Mapping[str, Callable[[], MemorySystem]] = MappingProxyType({
    name: functools.partial(_load, name)
    for name in sorted(
        entry.name.removesuffix(_SUFFIX)
        for entry in _FOLDER.iterdir()
        if entry.name.endswith(_SUFFIX)
    )
})
"""Preset name -> function returning that system (read from its file once, then shared)."""


def preset(name: str) -> MemorySystem:
    """The built-in memory system called ``name``."""
    load = PRESETS.get(name)
    if load is None:
        raise UnknownPresetError(
            f"no memory-system preset called {name!r}",
            hint=f"use one of {', '.join(PRESETS)}, or give a memory-system JSON file",
        )
    return load()


def is_preset(system: MemorySystem) -> bool:
    """Whether ``system`` is a built-in preset as its file describes it (a published
    machine's numbers, not a machine at hand)."""
    return system.name in PRESETS and preset(system.name) == system


def resolve_system(preset_or_path: str | os.PathLike[str]) -> MemorySystem:
    """A preset by name, or else a memory-system file by path (what ``--system`` takes)."""
    text = os.fspath(preset_or_path)
    if text in PRESETS:
        return preset(text)
    if Path(text).suffix.lower() == ".json" or Path(text).exists():
        return load_system(text)
    return preset(text)


__all__ = ["PRESETS", "is_preset", "preset", "resolve_system"]
