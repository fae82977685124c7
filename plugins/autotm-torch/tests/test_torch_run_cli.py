"""``run --kernels torch:SPEC``: a captured step's plan run with real kernels from the command
line, with a preset on whatever machine this is (pools bound to the nodes it has, arenas as
large as the plan uses), measured against predicted time per kernel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from autotm_core.cli.main import main

HERE = Path(__file__).parent
SPEC = f"{HERE / 'torch_models.py'}:checkpointed_factory"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A checkpointed MLP's graph and a first-touch plan of it for the optane-2019 preset."""
    folder = tmp_path_factory.mktemp("run")
    graph, plan = folder / "graph.json", folder / "plan.json"
    assert main(["import", "torch", SPEC, "--option", "reentrant=false", "-o", str(graph)]) == 0
    assert main(["baseline", str(graph), "--system", "optane-2019", "--ratio", "1:1",
                 "--planner", "first-touch", "-o", str(plan)]) == 0
    return str(graph), str(plan)


def _run(files, *extra):
    graph, plan = files
    return main(["run", plan, "--graph", graph, "--system", "optane-2019", *extra])


@pytest.mark.slow
def test_a_plan_runs_with_torch_kernels_on_this_machine(files, capsys):
    capsys.readouterr()
    assert _run(files, "--kernels", f"torch:{SPEC}", "--option", "reentrant=false",
                "--repeat", "2", "--json") == 0
    facts = json.loads(capsys.readouterr().out)
    notes = " ".join(facts["notes"])
    check = facts["check"]
    assert check["reference"] == "one eager PyTorch step" and check["matches"]
    assert "largest difference" in check["detail"] and "real ATen kernels" in notes
    assert "instead of its capacity" in notes  # the 715 GiB pmm pool: an arena of what is used
    assert facts["kernels_run"] == "torch" and facts["async_copy_seconds"] >= 0
    assert all(p["arena_nbytes"] < 1 << 30 for p in facts["pools"])
    assert facts["kernels"] > 0 and facts["measured_step_seconds"] > 0
    assert facts["predicted_step_seconds"] > 0
    top = facts["top_kernels"][0]
    assert top["measured_seconds"] > 0 and top["predicted_seconds"] >= 0


@pytest.mark.parametrize(
    "extra, status, message",
    [  # 1: the model is refused; 2: the command line is wrong (a usage error)
        (["--kernels", f"torch:{SPEC}", "--option", "reentrant=true"], 1, "is not graph"),
        (["--kernels", "torch"], 2, "is neither 'replay' nor FRONTEND:SPEC"),
        (["--kernels", "example:mlp"], 2, "cannot run plans with its own kernels"),
        (["--kernels", f"torch:{SPEC}", "--flops-scale", "2"], 2, "apply to replay kernels only"),
        (["--option", "reentrant=true"], 2, "are for the frontend of --kernels"),
    ],
)
def test_bad_run_options_are_one_clear_error(files, capsys, extra, status, message):
    capsys.readouterr()
    assert _run(files, "--repeat", "1", *extra) == status
    err = " ".join(capsys.readouterr().err.split())
    assert "error: " in err and message in err and "Traceback" not in err


@pytest.mark.slow
def test_results_that_differ_from_eager_pytorch_exit_with_status_1(tmp_path, capsys):
    spec = f"{HERE / 'torch_models.py'}:dropout_factory"
    graph, plan = str(tmp_path / "graph.json"), str(tmp_path / "plan.json")
    assert main(["import", "torch", spec, "-o", graph]) == 0
    assert main(["baseline", graph, "--system", "optane-2019", "--ratio", "1:1",
                 "--planner", "first-touch", "-o", plan]) == 0
    capsys.readouterr()
    assert main(["run", plan, "--graph", graph, "--system", "optane-2019", "--kernels",
                 f"torch:{spec}", "--repeat", "1", "--json"]) == 1
    check = json.loads(capsys.readouterr().out)["check"]
    assert not check["matches"] and check["tensors"] and "dropout" in check["detail"]
