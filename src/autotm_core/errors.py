"""The exception hierarchy of autotm-core.

Every error the library raises on purpose derives from :class:`AutotmError`.
Each carries a message that says what is wrong and, where it can, a ``hint``
that says what to do. The command line catches :class:`AutotmError`, prints the
message and the hint on one line each, and exits with the error's
:attr:`~AutotmError.exit_status`: a traceback that reaches a user is a bug.

Exit statuses, one rule for every command:

- **2, usage error** (:class:`UsageError`, as argparse's own errors): the command
  was invoked wrongly, and changing the command line is the fix: an option or
  argument value out of range or malformed (``--gap 5``, ``--ratio -1:1``), a
  name that names nothing known (a planner, solver, frontend, example or zoo
  network; a tensor, kernel or experiment the input does not have), an option
  combination refused (``--mode approximate --solver glpk``). A library call
  with such an argument raises the same error.
- **1, refused input** (every other :class:`AutotmError`): the command is well
  formed, but what it points at is refused: a missing, malformed or invalid
  graph, plan, memory-system, cost or grid file; a plan that fails
  verification; a limit no plan fits; a solver that fails; a graph too big for
  this machine; an output path that cannot be written (:class:`ResourceError`).
- **130**: interrupted (Ctrl-C, or :class:`SolveInterruptedError`).
- **3**: an internal error, any other exception: a bug.

A file's contents are never a usage error: a loader that checks a value with a
function raising :class:`UsageError` re-raises it as :class:`FormatError`.

Plugin API: plugins may import every name of ``__all__``.
"""

from __future__ import annotations

from collections.abc import Sequence


class AutotmError(Exception):
    """Base class of every error autotm-core raises on purpose."""

    default_hint: str = ""
    exit_status: int = 1
    """What the command line exits with when this error ends a command (see the module)."""

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
    """A command-line or API argument is out of range, malformed, names nothing known or
    is refused with another (exit status 2); never a problem with a file's contents."""

    exit_status = 2


class SettingError(UsageError):
    """A planning setting is out of range: :attr:`setting` names it as the library spells it
    (the command line names its own option instead) and :attr:`detail` says what is wrong."""

    def __init__(self, setting: str, detail: str, *, hint: str | None = None) -> None:
        super().__init__(f"{setting} {detail}", hint=hint)
        self.setting = setting
        """The setting's field name (``"time_limit_seconds"``)."""
        self.detail = detail
        """What is wrong with its value, after its name."""


class UnknownPluginError(PluginError, UsageError):
    """No plugin of the name asked for is installed: a plugin error that is a usage error
    (exit status 2), as an unknown planner is; an installed plugin that cannot be used is a
    plain :class:`PluginError`."""


class UnknownPresetError(MemorySystemError, UsageError):
    """No memory-system preset of the name asked for: a usage error (exit status 2)."""


class ResourceError(AutotmError):
    """This machine lacks what a well-formed command needs: a place to write a file, memory
    for a graph or model, an optional package, a reachable scheduler."""


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


class NoPlanFoundError(SolverError):
    """The solver stopped (at its time limit) before it found any plan."""


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
    "NoPlanFoundError",
    "NumaError",
    "PlanError",
    "PluginError",
    "ResourceError",
    "SettingError",
    "SolveInterruptedError",
    "SolverError",
    "UnknownPluginError",
    "UnknownPresetError",
    "UsageError",
    "summarize_problems",
]
