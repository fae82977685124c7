"""Versioned JSON documents: the envelope every autotm-core file shares.

Every file is one JSON object whose ``"format"`` says what it is (e.g.
``"autotm-core/graph"``) and whose ``"version"`` is an integer. Readers check
both before reading anything else, and every error names the file, the field
(as a path like ``kernels[12].inputs[0]``) and the problem. Only JSON is ever
parsed: a file can never run code.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

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
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        why = "ends too early (truncated?)" if truncated else exc.msg
        raise fields.fail(
            "", f"is not valid JSON: {why} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except _DuplicateKey as exc:
        raise fields.fail("", f"gives the key {exc.key!r} twice in one object; JSON readers "
                          "disagree on which one counts, so give it once") from None
    except ValueError as exc:  # an integer of over 4,300 digits (Python's limit)
        raise fields.fail("", f"holds a number too long to read ({exc})") from None
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


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: builtins.list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice raises :class:`_DuplicateKey`."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def envelope(kind: str, version: int) -> dict[str, Any]:
    """The first two fields of an ``autotm-core/<kind>`` document."""
    return {"format": FORMAT_PREFIX + kind, "version": version}


def write_document(path: str | os.PathLike[str], document: Mapping[str, Any]) -> None:
    """Write ``document`` as JSON, atomically: readers never see a half-written file."""
    with atomic_output(path) as handle:
        json.dump(document, handle, separators=(",", ":"))
        handle.write("\n")


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file handle whose content replaces ``path`` only when the block ends without error.

    It is written to a temporary file in the same folder, given the mode a new file gets
    under the process's umask (``mkstemp`` would leave 0600), then renamed over ``path``:
    a reader never sees a half-written file, and an interrupted write leaves the old one.
    The folder is created when missing (the command line checks its paths first, with
    :func:`check_output_path`, and creates none).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        if binary:
            with os.fdopen(fd, "wb") as raw:
                yield raw
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as text:
                yield text
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_output_path(path: str | os.PathLike[str], option: str) -> None:
    """One :class:`ResourceError` if ``path`` cannot be written as a file (it is a folder, its
    folder is missing or is not a folder, or either is not writable); checked before any
    work so that none is lost, and no folder is created."""
    from autotm_core.errors import ResourceError

    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise ResourceError(f"{option} {str(path)!r} is a folder, not a file",
                         hint=f"name a file in it, e.g. {option} {target / 'out.json'}")
    if not folder.exists():
        raise ResourceError(f"{option} {str(path)!r}: the folder {str(folder)!r} does not exist",
                         hint="create it first (autotm-core creates no folders) or write "
                         "elsewhere")
    if not folder.is_dir():
        raise ResourceError(f"{option} {str(path)!r}: {str(folder)!r} is not a folder",
                         hint="give a path inside a folder")
    try:  # the one sure test: make a file there (access() says yes to root on /proc)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        os.close(fd)
        os.unlink(probe)
        writable = not target.exists() or os.access(target, os.W_OK)
    except OSError as exc:
        writable, why = False, exc.strerror or str(exc)
    else:
        why = "permission denied"
    if not writable:
        raise ResourceError(f"{option} {str(path)!r} cannot be written ({why.lower()})",
                         hint="write somewhere you may, or change the permissions")
