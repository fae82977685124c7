"""calibrate --quick writes a memory-system file of positive, finite figures; pools per node."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from autotm_core.calibration.calibrate import buffer_size, calibrated_system
from autotm_core.calibration.records import Calibration, LinkFigures, NodeFigures
from autotm_core.cli import main as cli
from autotm_core.formats.system_json import load_system
from autotm_core.report.profile_report import calibration_facts, render_calibration


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    consoles = iter([Console(file=out, width=120, color_system=None),
                     Console(file=err, width=120, color_system=None)])
    monkeypatch.setattr(cli, "Console", lambda **kwargs: next(consoles))
    status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def test_calibrate_quick_writes_a_system_load_system_reads(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "system.json"
    status, out, err = _run(["calibrate", "--quick", "-o", str(path)], monkeypatch)
    assert status == 0, err
    system = load_system(path)
    numbers = [system.flops_per_second]
    for pool in system.pools:
        numbers += [pool.read_bytes_per_second, pool.write_bytes_per_second,
                    pool.latency_seconds]
    for link in system.links:
        numbers += [link.sync_bytes_per_second, link.async_bytes_per_second]
    assert all(math.isfinite(x) and x > 0 for x in numbers)
    assert len(system.links) == len(system.pools) * (len(system.pools) - 1)
    for words in ("calibration", "memory per NUMA node", "read", "latency", "copies",
                  "asynchronous", "GFLOP/s", str(path)):
        assert words in out
    if len({p.numa_node for p in system.pools}) == 1:  # this machine: one node
        dram, slow = system.pools
        assert (dram.name, slow.name) == ("dram", "slow")
        assert dram.read_bytes_per_second == slow.read_bytes_per_second
        assert "one NUMA node" in system.description and "one NUMA node" in out


def test_quick_buffers_are_beyond_the_cache_and_bounded() -> None:
    quick, full = buffer_size(quick=True), buffer_size(quick=False)
    assert 32 << 20 <= quick <= 128 << 20 and 64 << 20 <= full <= 512 << 20


def _two_nodes() -> Calibration:
    nodes = (NodeFigures(0, 8 << 30, 5e9, 4e9, 300e-9), NodeFigures(1, 16 << 30, 20e9, 15e9,
                                                                       90e-9))
    links = tuple(LinkFigures(s, t, 3e9 + s + 2 * t, 1e9 + s + 2 * t)
                  for s in (0, 1) for t in (0, 1))
    return Calibration(nodes=nodes, links=links, flops_per_second=1e9, buffer_nbytes=64 << 20,
                       last_level_cache_nbytes=32 << 20, repeat=3, chase_steps=1000,
                       cpu="test cpu, 2 threads", seconds=1.0)


def test_several_nodes_give_one_pool_each_fastest_first() -> None:
    system = calibrated_system(_two_nodes())
    assert [p.name for p in system.pools] == ["node1", "node0"]
    assert [p.numa_node for p in system.pools] == [1, 0]
    assert system.pools[0].capacity_nbytes == 16 << 30 and system.pools[1].capacity_nbytes is None
    link = system.link(0, 1)  # node1 -> node0
    assert (link.sync_bytes_per_second, link.async_bytes_per_second) == (3e9 + 1, 1e9 + 1)


def test_the_report_has_a_row_per_node() -> None:
    calibration = _two_nodes()
    facts = calibration_facts(calibration, calibrated_system(calibration), output="s.json")
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_calibration(facts))
    text = out.getvalue()
    assert "20.0 GB/s" in text and "0.090 us" in text and "3.0 GB/s" in text
    assert "node 1" in text and "one NUMA node" not in text
    assert json.loads(json.dumps(facts))["nodes"][1]["read_bytes_per_second"] == 20e9
