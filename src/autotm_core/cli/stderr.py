"""A command's standard error: one console for its warnings, its log records and its spinner.

rich redraws a live display (``solve``'s spinner) around what is printed through the
display's own console; text written to standard error any other way lands on the
spinner's line and is then partly erased by the next redraw. So every warning
(:func:`warn`) and every log record (:class:`ConsoleLogHandler`) of a command prints
through :func:`stderr_console`, the console ``solve``'s spinner runs on.
"""

from __future__ import annotations

import functools
import logging

from rich.console import Console
from rich.markup import escape


@functools.cache
def stderr_console() -> Console:
    """The one console on standard error of the command that runs (made again for each
    command: :func:`~autotm_core.cli.main.main` clears it, so it reads the width then)."""
    return Console(stderr=True)


def warn(lines: list[str]) -> None:
    """Print each of ``lines`` as a ``warning:`` line on standard error."""
    for line in lines:
        stderr_console().print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True,
                               highlight=False)


class ConsoleLogHandler(logging.Handler):
    """Log records, formatted as usual, printed through :func:`stderr_console` (above a
    running spinner, not on its line)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stderr_console().print(self.format(record), markup=False, highlight=False,
                                   soft_wrap=True)
        except Exception:  # as logging.StreamHandler does: a failing record never stops work
            self.handleError(record)


__all__ = ["ConsoleLogHandler", "stderr_console", "warn"]
