"""The results file: every finished cell, written after each one so a run resumes.

An ``autotm-core/evaluation`` document (version 1) holding the profile name, the
versions that produced the results and one entry per finished cell, keyed by
:attr:`Cell.key`. It is rewritten atomically after each cell.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from autotm_core.errors import FormatError
from autotm_core.evaluation.cells import CellResult
from autotm_core.formats.document import envelope, read_document, write_document

KIND = "evaluation"
VERSION = 1


def versions() -> dict[str, str]:
    """Versions of what produced the results: autotm-core, Python, HiGHS, numpy."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import numpy

    from autotm_core import __version__

    try:
        highs = version("highspy")
    except PackageNotFoundError:
        highs = "not installed"
    return {"autotm-core": __version__, "python": platform.python_version(),
            "highspy": highs, "numpy": numpy.__version__}


def load_results(path: str | os.PathLike[str]) -> dict[str, CellResult]:
    """The finished cells of the results file at ``path`` by key (empty when there is none)."""
    if not Path(path).exists():
        return {}
    doc, fields = read_document(path, KIND, {VERSION})
    out: dict[str, CellResult] = {}
    for i, entry in enumerate(fields.list(doc.get("cells"), "cells")):
        try:
            result = CellResult.from_json(dict(fields.object(entry, f"cells[{i}]")))
        except (TypeError, KeyError, ValueError) as exc:
            raise FormatError(f"{path}: cells[{i}] is not a cell result ({exc})",
                              hint="delete the file to start the evaluation afresh") from None
        out[result.cell.key] = result
    return out


def save_results(path: str | os.PathLike[str], results: Iterable[CellResult], *,
                 profile: str, extra: Mapping[str, Any] | None = None) -> None:
    """Write ``results`` to ``path`` atomically."""
    document = {**envelope(KIND, VERSION), "profile": profile, "versions": versions(),
                **(extra or {}), "cells": [r.to_json() for r in results]}
    write_document(path, document)
