"""Reruns and the new kernel fields survive their files; files without them stay version 1."""

from __future__ import annotations

import json

from autotm_core.formats.graph_json import graph_from_text, graph_to_document
from autotm_core.ir import GraphBuilder, Kernel, TensorKind, layer_of, reruns_safely
from autotm_core.plans import Plan, Rerun, load_plan, save_plan


def test_plan_with_reruns_round_trips_as_version_2(tmp_path):
    plan = Plan(graph="g", system="s", capacities={"fast": 10}, residencies=(), moves=(),
                configs=(), reruns=(Rerun(0, 3), Rerun(1, 3)))
    save_plan(plan, tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text())["version"] == 2
    assert load_plan(tmp_path / "p.json") == plan
    save_plan(Plan(graph="g", system="s", capacities={}, residencies=(), moves=(), configs=()),
              tmp_path / "q.json")
    assert json.loads((tmp_path / "q.json").read_text())["version"] == 1


def test_graph_kernel_module_and_rerun_fields():
    b = GraphBuilder("g")
    b.tensor("x", nbytes=8, kind=TensorKind.INPUT)
    b.tensor("y", nbytes=8)
    b.tensor("z", nbytes=8, kind=TensorKind.OUTPUT)
    b.kernel("k0", op="relu", inputs=["x"], outputs=["y"], module="blocks.0.act")
    b.kernel("k1", op="scatter_log", inputs=["y"], outputs=["z"], rerun=False)
    graph = b.build()
    document = graph_to_document(graph)
    assert document["version"] == 2
    again = graph_from_text(json.dumps(document))
    assert again.kernels == graph.kernels
    assert again.kernels[0].module == "blocks.0.act" and not again.kernels[1].rerun
    plain = graph_to_document(GraphBuilder("h").build())
    assert plain["version"] == 1


def test_random_ops_are_not_rerun_by_default():
    assert not Kernel("d", "native_dropout").rerun
    assert not Kernel("r", "aten.randn_like.default").rerun
    assert not Kernel("n", "normal_").rerun
    assert Kernel("n", "normalize").rerun and Kernel("m", "matmul").rerun
    assert reruns_safely("layer_norm") and not reruns_safely("bernoulli_")


def test_layer_of_a_module_path():
    assert layer_of("transformer.h.3.mlp.c_fc") == "transformer.h.3"
    assert layer_of("layer1.0.conv1") == "layer1.0"
    assert layer_of("head") == "head"
    assert layer_of("") == ""
