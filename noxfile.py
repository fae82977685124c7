"""Development sessions: ``nox`` runs the tests.

``nox -s tests -- -m "not slow"`` is the fast lane (a couple of minutes); CI runs
``nox -s lint typecheck`` and then every test. The linters are pinned, so a new
release of either cannot fail CI on code that did not change.
"""

from __future__ import annotations

import nox

PYPROJECT = nox.project.load_toml("pyproject.toml")
PYTHONS = nox.project.python_versions(PYPROJECT)

nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True

RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The test suite (pass pytest options after --, e.g. ``nox -s tests -- -k liveness``)."""
    session.install("-e", ".[test]")
    # the torch plugin; "+cpu" insists on torch's CPU build, never a multi-GB CUDA one
    session.install("-e", "plugins/autotm-torch[test]", "torch==2.13.0+cpu")
    session.install("-e", "plugins/autotm-onnx")  # the ONNX plugin (pulls onnx)
    # one worker a core, at most 4 (each imports torch): on 2 cores the suite took 15.7 min,
    # against 22-24 min in one process
    session.run(
        "pytest", "tests", "plugins/autotm-torch/tests", "plugins/autotm-onnx/tests",
        "-n", "auto", "--maxprocesses", "4", *session.posargs,
    )


@nox.session(python=PYTHONS[-1], default=False)
def lint(session: nox.Session) -> None:
    """ruff over the sources, tests, benchmarks and plugins."""
    session.install(RUFF)
    session.run("ruff", "check", "src", "tests", "benchmarks", "noxfile.py", "plugins")


@nox.session(python=PYTHONS[-1], default=False)
def typecheck(session: nox.Session) -> None:
    """mypy over the package."""
    session.install("-e", ".", MYPY)
    session.run("mypy")


@nox.session(python=PYTHONS[-1], default=False)
def paper(session: nox.Session) -> None:
    """The paper's evaluation (about 20 min): ``nox -s paper -- --grid full-depth``."""
    session.install("-e", ".[plots]")
    session.run("python", "benchmarks/paper_eval.py", *session.posargs)
