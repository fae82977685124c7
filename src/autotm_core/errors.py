"""The exception hierarchy of autotm-core.

Every error the library raises on purpose derives from :class:`AutotmError`.
Each carries a message that says what is wrong and, where it can, a ``hint``
that says what to do. The command line catches :class:`AutotmError`, prints the
message and the hint on one line each, and exits non-zero: a traceback that
reaches a user is a bug.

Plugin API: plugins may import every name of ``__all__``.
"""

from __future__ import annotations

from collections.abc import Sequence


class AutotmError(Exception):
    """Base class of every error autotm-core raises on purpose."""

    default_hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = self.default_hint if hint is None else hint

    def __str__(self) -> str:
        return self.message


class GraphError(AutotmError):
    """A graph violates an invariant of the IR (see :func:`autotm_core.verify_graph`)."""

    default_hint = "fix the graph (or the frontend that produced it) and load it again"

    def __init__(
        self, message: str, *, problems: Sequence[str] = (), hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.problems: tuple[str, ...] = tuple(problems)


class MemorySystemError(AutotmError):
    """A memory system is inconsistent (bad bandwidth, duplicate pool, ...)."""

    default_hint = "see docs/formats.md for the memory-system fields and their units"


class FormatError(AutotmError):
    """A file is malformed, truncated, of the wrong kind or of an unsupported version."""

    default_hint = "see docs/formats.md for the file formats"


class PluginError(AutotmError):
    """A plugin could not be found, loaded or used."""

    default_hint = "run 'python -m autotm_core plugins' to see what is installed and why"


class UsageError(AutotmError):
    """A command-line or API argument is out of range or malformed."""


class CapacityError(AutotmError):
    """No placement can respect the capacity of a pool."""


class PlanError(AutotmError):
    """A plan violates a rule of the memory system or of the graph."""

    def __init__(
        self, message: str, *, problems: Sequence[str] = (), hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.problems: tuple[str, ...] = tuple(problems)


class SolverError(AutotmError):
    """A solver is unavailable, failed, or returned something unusable."""


class SolveInterruptedError(SolverError):
    """The user interrupted a solve (Ctrl-C) before the solver found any solution."""


class ExecutionError(AutotmError):
    """A plan cannot be carried out on this machine (arena, copy or replay failure)."""


class NumaError(ExecutionError):
    """A NUMA node is missing or not allowed, or binding memory to it failed."""


def summarize_problems(what: str, problems: Sequence[str], *, shown: int = 5) -> str:
    """One line that counts ``problems`` and quotes the first ``shown`` of them."""
    count = len(problems)
    head = "; ".join(problems[:shown])
    more = f" (+{count - shown} more)" if count > shown else ""
    noun = "problem" if count == 1 else "problems"
    return f"{what}: {count} {noun}: {head}{more}"


__all__ = [
    "AutotmError",
    "CapacityError",
    "ExecutionError",
    "FormatError",
    "GraphError",
    "MemorySystemError",
    "NumaError",
    "PlanError",
    "PluginError",
    "SolveInterruptedError",
    "SolverError",
    "UsageError",
    "summarize_problems",
]
