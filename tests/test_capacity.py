"""The fast-pool limit from a size or a PMM:DRAM ratio, and the workspace floor."""

from __future__ import annotations

import pytest

from autotm_core import Graph, Kernel, Tensor, TensorKind, preset
from autotm_core.capacity import check_workspace_fits, fast_capacity, with_fast_capacity
from autotm_core.errors import CapacityError, UsageError


def test_size_is_parsed_with_units(mlp: Graph) -> None:
    assert fast_capacity(mlp, nbytes="16GiB") == 16 * 1024**3
    assert fast_capacity(mlp, nbytes="1.5GB") == 1_500_000_000
    assert fast_capacity(mlp, nbytes=4096) == 4096


def test_ratio_divides_peak_live_bytes(mlp: Graph) -> None:
    peak = mlp.liveness.peak_nbytes
    assert fast_capacity(mlp, ratio="0:1") == peak
    assert fast_capacity(mlp, ratio="1:1") == peak // 2
    assert fast_capacity(mlp, ratio="4:1") == peak // 5
    assert fast_capacity(mlp, ratio="8:1") == peak // 9


def test_neither_means_the_systems_own(mlp: Graph) -> None:
    assert fast_capacity(mlp) is None
    system = preset("optane-2019")
    assert with_fast_capacity(system, None) is system
    assert with_fast_capacity(system, 1234).fast.capacity_nbytes == 1234


@pytest.mark.parametrize(("nbytes", "ratio"), [("1GiB", "4:1"), ("lots", None), (None, "4")])
def test_bad_arguments_are_one_usage_error(
    mlp: Graph, nbytes: str | None, ratio: str | None
) -> None:
    with pytest.raises(UsageError):
        fast_capacity(mlp, nbytes=nbytes, ratio=ratio)


def test_workspace_larger_than_the_pool_names_the_kernel() -> None:
    graph = Graph("ws", [Tensor("x", 10, TensorKind.INPUT), Tensor("y", 10)],
                  [Kernel("big", "conv", ["x"], ["y"], workspace_nbytes=5000)])
    check_workspace_fits(graph, 5000, pool="dram")
    with pytest.raises(CapacityError, match=r"'big'.*workspace.*'dram'"):
        check_workspace_fits(graph, 4999, pool="dram")


@pytest.mark.parametrize("planner", ["greedy", "first-touch", "all-slow"])
def test_every_baseline_refuses_a_graph_larger_than_the_pools_together(planner: str) -> None:
    from autotm_core.errors import CapacityError
    from autotm_core.planning import load_problem, plan

    problem = load_problem("example:mlp", "optane-2019", limit="dram=1MiB,pmm=1MiB")
    with pytest.raises(CapacityError, match="more than all the pools hold together") as info:
        plan(problem, planner)
    assert "dram 1.00 MiB + pmm 1.00 MiB = 2.00 MiB" in info.value.message
    assert "--limit pmm=SIZE" in (info.value.hint or "")


def test_a_graph_without_kernels_is_refused_before_planning() -> None:
    from autotm_core import GraphBuilder
    from autotm_core.errors import GraphError
    from autotm_core.planning import load_problem

    b = GraphBuilder("no-kernels")
    b.tensor("w", nbytes=4096, kind="parameter")
    graph = b.build()  # a legal graph: info shows it
    with pytest.raises(GraphError, match="'no-kernels' has no kernels: there is no step"):
        load_problem(graph, "optane-2019", limit="1:1")


def test_an_unknown_ops_flops_are_warned_of_once_per_graph(caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    from autotm_core import GraphBuilder
    from autotm_core.planning import load_problem, plan

    b = GraphBuilder("scan")
    x = b.tensor("x", shape=(64, 1024), dtype="float32", kind="input")
    y = b.tensor("y", shape=(64, 1024), dtype="float32", kind="output")
    b.kernel("c", op="some_scan", inputs=[x], outputs=[y])
    with caplog.at_level(logging.WARNING, logger="autotm_core.costs"):
        problem = load_problem(b.build(), "optane-2019", limit="1:1")
        plan(problem, "2lm")  # the cache model prices compute with a roofline of its own
        plan(problem, "greedy")
    warnings = [r for r in caplog.records if "op kind 'some_scan'" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
