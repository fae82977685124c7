"""The kind of device a system plans for, and a graph captured for another kind."""

from __future__ import annotations

import attrs
import pytest

from autotm_core import GraphBuilder, load_graph, save_graph
from autotm_core.cli.main import main
from autotm_core.memory import capture_mismatch, device_kind
from autotm_core.presets import preset


def _graph(captured_for: str):  # type: ignore[no-untyped-def]
    b = GraphBuilder("step", captured_for=captured_for)
    x = b.tensor("x", nbytes=4096, kind="input")
    y = b.tensor("y", nbytes=4096, kind="output")
    b.kernel("k", op="relu", inputs=[x], outputs=[y])
    return b.build()


def test_the_fastest_pools_device_names_the_kind() -> None:
    assert device_kind(preset("gpu-h200")) == "cuda"
    assert device_kind(preset("optane-2019")) == "cpu"
    assert device_kind(preset("hbm-dram-cxl")) == "cpu"


def test_a_graph_captured_for_another_kind_is_named_with_what_may_differ() -> None:
    note = capture_mismatch(_graph("cpu"), preset("gpu-h200"))
    assert note is not None
    assert "captured for cpu but is planned on gpu-h200 (cuda)" in note
    assert "attention kernels" in note and "optimizers" in note and "device=cuda" in note
    assert capture_mismatch(_graph("cpu"), preset("optane-2019")) is None
    assert capture_mismatch(_graph("cuda"), preset("gpu-h200")) is None
    assert capture_mismatch(_graph(""), preset("gpu-h200")) is None  # not device-specific


def test_the_graph_file_keeps_the_device(tmp_path) -> None:  # type: ignore[no-untyped-def]
    graph = _graph("cuda")
    save_graph(graph, tmp_path / "g.json")
    assert load_graph(tmp_path / "g.json") == graph
    plain = attrs.evolve(graph, captured_for="")
    save_graph(plain, tmp_path / "plain.json")
    assert "captured_for" not in (tmp_path / "plain.json").read_text()


@pytest.mark.parametrize("system, warned", [("gpu-h200", True), ("optane-2019", False)])
def test_baseline_warns_of_it(tmp_path, capsys, system: str, warned: bool) -> None:  # type: ignore[no-untyped-def]
    save_graph(_graph("cpu"), tmp_path / "g.json")
    assert main(["baseline", str(tmp_path / "g.json"), "--system", system, "--planner",
                 "greedy", "--ratio", "1:1"]) == 0
    err = capsys.readouterr().err
    assert ("warning: graph 'step' was captured for cpu" in err) is warned, err
