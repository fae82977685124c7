"""Development sessions: ``nox`` runs the tests; ``nox -s lint`` and ``nox -s typecheck`` are optional."""

from __future__ import annotations

import nox

PYPROJECT = nox.project.load_toml("pyproject.toml")
PYTHONS = nox.project.python_versions(PYPROJECT)

nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The test suite (pass pytest options after --, e.g. ``nox -s tests -- -k liveness``)."""
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session(python=PYTHONS[-1], default=False)
def lint(session: nox.Session) -> None:
    """ruff over the sources, tests and benchmarks."""
    session.install("ruff")
    session.run("ruff", "check", "src", "tests", "benchmarks", "noxfile.py")


@nox.session(python=PYTHONS[-1], default=False)
def typecheck(session: nox.Session) -> None:
    """mypy over the package."""
    session.install("-e", ".[typecheck]")
    session.run("mypy")
