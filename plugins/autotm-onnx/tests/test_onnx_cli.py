"""The command line: import an ONNX model, then read the graph file back with info."""

from __future__ import annotations

import json

import pytest
from autotm_core.cli.main import main
from autotm_core.formats import load_graph

import onnx_models
from autotm_onnx import load

pytest.importorskip("autotm_core.cli.import_command")


def test_import_then_info_round_trip(tmp_path, capsys):
    model = onnx_models.save(onnx_models.mlp("batch"), tmp_path / "mlp.onnx")
    graph_file = tmp_path / "graph.json"
    status = main(["import", "onnx", model, "--dim", "batch=32", "-o", str(graph_file)])
    assert status == 0
    assert "3 kernels, 8 tensors" in capsys.readouterr().out
    assert load_graph(graph_file) == load(model, dims={"batch": 32})

    assert main(["info", str(graph_file), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["kernels"] == 3
    assert facts["by_kind"]["input"]["nbytes"] == 32 * 16 * 4
    assert facts["by_kind"]["parameter"]["count"] == 4
    assert facts["warnings"] == []


def test_unbound_dimension_is_one_line_and_a_hint(tmp_path, capsys):
    model = onnx_models.save(onnx_models.mlp("batch"), tmp_path / "mlp.onnx")
    status = main(["import", "onnx", model, "-o", str(tmp_path / "graph.json")])
    err = capsys.readouterr().err
    assert status == 1
    assert "value 'x' has the unbound symbolic dimension 'batch'" in err
    assert "--dim batch=" in err
    assert "Traceback" not in err
    assert not (tmp_path / "graph.json").exists()


def test_not_onnx_is_one_line(tmp_path, capsys):
    bad = tmp_path / "model.onnx"
    bad.write_text("not a model")
    assert main(["import", "onnx", str(bad), "-o", str(tmp_path / "g.json")]) == 1
    err = capsys.readouterr().err
    assert "not an ONNX model" in err
    assert "Traceback" not in err
