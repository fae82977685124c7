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


def test_a_formulation_given_twice_must_agree() -> None:
    from autotm_core.ilp.fitting import plan_with_addresses
    from autotm_core.ilp.options import Formulation, FormulationOptions, options_of

    static = FormulationOptions(formulation=Formulation.STATIC)
    assert options_of(None, None).formulation is Formulation.SYNCHRONOUS
    assert options_of(None, "static") == static
    assert options_of(static, "static") is static and options_of(static, None) is static
    graph = training_chain(2)
    system = preset("optane-2019")
    for call in (plan_graph, plan_with_addresses):
        with pytest.raises(UsageError, match="given twice and they differ: 'synchronous'"):
            call(graph, system, options=static, formulation="synchronous")


@pytest.mark.highs
def test_a_solution_that_rounded_overfills_a_pool_is_no_plan(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.baselines.blocks import MIB, blocks

    import autotm_core.ilp.decode as decode
    from autotm_core.costs import roofline_costs
    from autotm_core.errors import NoPlanFoundError
    from autotm_core.ilp.formulation import build_program
    from autotm_core.ilp.lp import to_matrix_problem
    from autotm_core.ilp.options import FormulationOptions
    from autotm_core.planning import PlanSettings, load_problem, plan
    from autotm_core.plans import verify_plan
    from autotm_core.solvers import SolverConfig

    problem = load_problem(blocks(3, nbytes=4 * MIB), "gpu-h200", limit="1:1")
    graph, system = problem.graph, problem.limited_system
    # the rounded values' occupancy against the rows' bounds
    index = build_program(graph, problem.costs, system, options=FormulationOptions(page_nbytes=1))
    _, values = HighsSolver().solve(to_matrix_problem(index.lp), SolverConfig(relative_gap=0.01))
    assert values is not None
    settled = decode.settled_values(index, values)
    assert decode.overfilled(index, settled) is None
    h = 7  # kernel 3 runs
    column = index.occupancy_vars[0][h]
    index.lp.var_ub[column] = settled[column] - 5 / index.nbytes_per_unit
    assert decode.overfilled(index, settled) == (0, 3, pytest.approx(5.0))
    # such a solution is not a plan: the stage gives none, and the chain answers with a plan
    # it holds (bytes counted one by one, the static model of these blocks did this once)
    monkeypatch.setattr(decode, "overfilled", lambda index, settled: (0, 3, 2.0))
    with pytest.raises(NoPlanFoundError, match=r"2 bytes over its limit at kernel .*tolerance"):
        plan_graph(graph, system, costs=roofline_costs(graph, system),
                   options=FormulationOptions(page_nbytes=1))
    outcome = plan(problem, "synchronous", PlanSettings(addresses=False, recompute=False))
    assert verify_plan(outcome.plan, graph, system) == []
    assert "integrality tolerance" in outcome.note
