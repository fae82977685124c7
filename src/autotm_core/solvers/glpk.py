"""GLPK through swiglpk's library, in process: no ``glpsol`` program needed.

The problem's arrays are loaded into GLPK directly (no Pyomo model).

GLPK is weak on plan models (no feasible plan at 1,000 kernels in two
minutes), so it refuses models with more than ``max_binaries`` binaries
rather than return a bad plan or none; use ``highs`` for those. It takes no
warm start, and Ctrl-C takes effect only when GLPK returns (at its time limit).
"""

from __future__ import annotations

import importlib.util
import io
import logging
import math
import re
import sys
import time
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

DEFAULT_MAX_BINARIES = 2_000
"""Largest number of binaries GLPK is given by default (see the module docstring)."""

_TERMINATION_BY_RETURN_CODE = {
    "GLP_ETMLIM": TerminationCondition.TIME_LIMIT,
    "GLP_EMIPGAP": TerminationCondition.GAP_REACHED,
    "GLP_ENOPFS": TerminationCondition.INFEASIBLE,
    "GLP_ENODFS": TerminationCondition.INFEASIBLE_OR_UNBOUNDED,
    "GLP_ESTOP": TerminationCondition.INTERRUPTED,
    "GLP_EBOUND": TerminationCondition.ERROR,
    "GLP_EROOT": TerminationCondition.ERROR,
    "GLP_EFAIL": TerminationCondition.ERROR,
}
"""glp_intopt's non-zero return code -> termination condition; anything else is UNKNOWN."""

_BOUND_IN_LOG = re.compile(r"mip\s*=\s*\S+\s*[<>]=\s*([-+0-9.eE]+|tree is empty)")


def _load(glpk: Any, problem: MatrixProblem) -> Any:
    """A GLPK problem object holding ``problem``."""
    import numpy as np

    lp = glpk.glp_create_prob()
    glpk.glp_set_obj_dir(lp, glpk.GLP_MAX if problem.maximize else glpk.GLP_MIN)
    glpk.glp_set_obj_coef(lp, 0, float(problem.offset))
    n_rows, n_cols = problem.n_rows, problem.n_columns
    if n_rows:
        glpk.glp_add_rows(lp, n_rows)
    if n_cols:
        glpk.glp_add_cols(lp, n_cols)
    for i, (lower, upper) in enumerate(zip(np.asarray(problem.row_lower).tolist(),
                                           np.asarray(problem.row_upper).tolist(),
                                           strict=True), 1):
        glpk.glp_set_row_bnds(lp, i, *_bounds(glpk, lower, upper))
    columns = zip(np.asarray(problem.col_lower).tolist(), np.asarray(problem.col_upper).tolist(),
                  np.asarray(problem.cost).tolist(), np.asarray(problem.is_integer).tolist(),
                  strict=True)
    for j, (lower, upper, cost, integer) in enumerate(columns, 1):
        glpk.glp_set_col_bnds(lp, j, *_bounds(glpk, lower, upper))
        glpk.glp_set_obj_coef(lp, j, float(cost))
        if integer:
            glpk.glp_set_col_kind(lp, j, glpk.GLP_IV)
    nnz = problem.n_nonzeros
    row_of = np.repeat(np.arange(1, n_rows + 1), np.diff(problem.start)).tolist()
    rows, cols, vals = glpk.intArray(nnz + 1), glpk.intArray(nnz + 1), glpk.doubleArray(nnz + 1)
    for k, (i, j, v) in enumerate(zip(row_of, np.asarray(problem.index).tolist(),
                                      np.asarray(problem.value).tolist(), strict=True), 1):
        rows[k], cols[k], vals[k] = i, j + 1, v
    glpk.glp_load_matrix(lp, nnz, rows, cols, vals)
    return lp


def _bounds(glpk: Any, lower: float, upper: float) -> tuple[int, float, float]:
    has_lower, has_upper = math.isfinite(lower), math.isfinite(upper)
    if has_lower and has_upper:
        kind = glpk.GLP_FX if lower == upper else glpk.GLP_DB
    elif has_lower:
        kind = glpk.GLP_LO
    elif has_upper:
        kind = glpk.GLP_UP
    else:
        kind = glpk.GLP_FR
    return kind, float(lower) if has_lower else 0.0, float(upper) if has_upper else 0.0


@attrs.frozen
class GlpkSolver:
    """The GLPK MILP solver (swiglpk); see the module docstring."""

    name: str = "glpk"
    """Entry-point name."""
    description: str = f"GLPK via swiglpk (models up to {DEFAULT_MAX_BINARIES} binaries)"
    """One line for ``plugins``."""
    capabilities: ClassVar[SolverCapabilities] = SolverCapabilities(
        mip=True, warm_start=False, interrupt=False, duals=False)
    """Mixed-integer programs (slowly); no warm start, Ctrl-C only when it returns, no duals."""
    max_binaries: int = attrs.field(default=DEFAULT_MAX_BINARIES, validator=attrs.validators.ge(0))
    """Models with more binaries are refused with a :class:`SolverError`."""

    def unavailable_reason(self) -> str | None:
        """Why GLPK cannot run here, or ``None``."""
        if importlib.util.find_spec("swiglpk") is None:
            return "the Python package 'swiglpk' is not installed: pip install 'autotm-core[glpk]'"
        return None

    def solve(self, problem: MatrixProblem, config: SolverConfig | None = None,
              start: Any = None) -> tuple[SolveResult, Any]:
        """Solve ``problem`` with GLPK (see :meth:`autotm_core.solvers.Solver.solve`)."""
        import swiglpk as glpk
        from pyomo.common.tee import TeeStream, capture_output

        config = SolverConfig() if config is None else config
        n_binaries = problem.n_binaries
        if n_binaries > self.max_binaries:
            raise SolverError(
                f"model {problem.name!r} has {n_binaries} binaries, more than GLPK's limit of "
                f"{self.max_binaries}: GLPK finds no usable plan for models this size",
                hint="use --solver highs (the default), or cbc",
            )
        if config.warm_start and start is not None:
            log.debug("GLPK takes no warm start; solving from scratch")
        started = time.perf_counter()
        lp = _load(glpk, problem)
        try:
            parameters = glpk.glp_iocp()
            glpk.glp_init_iocp(parameters)
            parameters.presolve = glpk.GLP_ON
            parameters.mip_gap = float(config.relative_gap)
            parameters.msg_lev = glpk.GLP_MSG_ON
            if config.time_limit_seconds is not None:
                parameters.tm_lim = max(1, int(config.time_limit_seconds * 1000))
            for key, value in config.options.items():
                if not hasattr(parameters, key):
                    raise SolverError(f"GLPK has no MIP option {key!r}",
                                      hint="see glp_iocp in the GLPK reference for the options")
                setattr(parameters, key, value)
            handed_off = time.perf_counter()
            log_stream = io.StringIO()
            interrupted = False
            echo = [sys.stdout] if config.log_to_terminal else []
            with capture_output(output=TeeStream(log_stream, *echo), capture_fd=True):
                try:
                    code = glpk.glp_intopt(lp, parameters)
                except KeyboardInterrupt:
                    interrupted, code = True, glpk.GLP_ESTOP
            solved = time.perf_counter()
            result, values = self._result(glpk, lp, problem, code=code, interrupted=interrupted,
                                          log_text=log_stream.getvalue())
        finally:
            glpk.glp_delete_prob(lp)
        return attrs.evolve(result, handoff_seconds=(handed_off - started)
                            + (time.perf_counter() - solved),
                            solve_seconds=solved - handed_off), values

    def _result(self, glpk: Any, lp: Any, problem: MatrixProblem, *, code: int,
                interrupted: bool, log_text: str) -> tuple[SolveResult, Any]:
        import numpy as np

        names = {getattr(glpk, name): name for name in _TERMINATION_BY_RETURN_CODE}
        mip_status = glpk.glp_mip_status(lp)
        if code == 0:
            termination = (TerminationCondition.INFEASIBLE if mip_status == glpk.GLP_NOFEAS
                           else TerminationCondition.OPTIMAL)
        else:
            termination = _TERMINATION_BY_RETURN_CODE.get(names.get(code, ""),
                                                          TerminationCondition.UNKNOWN)
        has_solution = mip_status in (glpk.GLP_OPT, glpk.GLP_FEAS)
        if interrupted and not has_solution:
            raise SolveInterruptedError(
                "GLPK was interrupted (Ctrl-C) before it found any feasible solution",
                hint="use highs, or set a time limit")
        objective = best_bound = values = None
        if has_solution:
            values = np.array([glpk.glp_mip_col_val(lp, j + 1)
                               for j in range(problem.n_columns)], dtype=np.float64)
            objective = glpk.glp_mip_obj_val(lp)
            best_bound = objective if mip_status == glpk.GLP_OPT else _bound_from_log(log_text)
        return native_result(
            problem, solver_name=self.name, solver_version=glpk.glp_version(),
            termination=termination, has_solution=has_solution, objective=objective,
            best_bound=best_bound, log=log_text,
            message=names.get(code, f"glp_intopt returned {code}, status {mip_status}"),
        ), values


def _bound_from_log(log_text: str) -> float | None:
    """The last bound GLPK printed (``mip = X >= BOUND``); GLPK's API keeps it to callbacks."""
    matches = _BOUND_IN_LOG.findall(log_text)
    if not matches or matches[-1] == "tree is empty":
        return None
    return float(matches[-1])
