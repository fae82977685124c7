"""CBC as a program run through Pyomo's shell interface, on a Pyomo model of the problem.

The problem becomes a Pyomo model (:func:`~autotm_core.solvers.pyomo.to_pyomo`),
which Pyomo writes for the ``cbc`` program and reads the solution of.

The binary comes from a Python package first (PuLP's wheel ships CBC 2.10;
cbcbox's is also found), then from ``PATH`` (e.g. Debian's coinor-cbc). On a
5,000-binary model with a 20 s limit PuLP's CBC 2.10.3 found a plan within 8%
of the bound while cbcbox's development build found none, hence the order.
CBC gets its own wall-clock limit; Pyomo's outer guard, which kills the
program, sits 20% (plus a few seconds) above it because CBC overshoots.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import attrs

from autotm_core.errors import SolveInterruptedError, SolverError
from autotm_core.solvers.base import (
    MatrixProblem,
    SolverCapabilities,
    SolverConfig,
    SolveResult,
    TerminationCondition,
    native_result,
)

log = logging.getLogger(__name__)

GUARD_FACTOR = 1.2
"""Pyomo's kill guard is this many times CBC's own limit, plus ``GUARD_EXTRA_SECONDS``."""
GUARD_EXTRA_SECONDS = 5.0
"""Slack added to the guard for CBC's start-up and solution writing."""

_TERMINATION_BY_PYOMO = {
    "optimal": TerminationCondition.OPTIMAL,
    "maxTimeLimit": TerminationCondition.TIME_LIMIT,
    "maxIterations": TerminationCondition.ITERATION_LIMIT,
    "maxEvaluations": TerminationCondition.ITERATION_LIMIT,
    "infeasible": TerminationCondition.INFEASIBLE,
    "unbounded": TerminationCondition.UNBOUNDED,
    "infeasibleOrUnbounded": TerminationCondition.INFEASIBLE_OR_UNBOUNDED,
    "userInterrupt": TerminationCondition.INTERRUPTED,
    "intermediateNonInteger": TerminationCondition.TIME_LIMIT,
    "error": TerminationCondition.ERROR,
    "solverFailure": TerminationCondition.ERROR,
    "internalSolverError": TerminationCondition.ERROR,
}
"""Pyomo's legacy termination condition (by name) -> ours; anything else is UNKNOWN."""


def _package_binaries() -> list[Path]:
    """CBC programs shipped inside installed Python packages, preferred first."""
    found = []
    machine = platform.machine().lower()
    system = {"linux": "linux", "darwin": "osx", "win32": "win"}.get(sys.platform, sys.platform)
    arch = "arm64" if machine in ("arm64", "aarch64") else "i64" if sys.maxsize > 2**32 else "i32"
    exe = "cbc.exe" if system == "win" else "cbc"
    for package, parts in (("pulp", ("solverdir", "cbc", system, arch, exe)),
                           ("cbcbox", ("cbc_dist", "bin", exe))):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            found.append(Path(next(iter(spec.submodule_search_locations)), *parts))
    return found


def find_cbc() -> Path | None:
    """The CBC program to run: a package's first, then ``PATH``'s; ``None`` if none."""
    for path in _package_binaries():
        if path.is_file() and os.access(path, os.X_OK):
            return path
    on_path = shutil.which("cbc")
    return Path(on_path) if on_path else None


@attrs.frozen
class CbcSolver:
    """The COIN-OR CBC MILP solver; see the module docstring."""

    name: str = "cbc"
    """Entry-point name."""
    description: str = "COIN-OR CBC (program from PuLP's wheel or PATH; warm start)"
    """One line for ``plugins``."""
    capabilities: ClassVar[SolverCapabilities] = SolverCapabilities(
        mip=True, warm_start=True, interrupt=False, duals=False)
    """Mixed-integer programs and warm starts; Ctrl-C loses its solution, no duals."""

    def unavailable_reason(self) -> str | None:
        """Why CBC cannot run here, or ``None``."""
        if find_cbc() is None:
            return ("no CBC program found: pip install 'autotm-core[cbc]' (PuLP ships one), "
                    "or put a 'cbc' program on PATH")
        return None

    def solve(self, problem: MatrixProblem, config: SolverConfig | None = None,
              start: Any = None) -> tuple[SolveResult, Any]:
        """Solve ``problem`` with CBC (see :meth:`autotm_core.solvers.Solver.solve`)."""
        import numpy as np
        from pyomo.common.errors import ApplicationError
        from pyomo.opt import SolverFactory

        from autotm_core.solvers.pyomo import to_pyomo

        config = SolverConfig() if config is None else config
        executable = find_cbc()
        if executable is None:
            raise SolverError("CBC cannot run here", hint=self.unavailable_reason())
        started = time.perf_counter()
        model = to_pyomo(problem)
        warm = config.warm_start and start is not None and _set_start(model, start)
        opt = SolverFactory("cbc", executable=str(executable))
        opt.options["ratioGap"] = float(config.relative_gap)
        guard = None
        if config.time_limit_seconds is not None:
            opt.options["sec"] = float(config.time_limit_seconds)
            guard = GUARD_FACTOR * config.time_limit_seconds + GUARD_EXTRA_SECONDS
        if config.threads is not None:
            opt.options["threads"] = config.threads
        opt.options.update(config.options)
        log_fd, log_path = tempfile.mkstemp(prefix="autotm-cbc-", suffix=".log")
        os.close(log_fd)
        solve_started = time.perf_counter()
        try:
            try:
                results = opt.solve(model, tee=config.log_to_terminal, load_solutions=False,
                                    warmstart=warm, timelimit=guard, logfile=log_path)
            except ApplicationError as exc:
                if guard is None or time.perf_counter() - solve_started < guard:
                    raise SolverError(f"CBC failed on model {problem.name!r}: {exc}",
                                      hint="run with log_to_terminal=True to see CBC's log",
                                      ) from exc
                results = None
            except KeyboardInterrupt as exc:
                raise SolveInterruptedError(
                    "CBC was interrupted (Ctrl-C); its best solution is not recoverable",
                    hint="use the highs solver, which keeps its best plan on Ctrl-C",
                ) from exc
            solved = time.perf_counter()
            log_text = Path(log_path).read_text(encoding="utf-8", errors="replace")
        finally:
            os.unlink(log_path)
        result = _result(problem, model, results, log_text=log_text, version=_version(opt))
        values = None
        if result.has_solution:
            values = np.array([math.nan if v.value is None else float(v.value)
                               for v in model.x.values()])
            values = np.where(np.isnan(values), np.clip(0.0, problem.col_lower,
                                                        problem.col_upper), values)
        result = attrs.evolve(
            result, handoff_seconds=time.perf_counter() - started - (solved - solve_started),
            solve_seconds=solved - solve_started)
        return result, values


def _set_start(model: Any, start: Any) -> bool:
    """Set ``model.x`` to the known values of ``start`` (NaN: unknown); whether any was."""
    known = False
    for var, value in zip(model.x.values(), start, strict=True):
        if value == value:  # not NaN
            var.set_value(float(value), skip_validation=True)
            known = True
    return known


def _version(opt: Any) -> str:
    version = opt.version()
    return ".".join(str(part) for part in version) if version else ""


def _result(problem: MatrixProblem, model: Any, results: Any, *, log_text: str,
            version: str) -> SolveResult:
    """Map Pyomo's results and load the solution, if any, into ``model``."""
    from pyomo.core import Objective, value
    from pyomo.opt import SolutionStatus as PyomoSolutionStatus

    if results is None:  # the outer guard killed CBC: its time ran out without a word
        return native_result(problem, solver_name="cbc", solver_version=version,
                             termination=TerminationCondition.TIME_LIMIT, has_solution=False,
                             objective=None, best_bound=None, log=log_text,
                             message="killed after the time limit")
    native = str(results.solver.termination_condition)
    termination = _TERMINATION_BY_PYOMO.get(native, TerminationCondition.UNKNOWN)
    has_solution = len(results.solution) > 0 and results.solution(0).status in (
        PyomoSolutionStatus.optimal, PyomoSolutionStatus.feasible)
    objective = best_bound = None
    if has_solution:
        model.solutions.load_from(results)
        active = next(model.component_data_objects(Objective, active=True))
        objective = value(active)
        bound = results.problem.lower_bound if active.is_minimizing() else \
            results.problem.upper_bound
        best_bound = float(bound) if bound is not None and abs(float(bound)) != float("inf") \
            else None
        if termination is TerminationCondition.OPTIMAL and best_bound is None:
            best_bound = objective
    return native_result(problem, solver_name="cbc", solver_version=version,
                         termination=termination, has_solution=has_solution,
                         objective=objective, best_bound=best_bound, log=log_text,
                         message=native)
