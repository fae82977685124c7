"""Small Pyomo MILPs with known optima, shared by the solver tests."""

from __future__ import annotations

import random

import pyomo.environ as pyo


def knapsack() -> pyo.ConcreteModel:
    """Maximise value under a weight limit; 0/1 items."""
    values = [60, 100, 120, 80, 30]
    weights = [10, 20, 30, 15, 5]
    model = pyo.ConcreteModel(name="knapsack")
    model.take = pyo.Var(range(5), domain=pyo.Binary)
    model.value = pyo.Objective(expr=sum(v * model.take[i] for i, v in enumerate(values)),
                                sense=pyo.maximize)
    model.weight = pyo.Constraint(expr=sum(w * model.take[i] for i, w in enumerate(weights)) <= 50)
    return model


def knapsack_optimum() -> float:
    """The knapsack's optimum by enumerating all 32 choices."""
    values = [60, 100, 120, 80, 30]
    weights = [10, 20, 30, 15, 5]
    best = 0
    for mask in range(32):
        chosen = [i for i in range(5) if mask >> i & 1]
        if sum(weights[i] for i in chosen) <= 50:
            best = max(best, sum(values[i] for i in chosen))
    return float(best)


ASSIGNMENT_COSTS = [[9, 2, 7, 8], [6, 4, 3, 7], [5, 8, 1, 8], [7, 6, 9, 4]]


def assignment() -> pyo.ConcreteModel:
    """Assign 4 workers to 4 jobs at least cost, with an objective constant."""
    n = len(ASSIGNMENT_COSTS)
    model = pyo.ConcreteModel(name="assignment")
    model.x = pyo.Var(range(n), range(n), domain=pyo.Binary)
    model.cost = pyo.Objective(expr=10 + sum(
        ASSIGNMENT_COSTS[i][j] * model.x[i, j] for i in range(n) for j in range(n)))
    model.worker = pyo.Constraint(range(n), rule=lambda m, i: sum(m.x[i, j] for j in range(n)) == 1)
    model.job = pyo.Constraint(range(n), rule=lambda m, j: sum(m.x[i, j] for i in range(n)) == 1)
    return model


def assignment_optimum() -> float:
    """The assignment's optimum by enumerating the 24 permutations."""
    import itertools

    n = len(ASSIGNMENT_COSTS)
    return 10.0 + min(sum(ASSIGNMENT_COSTS[i][p[i]] for i in range(n))
                      for p in itertools.permutations(range(n)))


def infeasible() -> pyo.ConcreteModel:
    """Two binaries that must sum to 3."""
    model = pyo.ConcreteModel(name="infeasible")
    model.x = pyo.Var(range(2), domain=pyo.Binary)
    model.obj = pyo.Objective(expr=model.x[0])
    model.sum = pyo.Constraint(expr=model.x[0] + model.x[1] >= 3)
    return model


def facility_location(n_facilities: int, n_customers: int, *, seed: int = 0) -> pyo.ConcreteModel:
    """Capacitated facility location: hard for its size (HiGHS needs minutes at 50 x 100)."""
    rng = random.Random(seed)
    facilities, customers = range(n_facilities), range(n_customers)
    demand = [rng.randint(5, 35) for _ in customers]
    capacity = [rng.randint(150, 300) for _ in facilities]
    fixed = [rng.randint(200, 600) for _ in facilities]
    cost = [[rng.randint(1, 100) for _ in customers] for _ in facilities]
    model = pyo.ConcreteModel(name=f"facility_location_{n_facilities}x{n_customers}")
    model.x = pyo.Var(facilities, customers, domain=pyo.Binary)
    model.y = pyo.Var(facilities, domain=pyo.Binary)
    model.obj = pyo.Objective(
        expr=sum(fixed[i] * model.y[i] for i in facilities)
        + sum(cost[i][j] * model.x[i, j] for i in facilities for j in customers))
    model.assign = pyo.Constraint(
        customers, rule=lambda m, j: sum(m.x[i, j] for i in facilities) == 1)
    model.capacity = pyo.Constraint(
        facilities, rule=lambda m, i: sum(demand[j] * m.x[i, j] for j in customers)
        <= capacity[i] * m.y[i])
    model.link = pyo.Constraint(facilities, customers, rule=lambda m, i, j: m.x[i, j] <= m.y[i])
    return model
