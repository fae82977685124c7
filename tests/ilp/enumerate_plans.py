"""An independent enumerator of every plan of a formulation on tiny graphs.

It walks every sequence of states of every tensor over its slots (and every
overlapped kernel of a move in the asynchronous formulation), writes each as a
Plan directly, and keeps the fastest that the verifier accepts, timed by the
simulator: neither the model nor its decoder is involved.
"""

from __future__ import annotations

import itertools

from autotm_core.errors import PlanError
from autotm_core.ilp.gadgets import move_sources, states_for, tensor_slots
from autotm_core.ilp.options import Formulation
from autotm_core.plans import Move, MoveKind, Residency, make_plan
from autotm_core.plans.verify import verify_plan
from autotm_core.simulation import simulate


def _tensor_choices(graph, system, ts, formulation):
    states = states_for(len(system.pools))
    static = formulation is Formulation.STATIC
    per_slot = [[s for s in range(len(states))
                 if not (states[s].clean_copy and (slot.writes or static))] for slot in ts.slots]
    for seq in itertools.product(*per_slot):
        timings = []
        for i, tr in enumerate(ts.transitions):
            a, b = states[seq[i]], states[seq[i + 1]]
            options = [None]
            if b.pools - a.pools:
                options += list(tr.async_kernels)
            timings.append(options)
        for times in itertools.product(*timings):
            yield seq, times


def _records(graph, system, ts, seq, times):
    states = states_for(len(system.pools))
    names = [p.name for p in system.pools]
    tensor = graph.tensors[ts.tensor].name
    nbytes = graph.tensors[ts.tensor].nbytes
    opened = {q: ts.slots[0].first for q in states[seq[0]].pools}
    res, moves = [], []
    for i, tr in enumerate(ts.transitions):
        a, b = states[seq[i]], states[seq[i + 1]]
        at = tr.kernel if times[i] is None else times[i]
        end = at - 1 if times[i] is None else at
        for q in a.pools - b.pools:
            res.append(Residency(tensor, names[q], opened.pop(q), end))
        for src, dst, _ in move_sources(system, nbytes, a, b, asynchronous=times[i] is not None):
            moves.append(Move(tensor, names[src], names[dst], at,
                              MoveKind.SYNC if times[i] is None else MoveKind.ASYNC))
            opened[dst] = at
    res += [Residency(tensor, names[q], f, ts.slots[-1].last) for q, f in opened.items()]
    return res, moves


def best_plan_seconds(graph, system, costs, formulation, *, window=15):
    """The smallest simulated step time over every valid plan, or None when none is valid."""
    formulation = Formulation(formulation)
    all_slots = tensor_slots(graph, static=formulation is Formulation.STATIC,
                             asynchronous=formulation is Formulation.ASYNCHRONOUS, window=window)
    per_tensor = [[_records(graph, system, ts, seq, times)
                   for seq, times in _tensor_choices(graph, system, ts, formulation)]
                  for ts in all_slots]
    best = None
    for combo in itertools.product(*per_tensor):
        res = [r for rs, _ in combo for r in rs]
        moves = [m for _, ms in combo for m in ms]
        plan = make_plan(graph, system, residencies=res, moves=moves, planner="enumerate")
        # Timed before it is verified (the verifier costs four times the simulator): a plan
        # no faster than the best so far cannot lower the minimum, valid or not, and is
        # never verified. Which plans count is unchanged: valid, and simulated.
        try:
            seconds = float(simulate(plan, graph, system, costs).step_seconds)
        except PlanError:
            continue  # a valid plan the simulator refuses is skipped as before
        except Exception:
            if not verify_plan(plan, graph, system):
                raise  # a valid plan the simulator cannot time: a failure, as before
            continue  # an invalid plan the simulator was never meant to time
        if best is not None and seconds >= best:
            continue
        if verify_plan(plan, graph, system):
            continue
        best = seconds
    return best
