"""The model's layout in time: the columns the formulation recorded, the anchors of rows
and of the variables that follow them, and the least-occupancy states."""

from __future__ import annotations

import numpy as np
import pytest

from autotm_core.examples.networks import mlp, training_chain
from autotm_core.ilp.approximate.layout import EDGE, SLOT, model_layout
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.model_index import ColumnKind

from .settings import setting


def test_layout_anchors_follow_the_slots_and_the_least_state_fits():
    graph = training_chain(6)
    _, _, index = setting(graph, 0.3, "synchronous")
    problem = to_matrix_problem(index.lp)
    layout = model_layout(index, problem)
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            assert {int(layout.col_anchor[v]) for v in xs.values()} == {slot.first}
            assert all(layout.kind[v] == SLOT for v in xs.values())
            assert sum(layout.least[v] for v in xs.values()) == 1
        for transition, tr_edges in zip(ts.transitions, edges, strict=True):
            assert all(layout.kind[e.var] == EDGE and layout.col_anchor[e.var] == transition.kernel
                       for e in tr_edges)
    # every row is anchored no earlier than any slot or edge in it
    rows = layout.rows.tocoo()
    structural = (layout.kind == SLOT) | (layout.kind == EDGE)
    on = structural[rows.col]
    assert np.all(layout.row_anchor[rows.row[on]] >= layout.col_anchor[rows.col[on]])


@pytest.mark.parametrize("formulation", ["static", "synchronous", "asynchronous"])
@pytest.mark.parametrize("three", [False, True])
def test_recorded_columns_match_the_index(formulation, three):
    graph = mlp(batch=4, widths=(64, 128, 64, 10))
    _, _, index = setting(graph, 0.4, formulation, three)
    columns = index.columns
    assert columns.kind.size == index.lp.n_vars
    number = 0
    for ts, slot_vars, edges in zip(index.tensors, index.slot_vars, index.edges, strict=True):
        first = number
        for slot, xs in zip(ts.slots, slot_vars, strict=True):
            for state, var in xs.items():
                assert (columns.kind[var], columns.anchor[var], columns.slot[var],
                        columns.state[var]) == (ColumnKind.SLOT, slot.first, number, state)
            number += 1
        for i, (transition, tr_edges) in enumerate(zip(ts.transitions, edges, strict=True)):
            for e in tr_edges:
                assert (columns.kind[e.var], columns.anchor[e.var], columns.slot[e.var],
                        columns.state[e.var], columns.from_state[e.var],
                        bool(columns.asynchronous[e.var])) == (
                    ColumnKind.EDGE, transition.kernel, first + i + 1, e.after, e.before,
                    e.async_kernel is not None)
    assert index.tensor_slots[-1] == number
    for k, var in enumerate(index.kernel_time_vars):
        assert (columns.kind[var], columns.anchor[var]) == (ColumnKind.TIME, k)
    for vars_ in index.occupancy_vars.values():
        for h, var in enumerate(vars_[1:], start=1):
            assert (columns.kind[var], columns.anchor[var]) == (ColumnKind.OCCUPANCY, h // 2)
