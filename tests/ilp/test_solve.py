"""The backend a caller names or gives runs every solve of the planner, as its declared
capabilities allow; anything else is refused with one clear error."""

from __future__ import annotations

from typing import ClassVar

import attrs
import pytest

from autotm_core.errors import UsageError
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.planner import plan_graph
from autotm_core.ilp.solve import require
from autotm_core.presets import preset
from autotm_core.solvers import SolverCapabilities
from autotm_core.solvers.highs import HighsSolver


@attrs.define
class Spy:
    """A backend that counts its solves, each done by HiGHS."""

    name: str = "spy"
    description: str = "HiGHS, counted"
    capabilities: ClassVar[SolverCapabilities] = SolverCapabilities(
        mip=True, warm_start=True, interrupt=True, duals=True)
    problems: list = attrs.Factory(list)

    def unavailable_reason(self) -> None:
        return None

    def solve(self, problem, config=None, start=None):
        self.problems.append(problem)
        result, values = HighsSolver().solve(problem, config, start)
        return attrs.evolve(result, solver_name=self.name), values


class ColdSpy(Spy):
    """The same, declaring no warm starts."""

    capabilities: ClassVar[SolverCapabilities] = SolverCapabilities(
        mip=True, warm_start=False, interrupt=False, duals=False)


def _plan(solver):
    graph = training_chain(6)
    return plan_graph(graph, preset("optane-2019"), solver=solver,
                      fast_capacity_nbytes=graph.liveness.peak_nbytes // 3)


@pytest.mark.highs
def test_every_solve_runs_on_the_backend_given() -> None:
    spy = Spy()
    result = _plan(spy)
    assert result.solve.solver_name == "spy"
    # relax-and-fix's LP relaxation and fixed MIP (then the full MIP unless proven)
    assert spy.problems[0].name == "relax-and-fix" and not spy.problems[0].is_integer.any()
    assert len(spy.problems) >= 2
    assert result.step_seconds == pytest.approx(_plan(HighsSolver()).step_seconds, rel=1e-9)


@pytest.mark.highs
def test_relax_and_fix_is_left_out_without_warm_starts() -> None:
    spy = ColdSpy()
    result = _plan(spy)
    assert [p.name for p in spy.problems] == ["chain-6"] and not result.warm_started



def test_a_missing_capability_is_one_line_naming_the_solver_and_what_to_use() -> None:
    require(Spy(), "mip", "duals", purpose="plan approximately", instead="x")
    with pytest.raises(UsageError) as info:
        require(ColdSpy(), "mip", "warm_start", "duals", purpose="plan approximately",
                instead="--solver highs")
    assert str(info.value).splitlines()[0] == (
        "solver 'spy' cannot plan approximately: it lacks starting solutions (capability "
        "'warm_start'), row duals of continuous models (capability 'duals')")
    assert info.value.hint == "use --solver highs"
