"""The link model: copy channels (duplex links run side by side, the others share one
engine) and kernels' own traffic sharing a link with the copies overlapping them; the
simulator's numba loop and reference agree, and the formulation charges what it charges."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from autotm_core.examples.networks import training_chain
from autotm_core.formats import load_system, save_system
from autotm_core.formats.system_json import system_to_document
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.planner import plan_graph
from autotm_core.memory import CopyLink, MemorySystem
from autotm_core.plans import Move, MoveKind, Residency, make_plan
from autotm_core.presets import preset
from autotm_core.simulation import Engine, simulate
from plans.random_plans import tiny_graph, tiny_plan, tiny_system

from .test_simulate import per_entry_costs


def linked(*, duplex: bool, kernel_traffic: bool) -> MemorySystem:
    """:func:`tiny_system` with its two links marked."""
    system = tiny_system()
    links = tuple(attrs.evolve(link, duplex=duplex, kernel_traffic=kernel_traffic)
                  for link in system.links)
    return attrs.evolve(system, links=links)


def both_ways_during_k1():  # type: ignore[no-untyped-def]
    """tiny_plan with ``w`` fetched during k1 too: k1 overlaps a copy each way."""
    plan = tiny_plan()
    residencies = [r for r in plan.residencies if not (r.tensor == "w" and r.pool == "fast")]
    return make_plan(tiny_graph(), tiny_system(),
                     residencies=[*residencies, Residency("w", "fast", 1, 2)],
                     moves=[Move("w", "slow", "fast", 1, MoveKind.ASYNC),
                            Move("a", "fast", "slow", 1, MoveKind.ASYNC)], planner="hand")


def test_channels_of_the_presets() -> None:
    assert preset("optane-2019").link_channels.tolist() == [[-1, 0], [0, -1]]
    assert preset("gpu-h200").link_channels.tolist() == [[-1, 1], [2, -1]]
    reads, writes = preset("gpu-h200").kernel_traffic_seconds_per_byte()
    assert reads.tolist() == [0.0, 1 / 5e10] and writes.tolist() == [0.0, 1 / 5e10]


@pytest.mark.parametrize("engine", list(Engine))
def test_copies_each_way_add_up_on_one_engine_and_overlap_on_a_duplex_link(
        engine: Engine) -> None:
    costs = per_entry_costs(1e-9, 1e-8)
    fetch, evict = 50 / 4e9, 200 / 3e9  # w slow -> fast, a fast -> slow, both during k1
    shared = simulate(both_ways_during_k1(), tiny_graph(),
                      linked(duplex=False, kernel_traffic=False), costs, engine=engine)
    duplex = simulate(both_ways_during_k1(), tiny_graph(),
                      linked(duplex=True, kernel_traffic=False), costs, engine=engine)
    assert shared.effective_seconds[1] == pytest.approx(fetch + evict)
    assert duplex.effective_seconds[1] == pytest.approx(evict)
    assert shared.async_seconds[1] == duplex.async_seconds[1] == pytest.approx(fetch + evict)


@pytest.mark.parametrize("engine", list(Engine))
def test_a_kernels_remote_reads_share_the_link(engine: Engine) -> None:
    costs = per_entry_costs(1e-9, 1e-8)
    kind = simulate(tiny_plan(), tiny_graph(), tiny_system(), costs, engine=engine)
    honest = simulate(tiny_plan(), tiny_graph(), linked(duplex=True, kernel_traffic=True), costs,
                      engine=engine)
    # k0 reads w (50 B) from slow, k3 reads a (200 B) from slow: over slow -> fast at 4 GB/s
    assert kind.effective_seconds[[0, 3]] == pytest.approx([12e-9, 12e-9])
    assert honest.effective_seconds[[0, 3]] == pytest.approx([50 / 4e9, 200 / 4e9])
    # k1's eviction of a runs on the other direction: k1 reads nothing from slow
    assert honest.effective_seconds[1] == pytest.approx(200 / 3e9)


@pytest.mark.parametrize("engine", list(Engine))
def test_kernel_traffic_and_a_copy_the_same_way_add_up(engine: Engine) -> None:
    plan = both_ways_during_k1()  # priced only: k1 reads a from slow while w is fetched
    configs = list(plan.configs)
    configs[1] = ("slow", *configs[1][1:])
    plan = attrs.evolve(plan, configs=configs, moves=[m for m in plan.moves if m.tensor == "w"])
    sim = simulate(plan, tiny_graph(), linked(duplex=True, kernel_traffic=True),
                   per_entry_costs(1e-9, 1e-8), engine=engine)
    assert sim.effective_seconds[1] == pytest.approx((50 + 200) / 4e9)  # w's fetch + a's read


def test_the_system_file_keeps_the_link_model(tmp_path: Path) -> None:
    system = linked(duplex=True, kernel_traffic=True)
    path = tmp_path / "system.json"
    save_system(system, path)
    assert load_system(path).links == system.links
    plain = system_to_document(tiny_system())
    assert all("duplex" not in c and "kernel_traffic" not in c for c in plain["copies"])


@pytest.mark.highs
@pytest.mark.parametrize("formulation", ["synchronous", "asynchronous"])
def test_the_model_charges_what_the_simulator_charges(formulation: str) -> None:
    graph = training_chain(3)
    system = preset("gpu-h200")
    capacity = int(graph.liveness.peak_nbytes * 0.4)
    result = plan_graph(graph, system, fast_capacity_nbytes=capacity,
                        options=FormulationOptions(formulation=formulation, page_nbytes=1))
    assert result.objective_seconds == pytest.approx(result.step_seconds, rel=1e-6)


def test_links_validate_their_flags() -> None:
    with pytest.raises(TypeError):
        CopyLink("a", "b", 1.0, 1.0, duplex="yes")  # type: ignore[arg-type]
