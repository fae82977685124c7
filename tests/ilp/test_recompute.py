"""Recomputation in the model: a dropped activation restored by a rerun of its producer.

The model's plans with reruns pass the independent verifier, the simulator prices them at
the model's objective, and recomputing is chosen where it beats keeping or moving."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from autotm_core.costs import KernelCosts, roofline_costs
from autotm_core.ilp.decode import decode_plan, objective_of, settled_values
from autotm_core.ilp.formulation import build_program
from autotm_core.ilp.lp import to_matrix_problem
from autotm_core.ilp.options import Formulation, FormulationOptions
from autotm_core.ilp.planner import check_objective
from autotm_core.ilp.reruns import rerun_options
from autotm_core.ir import Graph, GraphBuilder, TensorKind
from autotm_core.memory import MemorySystem
from autotm_core.plans import Plan, Rerun, verify_plan
from autotm_core.plans.verify_memory import boundary_rerun_use
from autotm_core.presets import preset
from autotm_core.simulation import simulate
from autotm_core.solvers import SolverConfig
from autotm_core.solvers.highs import HighsSolver

MIB = 2**20


def layer_step(*, dropout: bool = False, update_before_backward: bool = False,
               rerun: bool | None = None):
    """x -> a = relu(x) -> c = matmul(a, w) -> loss, then a backward that reads a and c
    late: a (16 MiB, cheap to recompute) has a long gap between its uses."""
    b = GraphBuilder("layer")
    b.tensor("x", nbytes=16 * MIB, kind=TensorKind.INPUT)
    b.tensor("w", nbytes=1 * MIB, kind=TensorKind.PARAMETER)
    b.tensor("a", nbytes=16 * MIB)
    b.tensor("c", nbytes=16 * MIB)
    b.tensor("h", nbytes=32 * MIB)
    b.tensor("dc", nbytes=16 * MIB)
    b.tensor("dw", nbytes=1 * MIB, kind=TensorKind.GRADIENT)
    b.kernel("relu", op="dropout" if dropout else "relu", inputs=["x"], outputs=["a"], flops=1e3,
             rerun=rerun)
    b.kernel("mm", op="matmul", inputs=["a", "w"], outputs=["c"], flops=1e6, rerun=rerun)
    b.kernel("big", op="matmul", inputs=["c"], outputs=["h"], flops=1e6, rerun=rerun)
    if update_before_backward:
        b.kernel("early_update", op="sgd_update", inputs=["w", "x"], outputs=["w"], flops=1e3)
    b.kernel("head_back", op="matmul", inputs=["h", "c"], outputs=["dc"], flops=1e6)
    b.kernel("mm_back", op="matmul", inputs=["dc", "a", "x"], outputs=["dw"], flops=1e6)
    b.kernel("update", op="sgd_update", inputs=["w", "dw"], outputs=["w"], flops=1e3)
    return b.build()


def _solve(graph, formulation: Formulation, limit: int, recompute: bool = True):
    system = preset("gpu-h200").with_capacity("hbm", limit)
    costs = roofline_costs(graph, system)
    options = FormulationOptions(formulation=formulation, recompute=recompute, page_nbytes=1)
    index = build_program(graph, costs, system, options=options)
    result, values = HighsSolver().solve(to_matrix_problem(index.lp),
                                       SolverConfig(relative_gap=1e-6))
    assert values is not None, result
    values = settled_values(index, values)
    plan = decode_plan(index, values, graph, system, planner="test")
    return system, costs, index, values, plan


@pytest.mark.highs
@pytest.mark.parametrize("formulation", list(Formulation))
def test_recomputing_beats_moving_and_its_plan_is_valid_and_priced_exactly(formulation):
    graph = layer_step()
    limit = 66 * MIB  # h and c and dc with x: a cannot stay in HBM over "big"
    system, costs, index, values, plan = _solve(graph, formulation, limit)
    assert verify_plan(plan, graph, system) == []
    simulated = float(simulate(plan, graph, system, costs).step_seconds)
    check_objective(objective_seconds=objective_of(index, values), simulated_seconds=simulated,
                    graph=graph)
    assert simulated == pytest.approx(objective_of(index, values), rel=1e-9)
    relu = graph.kernel_index["relu"]
    assert Rerun(relu, graph.kernel_index["mm_back"]) in plan.reruns
    *_, kept = _solve(graph, formulation, limit, recompute=False)
    assert simulated < float(simulate(kept, graph, system, costs).step_seconds)


def test_random_ops_and_inputs_updated_in_between_give_no_option():
    system = preset("gpu-h200")
    for graph, barred in ((layer_step(dropout=True), "relu"),
                          (layer_step(update_before_backward=True), "mm")):
        costs = roofline_costs(graph, system)
        found = rerun_options(graph, costs, system, FormulationOptions(recompute=True))
        assert all(o.kernel != graph.kernel_index[barred] for o in found.options)
    assert rerun_options(layer_step(), roofline_costs(layer_step(), system), system,
                         FormulationOptions(recompute=False)).options == ()


@pytest.mark.highs
def test_the_verifier_names_what_is_wrong_with_a_rerun():
    graph = layer_step()
    system, _, _, _, plan = _solve(graph, Formulation.SYNCHRONOUS, 66 * MIB)
    assert plan.reruns
    without = attrs.evolve(plan, reruns=())
    problems = verify_plan(without, graph, system)
    assert any("resident in no pool" in p or "no rerun restores it" in p for p in problems)
    # the same plan on a graph where the parameter is updated before the rerun
    updated = layer_step(update_before_backward=True)
    k = updated.kernel_index
    shifted = attrs.evolve(plan, graph=updated.name,
                           reruns=(Rerun(k["mm"], k["mm_back"]),))
    problems = verify_plan(shifted, updated, system)
    assert any("its input 'w' (parameter) was written by" in p for p in problems)
    random = layer_step(dropout=True)
    problems = verify_plan(attrs.evolve(plan, graph=random.name), random, system)
    assert any("may not run again" in p for p in problems)


@pytest.mark.highs
def test_recomputation_off_builds_the_model_of_before():
    graph = layer_step()
    system = preset("gpu-h200").with_capacity("hbm", 66 * MIB)
    costs = roofline_costs(graph, system)
    off = build_program(graph, costs, system, options=FormulationOptions(recompute=False))
    on = build_program(graph, costs, system, options=FormulationOptions(recompute=True))
    assert off.reruns == [] and on.reruns
    assert off.n_variables < on.n_variables
    assert np.all(off.columns.kind != 5)


@pytest.mark.highs
@pytest.mark.parametrize("limit_mib", [40, 66, 90])
def test_the_physical_bound_with_recomputation_is_below_every_recomputing_plan(limit_mib):
    from autotm_core.planning.lower_bound import physical_lower_bound
    from autotm_core.planning.problem import load_problem

    graph = layer_step()
    system, costs, _, _, plan = _solve(graph, Formulation.SYNCHRONOUS, limit_mib * MIB)
    problem = load_problem(graph, preset("gpu-h200"), limit=f"hbm={limit_mib}MiB")
    step = float(simulate(plan, graph, system, costs).step_seconds)
    with_reruns = physical_lower_bound(problem, recompute=True).seconds
    assert with_reruns <= step * (1 + 1e-9)
    assert with_reruns <= physical_lower_bound(problem).seconds * (1 + 1e-9)


@pytest.mark.highs
def test_a_recomputing_plan_is_a_start_of_the_model_at_its_own_objective():
    from autotm_core.ilp.warm import warm_start_from_plan

    graph = layer_step()
    system, _, index, values, plan = _solve(graph, Formulation.SYNCHRONOUS, 66 * MIB)
    assert plan.reruns
    start = warm_start_from_plan(index, plan, graph, system)
    assert start is not None
    assert objective_of(index, start) == pytest.approx(objective_of(index, values), rel=1e-9)


@pytest.mark.highs
def test_a_recomputing_search_is_never_worse_than_checkpointing_every_layer():
    from autotm_core.planning import PlanSettings, load_problem, plan

    # activation-heavy: keeping and moving alone gave 3.11 ms in 2 s, checkpointing 2.25 ms
    problem = load_problem("zoo:gpt2:batch=8,seq=256,layers=2,vocab=1000,width=256,heads=4",
                           "gpu-h200", limit="1:1")
    layers = plan(problem, "checkpoint-layers")
    searched = plan(problem, "synchronous", PlanSettings(time_limit_seconds=2, addresses=False))
    assert PlanSettings().recompute  # recomputation is on by default
    assert searched.step_seconds <= layers.step_seconds * (1 + 1e-9)
    # where recomputing alone fits, the search holds that plan too
    roomy = load_problem("zoo:gpt2:batch=8,seq=256,layers=2,vocab=1000,width=256,heads=4",
                         "gpu-h200", limit="1:2")
    only = plan(roomy, "recompute-only")
    searched = plan(roomy, "synchronous", PlanSettings(time_limit_seconds=2, addresses=False))
    assert searched.step_seconds <= only.step_seconds * (1 + 1e-9)


@pytest.mark.highs
def test_no_recomputing_stage_where_nothing_can_pay_or_nothing_is_recomputable():
    from autotm_core.planning import PlanSettings, load_problem, plan

    def stages(graph: str, limit: str | None, **settings: object) -> set[str]:
        problem = load_problem(graph, "gpu-h200", limit=limit)
        outcome = plan(problem, "synchronous", PlanSettings(addresses=False, **settings))
        return {p.name.split(":")[0] for p in outcome.phases}

    # at 1:1 recomputing can pay; with room for everything the plan held is the bound's
    assert any("recomputing" in s for s in stages("example:cnn", "1:1", time_limit_seconds=5))
    assert not any("recomputing" in s for s in stages("example:cnn", None))
    # nothing may run again: no recomputing model is built
    problem = load_problem(layer_step(rerun=False), "gpu-h200", limit=f"{66 * MIB}B")
    outcome = plan(problem, "synchronous", PlanSettings(addresses=False))
    assert not any("recomputing" in p.name for p in outcome.phases)
    # approximate planning keeps and moves a stretch at a time, holding recomputing plans
    approx = stages("example:cnn", "1:1", mode="approximate", time_limit_seconds=10)
    assert not any("recomputing" in s for s in approx)


@pytest.mark.highs
def test_a_step_that_fits_only_by_dropping_is_not_refused_before_the_model():
    """Both pools bounded, 86 MiB together: keeping everything, 97 MiB are live at
    head_back (a, 16 MiB, among them), so no plan keeps and moves; dropping a there, 81 MiB
    are, and a recomputing plan fits. The checks before the model (the pools together, the
    fastest pool's forced bytes) used to count a and refuse it."""
    from autotm_core.errors import CapacityError
    from autotm_core.ilp.infeasible import check_lower_bounds
    from autotm_core.ilp.options import resolve_capacities

    graph = layer_step()
    system = preset("gpu-h200").with_capacity("hbm", 66 * MIB).with_capacity("host", 20 * MIB)
    capacities = resolve_capacities(graph, system, None)
    with pytest.raises(CapacityError, match="more than all the pools hold"):
        check_lower_bounds(graph, system, capacities, FormulationOptions(recompute=False))
    check_lower_bounds(graph, system, capacities, FormulationOptions(recompute=True))
    costs = roofline_costs(graph, system)
    options = FormulationOptions(formulation=Formulation.SYNCHRONOUS, recompute=True,
                                 page_nbytes=1)
    index = build_program(graph, costs, system, options=options)
    _, values = HighsSolver().solve(to_matrix_problem(index.lp), SolverConfig(relative_gap=1e-6))
    assert values is not None
    plan = decode_plan(index, settled_values(index, values), graph, system, planner="test")
    assert plan.reruns and verify_plan(plan, graph, system) == []


def _checkpointed_blocks() -> tuple[Graph, MemorySystem, KernelCosts, Plan, set[tuple[int, int]]]:
    """Two blocks on gpu-h200, checkpoint-layers' plan of them, and its reruns."""
    from tests.baselines.blocks import blocks

    from autotm_core.baselines import checkpoint_layers

    graph = blocks(2, nbytes=4 * MIB)
    system = preset("gpu-h200")
    costs = roofline_costs(graph, system)
    held = checkpoint_layers(graph, system, costs=costs)
    return graph, system, costs, held, {(r.kernel, r.before) for r in held.reruns}


def test_a_held_plans_reruns_are_options_however_deep_their_chains() -> None:
    from autotm_core.ilp.warm import warm_start_from_plan

    graph, system, costs, held, seeds = _checkpointed_blocks()
    # each block's chain runs scale, shift and gelu again: two producers back from gelu
    shallow = FormulationOptions(recompute=True, recompute_depth=0)
    seeded = attrs.evolve(shallow, rerun_seeds=seeds)
    assert seeded.to_json()["rerun_seeds"] == [list(s) for s in sorted(seeds)]
    before = {(o.kernel, o.before) for o in rerun_options(graph, costs, system, shallow).options}
    after = {(o.kernel, o.before) for o in rerun_options(graph, costs, system, seeded).options}
    assert not seeds <= before and after == before | seeds
    # the model with them expresses the plan, at its own time
    assert warm_start_from_plan(build_program(graph, costs, system, options=shallow), held,
                                graph, system) is None
    index = build_program(graph, costs, system, options=seeded)
    start = warm_start_from_plan(index, held, graph, system)
    assert start is not None
    assert objective_of(index, start) == pytest.approx(
        simulate(held, graph, system, costs).step_seconds, rel=1e-9)
    # a seed whose inputs cannot be had is left out, as any option: shift reads v, which dies
    # in the forward pass, so its rerun needs scale's at the same boundary
    k = graph.kernel_index
    shift = (k["shift0"], k["fc0.backward"])
    assert shift in seeds and shift not in before
    lone = attrs.evolve(shallow, rerun_seeds={shift})
    assert shift not in {(o.kernel, o.before)
                         for o in rerun_options(graph, costs, system, lone).options}


def test_a_model_of_the_held_plans_reruns_only_offers_those_and_expresses_the_plan() -> None:
    from autotm_core.ilp.restrictions import model_restrictions
    from autotm_core.ilp.warm import warm_start_from_plan

    graph, system, costs, held, seeds = _checkpointed_blocks()
    every = FormulationOptions(recompute=True, rerun_seeds=seeds)
    only = attrs.evolve(every, rerun_seeds_only=True)
    assert only.to_json()["rerun_seeds_only"] is True
    assert "rerun_seeds_only" not in every.to_json()
    found = rerun_options(graph, costs, system, only)
    wide = rerun_options(graph, costs, system, every)
    assert {(o.kernel, o.before) for o in found.options} == seeds
    assert len(wide.options) > len(found.options)
    # only what a seed restores may be dropped: the model is smaller
    restored = {t for o in found.options for t in o.outputs}
    assert found.droppable == wide.droppable & restored < wide.droppable
    small = build_program(graph, costs, system, options=only)
    assert small.n_variables < build_program(graph, costs, system, options=every).n_variables
    start = warm_start_from_plan(small, held, graph, system)
    assert start is not None
    assert objective_of(small, start) == pytest.approx(
        simulate(held, graph, system, costs).step_seconds, rel=1e-9)
    # its restriction says which reruns it may choose
    said = model_restrictions(graph, system, costs=costs, options=only)
    assert any(f"chooses among those {len(seeds)} reruns" in line for line in said)
    # solved, its plan reruns only seeds, verifies, and is no slower than the held plan
    _, values = HighsSolver().solve(to_matrix_problem(small.lp),
                                    SolverConfig(time_limit_seconds=30, relative_gap=1e-6),
                                    start=start)
    assert values is not None
    plan = decode_plan(small, settled_values(small, values), graph, system, planner="test")
    assert {(r.kernel, r.before) for r in plan.reruns} <= seeds
    assert verify_plan(plan, graph, system) == []
    assert (simulate(plan, graph, system, costs).step_seconds
            <= simulate(held, graph, system, costs).step_seconds * (1 + 1e-9))


def chain_step() -> Graph:
    """x -> a -> b -> e -> c (four cheap kernels), then two big ones, then a backward reading
    c and x: c (16 MiB) must leave HBM over the big ones, and a rerun chain restoring it
    makes a, b and e (8 MiB each) again, which no later kernel reads."""
    b = GraphBuilder("chain")
    b.tensor("x", nbytes=8 * MIB, kind=TensorKind.INPUT)
    for name, size in (("a", 8), ("b", 8), ("e", 8), ("c", 16), ("h", 40), ("g", 40), ("d", 8)):
        b.tensor(name, nbytes=size * MIB)
    for name, source, target in (("f1", "x", "a"), ("f2", "a", "b"), ("f3", "b", "e"),
                                 ("f4", "e", "c")):
        b.kernel(name, op="relu", inputs=[source], outputs=[target], flops=1e3)
    b.kernel("big", op="matmul", inputs=["c"], outputs=["h"], flops=1e6)
    b.kernel("big2", op="matmul", inputs=["h"], outputs=["g"], flops=1e6)
    b.kernel("back", op="matmul", inputs=["g", "c", "x"], outputs=["d"], flops=1e6)
    return b.build()


@pytest.mark.highs
@pytest.mark.parametrize("formulation", [Formulation.SYNCHRONOUS, Formulation.ASYNCHRONOUS])
def test_a_rerun_chain_frees_each_value_once_the_next_is_made(formulation):
    """At 84 MiB, c cannot stay over big2 (x, h, g and c: 104 MiB; x moves out there).
    Restoring it before back by rerunning f1..f4 holds x, g and c (64 MiB) and, while f2
    and f3 run, two of a, b and e (16 MiB): 80 MiB fits. Were the three held together, as
    the rules once counted, 88 MiB would not, and c would cross the link twice."""
    graph = chain_step()
    limit = 84 * MIB
    system, costs, index, values, plan = _solve(graph, formulation, limit)
    assert verify_plan(plan, graph, system) == []
    back = graph.kernel_index["back"]
    assert [r.kernel for r in plan.reruns if r.before == back] == [
        graph.kernel_index[f] for f in ("f1", "f2", "f3", "f4")]
    simulated = float(simulate(plan, graph, system, costs).step_seconds)
    assert simulated == pytest.approx(objective_of(index, values), rel=1e-9)
    *_, kept = _solve(graph, formulation, limit, recompute=False)
    assert simulated < float(simulate(kept, graph, system, costs).step_seconds)
    # what the reruns hold beside the residencies: a and b while f2 runs, b and e while f3
    use = boundary_rerun_use(graph, [r.kernel for r in plan.reruns if r.before == back], back,
                             {graph.tensor_index["c"]})
    assert use.peak == 16 * MIB
    assert use.held == [(0, [("'a'", 8 * MIB)]), (1, [("'b'", 8 * MIB)])]
