"""Honest labels: the ways the model is narrower than the plan rules, for one problem."""

from __future__ import annotations

from autotm_core.costs import roofline_costs
from autotm_core.costs.model import TableCosts
from autotm_core.examples.networks import training_chain
from autotm_core.ilp.options import FormulationOptions
from autotm_core.ilp.restrictions import model_restrictions
from autotm_core.ir import Graph, GraphBuilder, TensorKind
from autotm_core.memory import MemorySystem, Pool
from autotm_core.presets import preset

GRAPH = training_chain(3)
OPTANE = preset("optane-2019").with_capacity("dram", GRAPH.liveness.peak_nbytes // 2)


def _lines(system=OPTANE, costs=None, *, recompute_lines=False, **options):
    costs = costs if costs is not None else roofline_costs(GRAPH, system)
    lines = model_restrictions(GRAPH, system, costs=costs, options=FormulationOptions(**options))
    return tuple(line for line in lines if recompute_lines or "recompute" not in line)


def test_recomputation_off_or_narrowed_is_named():
    (off,) = _lines(page_nbytes=1, recompute_lines=True)
    assert "keeps and moves only" in off
    (on,) = _lines(page_nbytes=1, recompute=True, recompute_depth=5, recompute_lines=True)
    assert "dropped from every pool" in on and "5 producers" in on
    assert len(_lines(page_nbytes=1, recompute=True, formulation="static",
                      recompute_lines=True)) == 2


def test_exact_addresses_off_and_two_pools_leave_no_restriction():
    assert _lines(page_nbytes=1) == ()
    assert _lines(page_nbytes=1, formulation="static") == ()


def test_tensors_barred_from_beginning_the_step_in_a_pool_are_named():
    weights = sorted(t.name for t in GRAPH.tensors if t.kind is TensorKind.PARAMETER)
    (line,) = _lines(page_nbytes=1, begin_outside={"dram": weights[:1]})
    assert repr(weights[0]) in line and "may not begin the step in 'dram'" in line
    assert _lines(page_nbytes=1, begin_outside={"dram": []}) == ()


def test_page_rounding_is_named_with_the_page_and_the_bounded_pools():
    (line,) = _lines()
    assert "4096-byte pages" in line and "dram" in line and "pmm" not in line
    unbounded = preset("optane-2019").with_capacity("dram", None)
    assert _lines(system=unbounded) == ()  # nothing bounded: nothing rounded


def test_asynchronous_overlap_and_pinning_are_named():
    lines = _lines(page_nbytes=1, formulation="asynchronous", pin_to_fast=True, async_window=2)
    assert len(lines) == 2
    assert any("completes within 2 kernels" in line for line in lines)
    assert any("pin_to_fast" in line and "parameter" in line for line in lines)
    one_kernel = _lines(page_nbytes=1, formulation="asynchronous", async_spans=False)
    assert any("async_spans is off" in line for line in one_kernel)


def _step(*, last_reads_w: bool, gap: int) -> Graph:
    """``w`` (a parameter) read by k0 and then by ``use``, ``gap`` kernels later; the last
    kernel reads ``use``'s output, and ``w`` when ``last_reads_w``."""
    b = GraphBuilder("step")
    b.tensor("w", nbytes=1 << 20, kind=TensorKind.PARAMETER)
    for i in range(gap + 2):
        b.tensor(f"a{i}", nbytes=1 << 20)
    b.kernel("k0", op="layer", inputs=["w"], outputs=["a0"])
    for i in range(gap):
        b.kernel(f"g{i}", op="layer", inputs=[f"a{i}"], outputs=[f"a{i + 1}"])
    b.kernel("use", op="layer", inputs=["w", f"a{gap}"], outputs=[f"a{gap + 1}"])
    b.kernel("last", op="layer", inputs=[f"a{gap + 1}", *(["w"] if last_reads_w else [])])
    return b.build()


def _async_lines(graph: Graph, **options) -> tuple[str, ...]:
    system = preset("optane-2019")
    return model_restrictions(graph, system, costs=roofline_costs(graph, system),
                              options=FormulationOptions(page_nbytes=1, **options))


def test_a_gap_within_the_window_names_no_overlap_restriction():
    assert _async_lines(_step(last_reads_w=False, gap=1), formulation="asynchronous") == ()
    assert _async_lines(_step(last_reads_w=False, gap=2), formulation="asynchronous") == ()
    (line,) = _async_lines(_step(last_reads_w=False, gap=3), formulation="asynchronous",
                           async_window=2)
    assert "within 2 kernels" in line
    (line,) = _async_lines(_step(last_reads_w=False, gap=2), formulation="asynchronous",
                           async_spans=False)
    assert "overlaps one kernel" in line


def test_a_bounded_slower_pool_names_the_flights_that_end_at_a_use():
    graph = _step(last_reads_w=False, gap=2)
    system = preset("optane-2019").with_capacity("pmm", graph.liveness.peak_nbytes // 2)
    lines = model_restrictions(graph, system, costs=roofline_costs(graph, system),
                               options=FormulationOptions(page_nbytes=1,
                                                          formulation="asynchronous"))
    assert any("bounded slower pool" in line for line in lines)


def test_a_copy_during_a_last_kernel_that_reads_the_tensor_is_named():
    graph = _step(last_reads_w=True, gap=1)
    (line,) = _async_lines(graph, formulation="asynchronous")
    assert "last kernel into a faster pool" in line
    assert _async_lines(graph) == ()


def test_cost_tables_read_the_fastest_copy():
    separable = roofline_costs(GRAPH, OPTANE).separable()
    assert separable is not None
    table = TableCosts(n_pools=2, kernel_ptr=GRAPH.liveness.kernel_ptr,
                       tables=tuple(separable.table(k) for k in range(len(GRAPH.kernels))))
    (line,) = _lines(costs=table, page_nbytes=1)
    assert "fastest pool holding it" in line
    assert _lines(costs=table, page_nbytes=1, formulation="static") == ()


def test_three_pools_name_the_move_positions_not_the_clean_copies():
    peak = GRAPH.liveness.peak_nbytes
    system = MemorySystem(name="three", pools=(
        Pool("hbm", peak // 4, 1e12, 1e12, 1e-7), Pool("dram", peak // 4, 1e11, 1e11, 2e-7),
        Pool("cxl", None, 3e10, 1e10, 3e-7)))
    (line,) = _lines(system=system, page_nbytes=1)
    assert "three or more pools" in line and "right before" in line
    assert not any("clean" in line for line in _lines(system=system))
