"""The library API of the exact ILP planner: graph and memory system in, verified plan out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from autotm_core.costs.model import KernelCosts
from autotm_core.ilp.infeasible import check_lower_bounds
from autotm_core.ilp.options import Formulation, FormulationOptions, options_of
from autotm_core.ilp.search.budget import Budget
from autotm_core.ilp.search.events import Listener, ignore
from autotm_core.ilp.search.model import EXACT_STEPS, ModelSearch, PlanResult, check_objective
from autotm_core.ilp.search.runner import run_steps
from autotm_core.ilp.search.strategy import DEFAULT_STRATEGY, Strategy
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans.model import Plan
from autotm_core.solvers.base import DEFAULT_SOLVER, Solver


def plan_graph(
    graph: Graph,
    system: MemorySystem,
    *,
    fast_capacity_nbytes: int | None = None,
    formulation: Formulation | str | None = None,
    solver: Solver | None = None,
    time_limit_seconds: float | None = None,
    relative_gap: float = 0.01,
    costs: KernelCosts | None = None,
    options: FormulationOptions | None = None,
    warm_start: bool = True,
    start_plans: Sequence[Plan] = (),
    log_to_terminal: bool = False,
    budget: Budget | None = None,
    fits: Callable[[Plan], bool] | None = None,
    strategy: Strategy = DEFAULT_STRATEGY,
    listener: Listener = ignore,
    make_greedy: bool = True,
) -> PlanResult:
    """Plan ``graph`` on ``system`` by ILP; the plan is verified and simulated.

    ``fast_capacity_nbytes`` overrides the fastest pool's capacity. ``options``
    (when given) carries the formulation; ``formulation`` too is a :class:`UsageError` when
    the two differ. ``solver`` is the backend every solve runs on
    (the default plugin's when ``None``). Raises :class:`CapacityError` when no plan fits
    (saying which kernel and the smallest capacity that could), :class:`SolverError` when
    the solver finds no plan or the plan's simulated time exceeds the model's objective
    for it (see :func:`check_objective`), and
    :class:`~autotm_core.ilp.search.runner.SearchInterrupted` on Ctrl-C outside the solver
    (an interrupted solve's plan is returned, its termination ``interrupted``).

    With ``warm_start`` and a solver that takes starting solutions, the solver starts from
    the best of relax-and-fix's solution, ``start_plans`` (e.g. a simpler formulation's
    plan, a neighbouring capacity's in a sweep, the previous round of address fitting)
    that the model can express, and greedy's plan (unless not ``make_greedy``). The steps
    are :data:`~autotm_core.ilp.search.model.EXACT_STEPS`, their knobs ``strategy``'s.

    ``time_limit_seconds`` bounds the whole call; ``budget`` (when given) wins over it: a
    deadline shared with the caller's other work, where this call records its phases.
    ``fits`` (when given) is a test the caller will hold the plan to (that its tensors pack
    at addresses): a retimed start that fails it is not used, windows hold each gain to it
    when it is quick, and when the plan still fails it the fastest of the windows' earlier
    incumbents that passes is returned instead while the time limit lasts.
    """
    from autotm_core.costs import resolve_costs
    from autotm_core.ilp.options import resolve_capacities
    from autotm_core.plugins import get_solver

    if fast_capacity_nbytes is not None:
        system = system.with_capacity(system.fast.name, int(fast_capacity_nbytes))
    options = options_of(options, formulation)
    check_lower_bounds(graph, system, resolve_capacities(graph, system, options.capacities),
                       options)
    state = ModelSearch(
        graph=graph, system=system,
        costs=costs if costs is not None else resolve_costs(graph, system), options=options,
        solver=solver if solver is not None else get_solver(DEFAULT_SOLVER),
        relative_gap=relative_gap, strategy=strategy,
        budget=budget if budget is not None else Budget.of(
            time_limit_seconds, min_solve_seconds=strategy.min_solve_seconds,
            grace_seconds=strategy.grace_seconds(time_limit_seconds),
            answer_seconds=strategy.answer_seconds),
        listener=listener, start_plans=tuple(start_plans), fits=fits, warm_start=warm_start,
        log_to_terminal=log_to_terminal, make_greedy=make_greedy)
    run_steps(EXACT_STEPS, state, budget=state.budget, listener=listener)
    assert state.checked is not None  # the check step always runs last
    return state.checked


__all__ = ["PlanResult", "check_objective", "plan_graph"]
