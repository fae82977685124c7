"""What the trust tests share: the two checkers compared, the optima of a case, the ILP's plans."""

from __future__ import annotations

import functools
import os
import subprocess
import sys

from autotm_core.costs import KernelCosts, resolve_costs
from autotm_core.errors import AutotmError, CapacityError
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.planning import Outcome, PlanSettings, load_problem, plan
from autotm_core.plans import Plan, verify_plan

from .exhaustive import Optimum, optimum
from .rules import check
from .space import FORMULATIONS
from .tiny import Case, random_case

RELATIVE = 1e-7
"""Times that differ by less than this, relatively, are equal (sums in another order)."""


def describe(plan: Plan) -> str:
    """The plan's records, one per line."""
    lines = [f"  {r}" for r in plan.residencies] + [f"  {m}" for m in plan.moves]
    lines += [f"  configs[{k}] = {row}" for k, row in enumerate(plan.configs)]
    lines.append(f"  capacities = {dict(plan.capacities)}")
    return "\n".join(lines)


def disagreement(plan: Plan, graph: Graph, system: MemorySystem) -> str | None:
    """Why the checker and the project's verifier judge ``plan`` differently, or ``None``."""
    mine = check(plan, graph, system)
    theirs = verify_plan(plan, graph, system)
    if bool(mine) == bool(theirs):
        return None
    if mine:
        said = "the checker refuses it (" + "; ".join(
            f"{v.rule}: {v.message}" for v in mine) + ") but the verifier accepts it"
    else:
        said = "the checker accepts it but the verifier refuses it: " + "; ".join(theirs)
    return f"{said}\n{describe(plan)}"


def at_most(a: float, b: float) -> bool:
    """``a <= b`` up to :data:`RELATIVE`."""
    return a <= b * (1 + RELATIVE)


@functools.lru_cache(maxsize=256)
def case_of(seed: int, pools: int = 2, bounded_slow: bool = False) -> Case:
    """The random case of ``seed`` (cached: several tests look at each); three-pool cases are
    smaller (their search spaces are larger)."""
    if pools == 3:
        return random_case(seed, pools=3, kernels=(3, 4), tensors=(2, 3))
    return random_case(seed, pools=pools, bounded_slow=bounded_slow)


def costs_of(case: Case) -> KernelCosts:
    """The roofline costs of the case."""
    return resolve_costs(case.graph, case.system)


@functools.lru_cache(maxsize=256)
def optima(seed: int, pools: int = 2, bounded_slow: bool = False) -> dict[str, Optimum | None]:
    """The exhaustive optimum of each formulation of a case (``None``: no plan fits)."""
    case = case_of(seed, pools, bounded_slow)
    costs = costs_of(case)
    return {f: optimum(case.graph, case.system, costs, formulation=f) for f in FORMULATIONS}


def ilp_outcome(graph: Graph, system: MemorySystem, formulation: str, *,
                recompute: bool = False, spans: bool = True) -> Outcome | None:
    """The ILP's exact plan at gap 0 without addresses (``None`` on a capacity error), with
    reruns when ``recompute``, with asynchronous copies spanning kernels unless ``spans`` is
    false (the exhaustive optimiser's space: one-kernel copies).

    The limits are given as a per-pool limit over the unbounded system, as a user would.
    Any other error (a plan the verifier refuses, a solver failure) is a test failure.
    """
    limits = ",".join(f"{p.name}={p.capacity_nbytes}" for p in system.pools
                      if p.capacity_nbytes is not None)
    base = system
    for pool in system.pools:
        base = base.with_capacity(pool.name, None)
    problem = load_problem(graph, base, limit=limits or None)
    try:
        return plan(problem, formulation,
                    PlanSettings(mode="exact", addresses=False, relative_gap=0,
                                 recompute=recompute, async_spans=spans))
    except CapacityError:
        return None
    except AutotmError as exc:
        raise AssertionError(f"the ILP ({formulation}) failed: {type(exc).__name__}: "
                             f"{exc}") from exc


def cli(args: list[str], *, timeout: float = 600) -> tuple[int, str]:
    """Run ``python -m autotm_core ARGS``: its exit status and everything it printed."""
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "120"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-m", "autotm_core", *args], env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)
    return done.returncode, done.stdout + done.stderr
