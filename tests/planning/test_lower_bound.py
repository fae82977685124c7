"""The physical lower bound: checked by hand on a tiny graph, and never beaten by a
planner's plan (random plans under every cost model: ``test_lower_bound_costs.py``)."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest

from autotm_core import MemorySystem
from autotm_core.costs.model import TableCosts, least_kernel_seconds
from autotm_core.planning import (
    PlanSettings,
    Problem,
    bound_lp,
    bound_rates,
    load_problem,
    lower_bound,
    plan,
)
from autotm_core.planning.bound_rates import crossing_rates, least_seconds
from autotm_core.planning.lower_bound import physical_lower_bound
from autotm_core.presets import preset
from plans.random_plans import tiny_graph, tiny_system


def rates(system: MemorySystem) -> tuple[float, float]:
    """The fastest rates in and out on ``system`` for the tiny graph's roofline."""
    problem = load_problem(tiny_graph(), system)
    into, out = crossing_rates(system, problem.costs, problem.graph.liveness)
    return into.bytes_per_second, out.bytes_per_second


def test_rates_add_kernel_accesses_unless_they_share_the_link() -> None:
    # tiny_system: into fast sync 8, async 4, slow read 10; out sync 6, async 3, write 5
    # (GB/s); no latency, so the roofline's kernels read and write at the pools' rates
    assert rates(tiny_system()) == pytest.approx((14e9, 8e9))
    shared = attrs.evolve(tiny_system(), links=tuple(
        attrs.evolve(link, kernel_traffic=True) for link in tiny_system().links))
    assert rates(shared) == (8e9, 6e9)
    assert rates(preset("gpu-h200")) == (50e9, 50e9)


def test_rates_count_each_channel_once_and_blocking_copies_one_at_a_time() -> None:
    # hbm-dram-cxl: every link shares one engine (none is duplex); blocking copies into
    # hbm at 250 and 45 GB/s run one at a time, overlapping ones at 125 and 22.5 share it
    problem = load_problem(tiny_graph(), "hbm-dram-cxl")
    into, _ = crossing_rates(problem.system, problem.costs, problem.graph.liveness)
    assert into.sync_bytes_per_second == 250e9
    assert into.overlap_bytes_per_second == pytest.approx(125e9 + into.access_bytes_per_second)
    # a kernel reads dram at 250 GB/s at best, less its latency on these small tensors
    assert 0 < into.access_bytes_per_second < 250e9


def test_tiny_graph_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    # the splits by hand, without what each kernel touches itself (below:
    # test_what_kernels_touch_outside_and_whole_tensors_raise_the_tiny_graph_bound)
    monkeypatch.setattr(bound_lp.SplitProgram, "_touch_rows", lambda self, ub: None)
    # live bytes per kernel: 350, 566 (16 of workspace), 650, 358; at 500 bytes of fast
    # memory k1 is 66 over and k2 150. w (50, a parameter: it only crosses in) covers
    # both; the other 16 at k1 are a or b, produced there or before: out by k1's end.
    # At k2 all 150 outside are read at k2 or k3: in after k1 ends. Split after k1:
    # max(k0 + k1, 16 B out) + max(k2 + k3, 150 B in at 14 GB/s), the largest split.
    problem = load_problem(tiny_graph(), tiny_system(), limit="500")
    bound = physical_lower_bound(problem)
    least = least_seconds(problem.costs, problem.graph.liveness)
    assert least.sum() == pytest.approx(problem.all_fast_seconds)
    assert least[2:].sum() < 150 / 14e9  # the fetches, not compute, bind after the split
    assert bound.split_after == 1
    assert bound.traffic_seconds == pytest.approx(max(least[:2].sum(), 16 / 8e9) + 150 / 14e9)
    assert bound.seconds == bound.traffic_seconds > max(bound.compute_seconds, 150 / 14e9)


@pytest.mark.parametrize("system", ["tiny", "hbm-dram-cxl"])
def test_least_seconds_are_each_kernels_fastest_configuration(
        system: str, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = load_problem(tiny_graph(), tiny_system() if system == "tiny" else system)
    costs, liveness = problem.costs, problem.graph.liveness
    separable = costs.separable()
    assert separable is not None
    tables = TableCosts(n_pools=costs.n_pools, kernel_ptr=separable.kernel_ptr,
                        tables=tuple(costs.table(k) for k in range(4)))
    fastest = np.array([costs.table(k).seconds.min() for k in range(4)])
    assert np.array_equal(least_seconds(tables, liveness), fastest)
    assert least_seconds(costs, liveness) == pytest.approx(fastest, rel=1e-12)
    # above the kernels it enumerates, a relaxation: never above the fastest
    monkeypatch.setattr(bound_rates, "EXACT_CONFIGS", 1)
    assert (least_seconds(costs, liveness) <= fastest * (1 + 1e-12)).all()
    assert (least_kernel_seconds(costs, 4) <= fastest * (1 + 1e-12)).all()


def test_blocking_copies_add_to_the_compute_they_cannot_overlap() -> None:
    # links carrying the kernels' accesses: overlapping, 4 GB/s in and 3 out; blocking,
    # 8 and 6 (no kernel runs meanwhile). A side of L seconds with C of kernels moves at
    # most 8 (L - C) + 4 C bytes in: so L >= (bytes + 4 C) / 8, more than bytes / 8
    tiny = tiny_system()
    system = attrs.evolve(tiny, links=tuple(
        attrs.evolve(link, kernel_traffic=True) for link in tiny.links))
    problem = load_problem(tiny_graph(), system, limit="500")
    bound = physical_lower_bound(problem)
    least = least_seconds(problem.costs, problem.graph.liveness)
    before, after = least[:2].sum(), least[2:].sum()
    assert bound.rate_in.sync_excess == 4e9 and bound.rate_out.sync_excess == 3e9
    assert bound.traffic_seconds == pytest.approx(
        max(before, (16 + 3e9 * before) / 6e9) + max(after, (150 + 4e9 * after) / 8e9))
    assert bound.traffic_seconds > max(before, 16 / 6e9) + max(after, 150 / 8e9)


def test_no_excess_is_compute_alone() -> None:
    problem = load_problem(tiny_graph(), tiny_system(), limit="1000")
    bound = physical_lower_bound(problem)
    assert bound.traffic_seconds == 0.0 and bound.split_after == -1
    assert bound.seconds == problem.all_fast_seconds


def test_fewer_rows_or_free_small_tensors_only_weaken_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # a limit where the traffic term is above the kernels' least times, so rows matter
    problem = load_problem("example:cnn", "gpu-h200", limit="2:1")
    monkeypatch.setattr(lower_bound, "SMALL_TENSOR_FRACTION", 0.0)
    exact = physical_lower_bound(problem).traffic_seconds
    monkeypatch.undo()
    default = physical_lower_bound(problem).traffic_seconds
    monkeypatch.setattr(lower_bound, "MAX_LP_PAIRS", 40)
    few_rows = physical_lower_bound(problem).traffic_seconds
    assert 0 < few_rows < default <= exact * (1 + 1e-7)


@pytest.mark.highs
def test_windows_of_kernels_add_up_what_the_splits_saw_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of kernels lasts at least what it must move itself: crossings one kernel
    forces and the next cannot hide add up, where a split saw only the whole stretch's
    bytes (``example:cnn`` on ``gpu-h200`` at 3:1, keeping and moving: 0.849 ms from the
    splits and the kernels' ends, 0.938 ms with the windows). No plan beats it, and fewer
    windows only weaken it."""
    problem = load_problem("example:cnn", "gpu-h200", limit="3:1")
    bound = physical_lower_bound(problem).seconds
    monkeypatch.setattr(lower_bound, "MAX_LP_WINDOWS", 4 * len(problem.graph.kernels))
    short = physical_lower_bound(problem).seconds
    monkeypatch.setattr(lower_bound, "MAX_LP_WINDOWS", 0)
    splits = physical_lower_bound(problem).seconds
    assert splits * 1.05 < bound
    assert splits <= short * (1 + 1e-7) and short <= bound * (1 + 1e-7)
    for planner in ("greedy", "synchronous", "asynchronous"):
        step = plan(problem, planner, PlanSettings(time_limit_seconds=5,
                                                   recompute=False)).step_seconds
        assert step >= bound * (1 - 1e-7), planner


def test_a_kernel_pays_for_what_does_not_fit_the_fastest_pool(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor lives whole in one pool: ``y`` (64 MiB) never fits the 48 MiB of HBM, so
    ``wide`` writes it and ``narrow`` reads it in host memory; ``a`` and ``b`` each fit but
    not together, so ``pair`` reads one of them there (GPT-2 at batch 256 and 4:1: logits
    of 49 GiB against 39 GiB of HBM; the bound rose from 1.71 s to 6.74 s)."""
    from autotm_core.ir import GraphBuilder, TensorKind

    mib = 2**20
    b = GraphBuilder("overflow")
    b.tensor("x", nbytes=16 * mib, kind=TensorKind.INPUT)
    b.tensor("y", nbytes=64 * mib)
    for name in ("a", "b", "c"):
        b.tensor(name, nbytes=32 * mib)
    b.tensor("d", nbytes=mib)
    b.kernel("wide", op="matmul", inputs=["x"], outputs=["y"], flops=1e6)
    b.kernel("narrow", op="matmul", inputs=["y"], outputs=["a"], flops=1e6)
    b.kernel("other", op="matmul", inputs=["a"], outputs=["b"], flops=1e6)
    b.kernel("pair", op="add", inputs=["a", "b"], outputs=["d"], flops=1e3)
    graph = b.build()
    problem = load_problem(graph, "gpu-h200", limit=f"hbm={48 * mib}")
    costs, liveness = problem.costs, graph.liveness
    capacity = problem.fast_capacity_nbytes
    least = least_seconds(costs, liveness, capacity)
    sizes = liveness.nbytes[liveness.kernel_tensors]
    expected = [min(costs.seconds(k, config) for config in itertools.product(
        range(costs.n_pools), repeat=len(sizes[liveness.kernel_tensor_slice(k)]))
        if sizes[liveness.kernel_tensor_slice(k)] @ (np.array(config) == 0) <= capacity)
        for k in range(4)]
    assert least == pytest.approx(expected, rel=1e-12)
    assert expected[0] == costs.seconds(0, [0, 1]) and expected[1] == costs.seconds(1, [1, 0])
    unbounded = least_seconds(costs, liveness)
    assert (least > unbounded * 2).all()
    # the same from a table of every configuration
    separable = costs.separable()
    assert separable is not None
    tables = TableCosts(n_pools=costs.n_pools, kernel_ptr=separable.kernel_ptr,
                        tables=tuple(costs.table(k) for k in range(4)))
    assert least_seconds(tables, liveness, capacity) == pytest.approx(expected, rel=1e-12)
    # above the kernels it enumerates, each term at its cheapest allowed pool: between
    monkeypatch.setattr(bound_rates, "EXACT_CONFIGS", 1)
    relaxed = least_seconds(costs, liveness, capacity)
    assert (unbounded <= relaxed * (1 + 1e-12)).all() and (relaxed <= least * (1 + 1e-12)).all()
    assert relaxed[:2] == pytest.approx(least[:2], rel=1e-12)  # y alone is forced out
    monkeypatch.undo()
    bound = physical_lower_bound(problem)
    assert bound.seconds >= least.sum() * (1 - 1e-12)
    for planner in ("greedy", "synchronous", "asynchronous"):
        step = plan(problem, planner, PlanSettings(time_limit_seconds=5)).step_seconds
        assert step >= bound.seconds * (1 - 1e-7), planner


@pytest.mark.slow
@pytest.mark.highs
@pytest.mark.parametrize("system", ["gpu-h200", "optane-2019"])
@pytest.mark.parametrize("limit", ["3:1", "4:1"])
def test_no_plan_beats_the_bound(system: str, limit: str) -> None:
    problem = load_problem("example:chain-3", system, limit=limit)
    bound = physical_lower_bound(problem)
    assert bound.traffic_seconds > 0  # the limit leaves an excess to cover
    if limit == "3:1":  # the order binds; at 4:1 on optane-2019 the kernels' least times do
        assert 0 <= bound.split_after < len(problem.graph.kernels) - 1
        assert bound.traffic_seconds > bound.compute_seconds
    for planner in ("first-touch", "greedy", "synchronous", "asynchronous"):
        step = plan(problem, planner, PlanSettings(time_limit_seconds=5)).step_seconds
        assert step >= bound.seconds * (1 - 1e-7), planner


def test_a_tensor_a_kernel_uses_is_not_dropped_there() -> None:
    """relu's output a is recomputable, but at ``big``, the one kernel over capacity, ``big``
    reads it: a tensor a kernel uses is in some pool during it, so the excess there crosses
    the link, recomputing or not (the recomputing bound of Hugging Face GPT-2 at 0.92 GiB
    was 6.91 ms, 1.11x all-fast, from dropping the AdamW update's own operands; 12.07 ms
    now)."""
    from autotm_core.ir import GraphBuilder, TensorKind

    mib = 2**20
    b = GraphBuilder("uses")
    b.tensor("x", nbytes=16 * mib, kind=TensorKind.INPUT)
    for name in ("a", "h", "c", "d"):
        b.tensor(name, nbytes=16 * mib)
    b.kernel("relu", op="relu", inputs=["x"], outputs=["a"], flops=1e3)
    b.kernel("f", op="matmul", inputs=["a"], outputs=["h"], flops=1e6)
    b.kernel("big", op="matmul", inputs=["a", "h"], outputs=["c"], flops=1e6)
    b.kernel("back", op="matmul", inputs=["c"], outputs=["d"], flops=1e6)
    graph = b.build()
    problem = load_problem(graph, "gpu-h200", limit=f"hbm={40 * mib}")
    assert graph.recompute.recomputable[graph.tensor_index["a"]]
    keep_move = physical_lower_bound(problem)
    recomputing = physical_lower_bound(problem, recompute=True)
    assert keep_move.traffic_seconds > problem.all_fast_seconds
    assert recomputing.seconds == pytest.approx(keep_move.seconds, rel=1e-6)


@pytest.mark.highs
def test_a_rerun_whose_inputs_are_gone_restores_nothing() -> None:
    """``t`` (32 MiB) is recomputable and ``make`` and ``use_y`` need its room in HBM, but
    its producer ``q`` reads ``h``, whose producer ``p`` reads ``x``: a rerun reads its
    inputs in the fastest pool, so restoring ``t`` after ``h`` is gone takes a rerun of
    ``p``, which needs ``x``. Were ``x`` a parameter (live all step), dropping ``t`` costs
    two reruns (0.040 ms, and a plan does it in 0.045 ms); the input ``x`` is gone after
    ``p``, so ``t`` crosses out and back in, recomputing or not (0.039 ms before the bound
    followed the inputs back; 0.693 ms now)."""
    from autotm_core.ir import GraphBuilder, TensorKind

    mib = 2**20

    def problem(kind: TensorKind) -> Problem:
        b = GraphBuilder("gone")
        b.tensor("x", nbytes=mib, kind=kind)
        b.tensor("w", nbytes=mib, kind=TensorKind.PARAMETER)
        for name in ("h", "z", "out"):
            b.tensor(name, nbytes=mib)
        for name in ("t", "y"):
            b.tensor(name, nbytes=32 * mib)
        b.kernel("p", op="matmul", inputs=["x"], outputs=["h"], flops=1e6)
        b.kernel("q", op="relu", inputs=["h"], outputs=["t"], flops=1e3)
        b.kernel("make", op="matmul", inputs=["w"], outputs=["y"], flops=1e6)
        b.kernel("use_y", op="add", inputs=["y"], outputs=["z"], flops=1e3)
        b.kernel("use_t", op="add", inputs=["t", "z"], outputs=["out"], flops=1e3)
        return load_problem(b.build(), "gpu-h200", limit=f"hbm={48 * mib}")

    gone, kept = problem(TensorKind.INPUT), problem(TensorKind.PARAMETER)
    moving = physical_lower_bound(gone).seconds
    assert physical_lower_bound(gone, recompute=True).seconds == pytest.approx(moving, rel=1e-6)
    recomputing = physical_lower_bound(kept, recompute=True).seconds
    assert recomputing < moving / 10
    for case, bound in ((gone, moving), (kept, recomputing)):
        step = plan(case, "synchronous", PlanSettings(time_limit_seconds=5)).step_seconds
        assert step >= bound * (1 - 1e-7)


@pytest.mark.highs
def test_the_integral_bound_counts_whole_tensors() -> None:
    """``a`` and ``b`` write A and B, ``c`` reads both and writes C, each of S = 64 MiB,
    with 1.5 S of HBM: a tensor lives whole in one pool, so one of A and B is outside at
    ``b`` and two of the three at ``c``: three crossings of S over gpu-h200's 50 GB/s
    host link (4.03 ms) at least. The LP lets each be a fraction outside (1.5 S outside at
    ``c``); its branch and bound with the big tensors whole counts the three crossings, and
    the planners' best plan is within 0.5% of it."""
    from autotm_core.ir import GraphBuilder

    size = 64 * 2**20
    b = GraphBuilder("whole")
    for name in "ABC":
        b.tensor(name, nbytes=size)
    b.kernel("a", op="layer", inputs=[], outputs=["A"], flops=1e6)
    b.kernel("b", op="layer", inputs=[], outputs=["B"], flops=1e6)
    b.kernel("c", op="layer", inputs=["A", "B"], outputs=["C"], flops=1e6)
    problem = load_problem(b.build(), "gpu-h200", limit=f"hbm={3 * size // 2}")
    crossing = size / 50e9
    lp = physical_lower_bound(problem).seconds
    integral = physical_lower_bound(problem, integral_seconds=30).seconds
    assert lp < 2.6 * crossing
    assert integral >= 3 * crossing
    best = min(plan(problem, planner, PlanSettings(addresses=False, recompute=False))
               .step_seconds for planner in ("synchronous", "asynchronous"))
    assert integral <= best < integral * 1.005



@pytest.mark.highs
def test_what_kernels_touch_outside_and_whole_tensors_raise_the_tiny_graph_bound() -> None:
    """On the tiny graph at 500 bytes, the splits by hand give 19.53 ns; a kernel reading a
    tensor outside reads it there itself, at most 10 GB/s (the costs' most bytes outside
    per second): ``k2`` reading the parameter ``w`` outside lasts 5 ns, not its least
    4.5 ns, which moves the LP's outside bytes to ``a`` and raises it to 20.82 ns; with
    the tensors whole it is 43.8 ns. No plan beats either."""
    problem = load_problem(tiny_graph(), tiny_system(), limit="500")
    least = least_seconds(problem.costs, problem.graph.liveness)
    by_hand = max(least[:2].sum(), 16 / 8e9) + 150 / 14e9
    assert bound_rates.touch_rate(problem.limited_system, problem.costs,
                                  problem.graph.liveness) == pytest.approx(10e9)
    assert least[2] < 50 / 10e9
    lp = physical_lower_bound(problem).seconds
    integral = physical_lower_bound(problem, integral_seconds=10).seconds
    assert lp == pytest.approx(20.82e-9, rel=1e-3) and lp > by_hand * 1.05
    assert integral == pytest.approx(43.79e-9, rel=1e-3)
    for planner in ("synchronous", "asynchronous"):
        step = plan(problem, planner, PlanSettings(addresses=False)).step_seconds
        assert step >= integral, planner
