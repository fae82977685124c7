"""Entry point of the command line: argument parsing, dispatch and error handling.

Each command lives in its own module under :mod:`autotm_core.cli` and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(args, console) -> int``. Any :class:`~autotm_core.errors.AutotmError`
becomes one line on stderr plus a hint; an unexpected exception is reported the
same way (the traceback only with ``--debug``).

Exit statuses (:mod:`autotm_core.errors` says which error is which): 0 done;
2 a usage error (:class:`~autotm_core.errors.UsageError`, or argparse's own: the
command was invoked wrongly); 1 a refused input (any other
:class:`~autotm_core.errors.AutotmError`: the command is well formed, what it
points at is refused); 130 interrupted; 3 an internal error. A command's handler
may return 1 itself for a negative answer (``verify`` of an invalid plan).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from rich.console import Console

from autotm_core.cli.stderr import ConsoleLogHandler, stderr_console
from autotm_core.errors import AutotmError, SolveInterruptedError

COMMANDS = (
    "info", "plugins", "verify", "simulate", "solve", "baseline", "import", "run", "profile",
    "calibrate", "sweep", "compare", "explain", "plot", "export_policy",
)
"""Modules of :mod:`autotm_core.cli` that define a command (``NAME_command``), in the order
--help lists them; a command's name is its module's with dashes (``export-policy``)."""


def build_parser() -> argparse.ArgumentParser:
    """The full parser, every command registered."""
    from autotm_core import __version__

    parser = argparse.ArgumentParser(
        prog=_program_name(),
        description=(
            "Plan where every tensor of a deep-learning program lives in a heterogeneous "
            "memory system (fast DRAM/HBM vs slow PMM/CXL/host memory), and when it moves."
        ),
        epilog="Run 'python -m autotm_core COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"autotm-core {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"autotm_core.cli.{name}_command").register(subparsers)
    return parser


def _program_name() -> str:
    """How the user ran us: ``autotm-core`` (the script) or ``python -m autotm_core``."""
    from pathlib import Path

    invoked = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return "autotm-core" if invoked.startswith("autotm-core") else "python -m autotm_core"


def entry() -> NoReturn:
    """The process's entry point (``python -m autotm_core``, ``autotm-core``): :func:`main`,
    then exit with its status. After Ctrl-C, or when a solve this process abandoned still
    runs, it leaves at once (``os._exit``), what it had to write written and flushed:
    freeing a large model's objects would take seconds more (Inception v4's asynchronous
    model: 2-3 s), and HiGHS's threads abort the process when the interpreter finalizes
    under them."""
    import logging
    import os

    status = main()
    from autotm_core.solvers.highs import abandoned_still_running

    if status == 130 or abandoned_still_running():
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    raise SystemExit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (130 on Ctrl-C, whenever it comes)."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # while starting up, before any work: nothing to keep
        Console(stderr=True, highlight=False).print("[bold red]interrupted[/]")
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(_joined_negative_values(sys.argv[1:] if argv is None else argv))
    stderr_console.cache_clear()  # this command's console: its width read now
    logging.basicConfig(
        level=logging.DEBUG if args.debug else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        handlers=[ConsoleLogHandler()],
    )
    console = Console()

    def command() -> int:
        from autotm_core.cli.options import check_outputs
        from autotm_core.solvers.highs import abandon_on_interrupt

        check_outputs(args)  # before any work, so that none is lost
        # Ctrl-C ends the command, and a time limit is the user's deadline: a solver that
        # does not stop within a second of either is left behind
        with abandon_on_interrupt(ABANDON_SECONDS, overruns=True):
            return int(args.handler(args, console) or 0)

    return run_reporting_errors(command, debug=args.debug)


ABANDON_SECONDS = 1.0
"""After Ctrl-C, or past its time limit and grace, a solve still running this long later is
abandoned (see
:func:`autotm_core.solvers.highs.abandon_on_interrupt`), so that the command exits within
about two seconds with the best plan it holds."""

RATIO_OPTIONS = ("--ratio", "--ratios", "--limit")
"""Options whose value may start with ``-`` (a negative ratio, to be refused by name)."""


def _joined_negative_values(argv: Sequence[str]) -> list[str]:
    """``--ratio -1:1`` as ``--ratio=-1:1``: argparse would take ``-1:1`` for an option and
    say the value is missing; the ratio's own check then says what is wrong with it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in RATIO_OPTIONS and arg.startswith("-") and ":" in arg:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def run_reporting_errors(action: Callable[[], int | None], *, debug: bool = False) -> int:
    """Run ``action``; the exit status, every error reported the command line's way.

    Ctrl-C (and :class:`~autotm_core.errors.SolveInterruptedError`: a solve interrupted
    before it found a plan worth keeping) is status 130. An
    :class:`~autotm_core.errors.AutotmError` becomes one ``error:`` line and a
    ``hint:`` line (status :attr:`~autotm_core.errors.AutotmError.exit_status`: 2 for a
    usage error, 1 for a refused input; with ``debug``, after its traceback and the one
    of what caused it, e.g. a model's own error a frontend reports), and any other
    exception an ``internal error:`` line (status 3; re-raised with ``debug``).
    """
    errors = Console(stderr=True, highlight=False)
    try:
        return int(action() or 0)
    except SolveInterruptedError as exc:  # Ctrl-C before any plan worth keeping was found
        errors.print(f"[bold red]interrupted:[/] {_escape(exc.message)}", soft_wrap=True)
        if exc.hint:
            errors.print(f"[dim]hint:[/] {_escape(exc.hint)}", soft_wrap=True)
        return 130
    except AutotmError as exc:
        if debug:
            import traceback

            errors.print(_escape("".join(traceback.format_exception(exc)).rstrip()),
                         soft_wrap=True)
        errors.print(f"[bold red]error:[/] {_escape(exc.message)}", soft_wrap=True)
        if exc.hint:
            errors.print(f"[dim]hint:[/] {_escape(exc.hint)}", soft_wrap=True)
        return exc.exit_status
    except KeyboardInterrupt:
        errors.print("[bold red]interrupted[/]")
        return 130
    except Exception as exc:
        if debug:
            raise
        errors.print(
            f"[bold red]internal error:[/] {type(exc).__name__}: {_escape(str(exc))}",
            soft_wrap=True,
        )
        errors.print(
            "[dim]hint:[/] this is a bug in autotm-core;"
            " rerun with --debug and report the traceback"
        )
        return 3


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


if __name__ == "__main__":
    sys.exit(main())
