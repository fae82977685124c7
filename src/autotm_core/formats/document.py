"""Versioned JSON documents: the envelope every autotm-core file shares.

Every file is one JSON object whose ``"format"`` says what it is (e.g.
``"autotm-core/graph"``) and whose ``"version"`` is an integer. Readers check
both before reading anything else, and every error names the file, the field
(as a path like ``kernels[12].inputs[0]``) and the problem. Only JSON is ever
parsed: a file can never run code.
"""

from __future__ import annotations

import builtins
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from autotm_core.errors import FormatError

FORMAT_PREFIX = "autotm-core/"


class Fields:
    """Typed access to the fields of a parsed document, with errors that name the field."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, where: str, problem: str) -> FormatError:
        """An error about field ``where``."""
        place = f"{self.origin}: {where}" if where else self.origin
        return FormatError(f"{place}: {problem}")

    def object(self, value: object, where: str) -> Mapping[str, Any]:
        """``value`` as a JSON object."""
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_describe(value)}")
        return value

    def list(self, value: builtins.object, where: str) -> builtins.list[Any]:
        """``value`` as a JSON array."""
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, got {_describe(value)}")
        return value

    def get(
        self,
        obj: Mapping[str, Any],
        key: str,
        where: str,
        kind: type | tuple[type, ...],
        *,
        required: bool = True,
        default: Any = None,
    ) -> Any:
        """Field ``key`` of ``obj``, checked to be of ``kind``.

        ``bool`` never passes as a number.
        """
        path = f"{where}.{key}" if where else key
        if key not in obj or (not required and obj[key] is None):
            if required:
                raise self.fail(path, "is missing")
            return default
        value = obj[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(path, f"expected {_names(kinds)}, got {_describe(value)}")
        if not isinstance(value, kinds):
            raise self.fail(path, f"expected {_names(kinds)}, got {_describe(value)}")
        return value

    def entries(
        self, doc: Mapping[str, Any], key: str, allowed: set[str], *, required: bool = True
    ) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """``(where, object)`` for each object of the list ``doc[key]``, each checked to be an
        object with no field outside ``allowed`` (an absent optional list has none)."""
        items = self.get(doc, key, "", list, required=required, default=[])
        for i, raw in enumerate(items):
            where = f"{key}[{i}]"
            obj = self.object(raw, where)
            self.unknown_keys(obj, allowed, where)
            yield where, obj

    def unknown_keys(self, obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
        """Reject keys the format does not define (catches typos such as ``nbyte``)."""
        extra = sorted(set(obj) - allowed)
        if extra:
            raise self.fail(
                where or "(top level)",
                f"unknown field {extra[0]!r}; the fields are {', '.join(sorted(allowed))}",
            )


def _names(kinds: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", float: "a number", list: "a list",
             dict: "an object", bool: "true or false"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def read_document(
    path: str | os.PathLike[str], kind: str, versions: set[int]
) -> tuple[Mapping[str, Any], Fields]:
    """Parse ``path``, check it is an ``autotm-core/<kind>`` document of a known version."""
    origin = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(f"{origin}: no such file", hint="check the path") from None
    except IsADirectoryError:
        raise FormatError(f"{origin}: is a folder, not a file", hint="give a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(f"{origin}: cannot be read: {exc}") from None
    return parse_document(text, origin, kind, versions)


def parse_document(
    text: str, origin: str, kind: str, versions: set[int]
) -> tuple[Mapping[str, Any], Fields]:
    """As :func:`read_document`, for text already in memory."""
    fields = Fields(origin)
    if not text.strip():
        raise fields.fail("", "is empty; expected a JSON object")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        why = "ends too early (truncated?)" if truncated else exc.msg
        raise fields.fail(
            "", f"is not valid JSON: {why} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:  # the decoder recurses once per level of nesting
        raise fields.fail("", "is nested too deeply to be an autotm-core file") from None
    doc = fields.object(data, "(top level)")
    expected = FORMAT_PREFIX + kind
    found = doc.get("format")
    if found != expected:
        if isinstance(found, str) and found.startswith(FORMAT_PREFIX):
            raise fields.fail(
                "format", f"is a {found[len(FORMAT_PREFIX):]} file; expected a {kind} file"
            )
        raise fields.fail("format", f"is {found!r}; expected {expected!r}")
    version = doc.get("version")
    if isinstance(version, bool) or version not in versions:
        raise fields.fail(
            "version",
            f"{version!r} is not supported; this autotm-core reads "
            f"{kind} versions {', '.join(map(str, sorted(versions)))}",
        )
    return doc, fields


def envelope(kind: str, version: int) -> dict[str, Any]:
    """The first two fields of an ``autotm-core/<kind>`` document."""
    return {"format": FORMAT_PREFIX + kind, "version": version}


def write_document(path: str | os.PathLike[str], document: Mapping[str, Any]) -> None:
    """Write ``document`` as JSON, atomically: readers never see a half-written file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, separators=(",", ":"))
            handle.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
