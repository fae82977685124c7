"""Profiling example:mlp: a cost file that load_costs and simulate accept, the cache, errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from tests.executor.helpers import diamond

from autotm_core.baselines import run_baseline
from autotm_core.cli import main as cli
from autotm_core.costs import load_costs
from autotm_core.errors import NumaError
from autotm_core.examples import build_example
from autotm_core.formats.system_json import save_system
from autotm_core.memory import MemorySystem, Pool
from autotm_core.plans import save_plan
from autotm_core.presets import preset
from autotm_core.profiler.cache import ProfileCache
from autotm_core.profiler.profile import profile_graph, save_profile

MIB = 1 << 20


def _system() -> MemorySystem:
    return MemorySystem(
        name="test-profile",
        pools=(Pool("dram", 64 * MIB, 10e9, 10e9, numa_node=0), Pool("slow", None, 5e9, 5e9)),
        flops_per_second=1e9,
    )


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    consoles = iter([Console(file=out, width=120, color_system=None),
                     Console(file=err, width=120, color_system=None)])
    monkeypatch.setattr(cli, "Console", lambda **kwargs: next(consoles))
    status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory):
    """example:mlp profiled once (one timed run per measurement), with its cache and files."""
    root = tmp_path_factory.mktemp("profile")
    graph, system = build_example("mlp"), _system()
    cache = ProfileCache(root / "cache")
    result = profile_graph(graph, system, repeat=1, cache=cache)
    save_profile(result, root / "costs.json", graph=graph, system=system)
    save_system(system, root / "system.json")
    return root, graph, system, cache, result


@pytest.mark.slow
def test_every_kernel_every_configuration_is_measured_once_per_placement(profiled) -> None:
    _, graph, _, cache, result = profiled
    assert result.kernels == 24 and result.distinct_kernels == 21
    assert result.cache_hits == 0 and result.measured == result.placements
    # 'slow' names no node, so it is bound to node 0 like 'dram': one placement per signature
    assert result.placements == result.distinct_kernels
    assert result.nodes == (0, 0) and any("same memory" in n for n in result.notes)
    assert len(cache.entries()) == result.placements
    widths = [len(k.tensors) for k in graph.kernels]
    assert result.configurations == sum(2**w for w in widths)


def test_the_cost_file_reads_back(profiled) -> None:
    root, graph, system, _, result = profiled
    loaded = load_costs(root / "costs.json", graph=graph, system=system)
    for k in range(len(graph.kernels)):
        want, got = result.costs.table(k), loaded.table(k)
        assert np.array_equal(want.configs, got.configs)
        assert np.array_equal(want.seconds, got.seconds)
        assert np.all(got.seconds > 0)
        assert len(set(got.seconds.tolist())) == 1  # one node: every configuration alike
    document = json.loads((root / "costs.json").read_text())
    assert "threads" in document["machine"] and "replay" in document["context"]


def test_simulate_accepts_the_cost_file(profiled, monkeypatch: pytest.MonkeyPatch) -> None:
    root, graph, system, _, result = profiled
    plan = run_baseline("first-touch", graph, system, fast_capacity_nbytes=8 * MIB)
    save_plan(plan, root / "plan.json")
    status, out, err = _run(["simulate", str(root / "plan.json"), "--graph", "example:mlp",
                             "--system", str(root / "system.json"), "--costs",
                             str(root / "costs.json"), "--json"], monkeypatch)
    assert status == 0, err
    facts = json.loads(out)
    kernel_total = float(result.costs.seconds_all(
        np.zeros(len(graph.liveness.kernel_tensors), dtype=np.int64)).sum())
    assert facts["step_seconds"] >= kernel_total * 0.999  # same kernel times, plus no moves


def test_a_second_run_hits_the_cache(profiled, monkeypatch: pytest.MonkeyPatch) -> None:
    root, *_ = profiled
    status, out, err = _run(["profile", "example:mlp", "--system", str(root / "system.json"),
                             "-o", str(root / "again.json"), "--repeat", "1", "--cache",
                             str(root / "cache"), "--json"], monkeypatch)
    assert status == 0, err
    facts = json.loads(out)
    assert facts["measured"] == 0 and facts["cache_hits"] == facts["placements"] == 21
    assert (root / "again.json").read_text() == (root / "costs.json").read_text()


def test_restricted_configurations_reuse_the_same_measurements(profiled) -> None:
    _, graph, system, cache, _ = profiled
    result = profile_graph(graph, system, repeat=1, cache=cache, max_configs=4)
    assert result.measured == 0 and result.restricted_kernels
    assert any("uniform" in n for n in result.notes)
    k = graph.kernel_index["linear1_backward"]  # 6 tensors: 2 uniform + 6 single deviations
    assert len(result.costs.table(k).configs) == 8


def test_more_repetitions_than_cached_are_measured_again(tmp_path: Path) -> None:
    graph, system = diamond(nbytes=4096, flops=1e4), _system()
    cache = ProfileCache(tmp_path)
    first = profile_graph(graph, system, repeat=1, cache=cache)
    assert first.measured == first.placements == 4
    assert profile_graph(graph, system, repeat=2, cache=cache).measured == 4
    again = profile_graph(graph, system, repeat=2, cache=cache)
    assert again.measured == 0 and again.cache_hits == 4


def test_the_report_counts_what_was_done(profiled, monkeypatch: pytest.MonkeyPatch) -> None:
    root, *_ = profiled
    status, out, _ = _run(["profile", "example:mlp", "--system", str(root / "system.json"),
                           "-o", str(root / "shown.json"), "--repeat", "1", "--cache",
                           str(root / "cache")], monkeypatch)
    assert status == 0
    for words in ("kernel profile", "24 (21 distinct signatures)", "21 from the cache, 0 measured",
                  "dram on node 0, slow on node 0", "slowest kernels", "linear1_backward",
                  "the same memory"):
        assert words in out


def test_a_bad_bind_node_lists_the_allowed_nodes(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = _run(["profile", "example:mlp", "--system", "optane-2019", "-o",
                           str(tmp_path / "c.json"), "--cache", str(tmp_path), "--bind",
                           "dram=0", "--bind", "pmm=7"], monkeypatch)
    assert status == 1
    assert "error: --bind pmm: NUMA node 7 does not exist on this machine; the nodes allowed " \
           "here are 0" in err and "hint:" in err
    assert not (tmp_path / "c.json").exists()
    with pytest.raises(NumaError, match=r"pool 'pmm': NUMA node 2 .* allowed here are 0"):
        profile_graph(build_example("mlp"), preset("optane-2019"))


def test_bad_arguments_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = _run(["profile", "example:mlp", "--system", "optane-2019", "-o",
                           str(tmp_path / "c.json"), "--bind", "nowhere=0"], monkeypatch)
    assert status == 2 and "--bind names pool 'nowhere'" in err and "its pools are dram, pmm" in err
    status, _, err = _run(["profile", "example:mlp", "--system", "optane-2019", "-o",
                           str(tmp_path / "c.json"), "--repeat", "0", "--bind", "pmm=0"],
                          monkeypatch)
    assert status == 2 and "repeat 0 must be a whole number >= 1" in err
