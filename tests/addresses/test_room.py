"""Room in a full pool: idle tensors copied out around its fullest moments and back."""

from __future__ import annotations

import attrs
import pytest
from tests.baselines.blocks import MIB, blocks

from autotm_core.addresses import assign_offsets
from autotm_core.addresses.room import make_room
from autotm_core.baselines import all_fast, checkpoint_layers
from autotm_core.costs import resolve_costs
from autotm_core.examples.networks import training_chain
from autotm_core.ir import Graph
from autotm_core.memory import MemorySystem
from autotm_core.plans import verify_plan
from autotm_core.plans.model import MoveKind, Plan
from autotm_core.presets import preset
from autotm_core.simulation import simulate

OPTANE = preset("optane-2019")
GPU = preset("gpu-h200")


def _full(plan: Plan, graph: Graph, system: MemorySystem) -> tuple[Plan, MemorySystem, int]:
    """``plan`` with its fastest pool's capacity at the most bytes it holds at once."""
    fast = system.fast.name
    roomy = attrs.evolve(plan, capacities={**plan.capacities, fast: 1 << 50})
    capacity = assign_offsets(roomy, graph, system).pool(fast).lower_bound_nbytes
    return (attrs.evolve(plan, capacities={**plan.capacities, fast: capacity}),
            system.with_capacity(fast, capacity), capacity)


def test_idle_tensors_are_copied_out_after_a_use_and_back_before_the_next() -> None:
    graph = training_chain(6)
    plan, system, capacity = _full(all_fast(graph, OPTANE), graph, OPTANE)
    excess = 3 * MIB
    roomy = make_room(plan, graph, system, "dram", excess)
    assert roomy is not None
    assert verify_plan(roomy, graph, system) == []
    # the most bytes present at once, which no packing beats, is lower by the excess
    assert assign_offsets(roomy, graph, system).pool("dram").lower_bound_nbytes <= (
        capacity - excess)
    added = roomy.moves[len(plan.moves):]
    assert len(added) == roomy.attributes["room_copies"] > 0
    assert all(m.kind is MoveKind.SYNC for m in added)
    outs = sorted((m.tensor, m.kernel) for m in added if m.source == "dram")
    backs = sorted((m.tensor, m.kernel) for m in added if m.target == "dram")
    assert len(outs) == len(backs) == len(added) // 2
    users = {t.name: graph.liveness.users(i).tolist() for i, t in enumerate(graph.tensors)}
    for (tensor, out), (same, back) in zip(outs, backs, strict=True):
        assert tensor == same and back > out
        # no kernel touches the tensor while it is out
        assert not [k for k in users[tensor] if out <= k < back]
    # the step pays exactly the copies (synchronous: they block)
    costs = resolve_costs(graph, system)
    copies = sum(system.copy_seconds(graph.tensor(m.tensor).nbytes,
                                     system.pool_index(m.source), system.pool_index(m.target),
                                     asynchronous=False) for m in added)
    assert simulate(roomy, graph, system, costs).step_seconds == pytest.approx(
        simulate(plan, graph, system, costs).step_seconds + copies, rel=1e-9)


def test_a_plan_with_room_to_spare_is_returned_as_it_is() -> None:
    graph = training_chain(3)
    plan, system, _ = _full(all_fast(graph, OPTANE), graph, OPTANE)
    assert make_room(plan, graph, system, "dram", 0) is None  # nothing asked
    bigger = attrs.evolve(plan, capacities={"dram": plan.capacities["dram"] + 8 * MIB})
    assert make_room(bigger, graph, system, "dram", 4 * MIB) is bigger


def test_no_plan_when_the_idle_tensors_cannot_make_that_much_room() -> None:
    graph = training_chain(6)
    plan, system, capacity = _full(all_fast(graph, OPTANE), graph, OPTANE)
    assert make_room(plan, graph, system, "dram", capacity) is None


def test_what_a_rerun_reads_or_writes_stays_where_it_is() -> None:
    graph = blocks(3, nbytes=4 * MIB)
    plan, system, _ = _full(checkpoint_layers(graph, GPU), graph, GPU)
    assert plan.reruns
    roomy = make_room(plan, graph, system, "hbm", MIB)
    assert roomy is not None and roomy.moves != plan.moves
    assert verify_plan(roomy, graph, system) == []
    rerun = {t for r in plan.reruns for t in graph.kernels[r.kernel].tensors}
    assert not {m.tensor for m in roomy.moves[len(plan.moves):]} & rerun
