"""``info``: the summary of a graph, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotm_core.cli.main import main
from autotm_core.examples import build_example
from autotm_core.formats import save_graph
from autotm_core.ir import GraphBuilder


def _info(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["info", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_info_json_matches_liveness(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    graph = build_example("chain-20")
    path = tmp_path / "chain.json"
    save_graph(graph, path)
    status, out, err = _info(capsys, "--json", str(path))
    assert (status, err) == (0, "")
    facts = json.loads(out)
    live = graph.liveness
    assert facts["kernels"] == len(graph.kernels) == 61
    assert facts["tensors"] == len(graph.tensors)
    assert facts["peak_live_nbytes"] == live.peak_nbytes
    assert facts["peak_kernel_index"] == live.peak_kernel
    assert facts["peak_kernel"] == graph.kernels[live.peak_kernel].name
    assert facts["total_nbytes"] == graph.total_nbytes
    assert sum(e["nbytes"] for e in facts["by_kind"].values()) == graph.total_nbytes
    assert facts["warnings"] == []


def test_info_text_summary(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _info(capsys, "example:mlp")
    assert (status, err) == (0, "")
    graph = build_example("mlp")
    peak = graph.kernels[graph.liveness.peak_kernel].name
    for part in ("mlp", f"{len(graph.kernels):,}", "peak live", peak, "tensors by kind",
                 "parameter", "optimizer_state", "live bytes over the program"):
        assert part in out, part


def test_info_shows_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    b = GraphBuilder("warned")
    x = b.tensor("x", nbytes=8, kind="input")
    b.tensor("spare", nbytes=8)
    b.kernel("k", op="read", inputs=[x])
    path = tmp_path / "warned.json"
    save_graph(b.build(), path)
    status, out, _ = _info(capsys, str(path))
    assert status == 0
    assert "warning: tensor 'spare': is declared but no kernel reads or writes it" in out
