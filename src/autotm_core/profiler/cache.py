"""The profile cache: one JSON file per measurement, written atomically.

An entry is keyed by the kernel's signature, its placement (the NUMA node of
each tensor and of the workspace: two pools on the same node are the same
memory, so they share a measurement) and the machine context
(:class:`~autotm_core.profiler.context.MachineContext`). The key's digest names
the file, ``DIR/<machine id>/<key digest>.json``; the file holds the whole key,
which is compared on reading, and the measurement.

Every write goes to a temporary file in the same folder, then ``os.replace``
renames it over the entry (:func:`~autotm_core.formats.document.write_document`).
A rename is atomic on POSIX file systems, so a reader sees the old entry, the new
one or none, never a part of one: two processes writing the same key leave one
of their two complete entries, and a writer killed mid-write leaves at most a
hidden temporary file (``.NAME.json.XXXX``), which readers never open. An entry
that cannot be read anyway (edited by hand, another tool) counts as a miss,
with a warning, and is overwritten by the next measurement.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from autotm_core.errors import AutotmError, ResourceError
from autotm_core.formats.document import envelope, read_document, write_document
from autotm_core.profiler.context import MachineContext
from autotm_core.profiler.records import Measurement
from autotm_core.profiler.signature import KernelSignature, stable_digest

logger = logging.getLogger(__name__)

KIND = "profile-entry"
VERSION = 1


@attrs.frozen(slots=True)
class CacheKey:
    """What a measurement is of."""

    signature: KernelSignature
    """The kernel's signature."""
    nodes: tuple[int, ...]
    """NUMA node of each tensor, in ``Kernel.tensors`` order."""
    workspace_node: int
    """NUMA node of the workspace (the fastest pool's)."""
    context: MachineContext
    """Machine and thread context."""

    def to_json(self) -> dict[str, Any]:
        """The key as a JSON object."""
        return {"signature": self.signature.to_json(), "nodes": list(self.nodes),
                "workspace_node": self.workspace_node, "machine": self.context.to_json()}

    @property
    def digest(self) -> str:
        """Stable hash of the whole key (32 hex digits): the entry's file name."""
        return stable_digest(self.to_json())


class ProfileCache:
    """Measurements kept in a folder, safe for concurrent processes (see the module doc)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ResourceError(f"profile cache {self.directory}: is a file, not a folder",
                             hint="give --cache a folder (it is created when missing)")

    def path(self, key: CacheKey) -> Path:
        """File of the entry for ``key``."""
        return self.directory / key.context.machine_id / f"{key.digest}.json"

    def get(self, key: CacheKey, *, min_repeat: int = 1) -> Measurement | None:
        """The measurement stored for ``key`` with at least ``min_repeat`` repetitions, or None."""
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            doc, fields = read_document(path, KIND, {VERSION})
            if doc.get("key") != key.to_json():
                logger.warning("%s: holds another key (a hash collision?); ignored", path)
                return None
            raw = fields.get(doc, "measurement", "", dict)
            found = Measurement(**{name: raw[name] for name in
                                   ("median_seconds", "min_seconds", "iqr_seconds", "repeat")})
        except (AutotmError, KeyError, TypeError, ValueError) as exc:
            logger.warning("%s: unreadable cache entry (%s); it will be measured again", path, exc)
            return None
        return found if found.repeat >= min_repeat else None

    def put(self, key: CacheKey, measurement: Measurement, *,
            samples_seconds: Sequence[float] = ()) -> None:
        """Store ``measurement`` for ``key`` (atomically; the last writer wins)."""
        document = {**envelope(KIND, VERSION), "key": key.to_json(),
                    "measurement": measurement.to_json(),
                    "samples_seconds": [float(s) for s in samples_seconds]}
        write_document(self.path(key), document)

    def entries(self) -> list[Path]:
        """Every entry file (temporary files of writers excluded)."""
        if not self.directory.is_dir():
            return []
        return sorted(p for p in self.directory.glob("*/*.json") if not p.name.startswith("."))
