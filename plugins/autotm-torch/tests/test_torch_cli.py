"""The torch frontend from the command line: import -> info, errors, plugin availability."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from autotm_torch import TorchFrontend

from autotm_core import TensorKind, load_graph
from autotm_core.cli.main import main

MODELS = Path(__file__).parent / "torch_models.py"


def test_import_then_info(tmp_path, capsys):
    out = tmp_path / "graph.json"
    spec = f"{MODELS}:mlp_factory"
    status = main(["import", "torch", spec, "--batch-size", "8", "--option", "hidden=32",
                   "-o", str(out)])
    assert status == 0, capsys.readouterr().err
    assert "wrote" in capsys.readouterr().out
    graph = load_graph(out)
    assert graph.tensor("input:0").shape == (8, 8)  # the batch size reached the factory
    assert graph.tensor("param:fc1.weight").shape == (32, 8)  # and so did --option hidden=32
    state = sum(t.nbytes for t in graph.tensors if t.kind is TensorKind.OPTIMIZER_STATE)
    params = sum(t.nbytes for t in graph.tensors if t.kind is TensorKind.PARAMETER)
    assert state == 2 * params + 4 * 4  # Adam, from the factory's optimizer

    assert main(["info", str(out), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert json.dumps(facts).count(str(graph.liveness.peak_nbytes)) >= 1


def test_module_spec_with_a_tuple_factory(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(MODELS.parent))
    out = tmp_path / "g.json"
    assert main(["import", "torch", "torch_models:mlp_tuple_factory", "-o", str(out)]) == 0
    graph = load_graph(out)
    assert graph.tensor("input:0").shape == (4, 8)
    assert not any(t.kind is TensorKind.OPTIMIZER_STATE for t in graph.tensors)  # plain SGD


@pytest.mark.parametrize(
    "argv, status, message",
    [  # 1: the model or its module is refused; 2: the command line is wrong (a usage error)
        (["import", "torch", f"{MODELS}:data_dependent_factory", "-o", "x.json"], 1,
         "op aten._local_scalar_dense needs the value of a tensor at torch_models.py"),
        (["import", "torch", "no_such_module_xyz:factory", "-o", "x.json"], 1, "cannot import"),
        (["import", "torch", f"{MODELS}:missing", "-o", "x.json"], 2,
         "has no attribute 'missing'"),
        (["import", "torch", f"{MODELS}:mlp_factory", "--option", "nokey", "-o", "x.json"], 2,
         "is not KEY=VALUE"),
        (["import", "torch", f"{MODELS}:mlp_factory", "--option", "depth=3", "-o", "x.json"], 2,
         "does not accept the options"),
        (["import", "torch", f"{MODELS}:mlp_factory", "--option", "mode=fly", "-o", "x.json"], 2,
         "unknown mode 'fly'"),
        (["import", "nope", "x", "-o", "x.json"], 2, "no frontend called 'nope'"),
    ],
)
def test_bad_input_is_one_clear_error(argv, status, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == status
    err = capsys.readouterr().err
    assert "error:" in err and message in " ".join(err.split()), err
    assert "Traceback" not in err and not (tmp_path / "x.json").exists()


def test_without_torch_the_frontend_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # what find_spec sees when torch is absent
    assert "pip install torch==2.13.0" in TorchFrontend().unavailable_reason()
    assert main(["plugins"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "torch is not installed" in out


def test_keyword_inputs_and_the_models_own_loss_from_the_command_line(tmp_path):
    out = tmp_path / "g.json"
    assert main(["import", "torch", f"{MODELS}:keyword_factory", "--option", "loss=output",
                 "--batch-size", "3", "-o", str(out)]) == 0
    graph = load_graph(out)
    assert graph.tensor("input:input_ids").shape == (3, 5)
    assert graph.tensor("input:labels").kind is TensorKind.INPUT


def test_debug_shows_the_traceback_of_a_frontend_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["import", "torch", f"{MODELS}:data_dependent_factory", "-o", "x.json"]
    assert main(["--debug", *argv]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "torch_models.py" in err  # down to the model's own line
    assert "error: cannot capture DataDependent" in err


_BROKEN = '''
import torch
{module_import}

def make(batch_size=4):
    {factory_import}
    model = torch.nn.Sequential(torch.nn.Linear(10, 20), torch.nn.Linear({width}, 5))
    return model, (torch.randn(batch_size, 10),), torch.nn.functional.mse_loss
'''


def _broken(tmp_path, *, module_import="", factory_import="", width=20):
    path = tmp_path / "broken_models.py"
    path.write_text(_BROKEN.format(module_import=module_import, factory_import=factory_import,
                                   width=width))
    return path


@pytest.mark.parametrize("where", ["module", "factory"])
def test_a_missing_import_in_the_factory_names_the_module_to_install(where, tmp_path,
                                                                     monkeypatch, capsys):
    line = "import timmm_not_installed"
    path = _broken(tmp_path, **{f"{where}_import": line})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_models", raising=False)
    for spec in (f"{path}:make", "broken_models:make"):
        assert main(["info", f"torch:{spec}"]) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert "it imports 'timmm_not_installed', which is not installed here" in err, err
        assert "pip install timmm_not_installed" in err
        assert "package.module:function" not in err  # the spec was right


def test_a_shape_error_is_one_error_without_torchs_log(tmp_path, monkeypatch, capfd):
    path = _broken(tmp_path, width=30)
    assert main(["info", f"torch:{path}:make"]) == 1
    err = capfd.readouterr().err
    assert "error: cannot capture Sequential: RuntimeError:" in err
    assert "fake_tensor.py" not in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 2, err  # the error and its hint


def test_the_graph_records_the_device_it_was_captured_for(tmp_path, capsys):
    out = tmp_path / "graph.json"
    assert main(["import", "torch", f"{MODELS}:mlp_factory", "-o", str(out)]) == 0
    assert load_graph(out).captured_for == "cpu"
    capsys.readouterr()
    assert main(["baseline", str(out), "--system", "gpu-h200", "--planner", "greedy",
                 "--ratio", "1:1"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "was captured for cpu but is planned on gpu-h200 (cuda)" in err
