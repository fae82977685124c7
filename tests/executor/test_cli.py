"""``run`` on the command line: a rich report, JSON facts, one clear line for bad input."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from tests.executor.helpers import diamond, diamond_plan, two_pools

from autotm_core.cli import main as cli
from autotm_core.formats.graph_json import save_graph
from autotm_core.formats.system_json import save_system
from autotm_core.plans import save_plan


def _files(tmp_path, *, slow_node=0):
    graph, system = diamond(), two_pools(slow_node=slow_node)
    paths = [tmp_path / "plan.json", tmp_path / "graph.json", tmp_path / "system.json"]
    save_plan(diamond_plan(graph, system), paths[0])
    save_graph(graph, paths[1])
    save_system(system, paths[2])
    return [str(p) for p in paths]


def _run(argv, monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    consoles = iter([Console(file=out, width=120, color_system=None),
                     Console(file=err, width=120, color_system=None)])
    monkeypatch.setattr(cli, "Console", lambda **kwargs: next(consoles))
    status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


def test_run_prints_measured_predicted_and_the_same_memory_note(tmp_path, monkeypatch):
    plan, graph, system = _files(tmp_path)
    status, out, _ = _run(["run", plan, "--graph", graph, "--system", system, "--repeat", "2"],
                          monkeypatch)
    assert status == 0
    assert "median of 2" in out and "predicted" in out and "error" in out
    assert "on CPU" in out and "of the wall time" in out
    assert "equal to the one-pool replay" in out
    assert "the same memory" in out
    assert "64/64" in out


def test_run_json(tmp_path, monkeypatch):
    plan, graph, system = _files(tmp_path)
    status, out, _ = _run(["run", plan, "--graph", graph, "--system", system, "--repeat", "1",
                           "--json", "--top", "2"], monkeypatch)
    facts = json.loads(out)
    assert status == 0 and facts["check"]["matches"] and facts["same_memory"]
    assert len(facts["top_kernels"]) == 2 and facts["sync_nbytes"] == 1 << 20
    assert facts["on_cpu_step_seconds"] > 0 and facts["on_cpu_fraction"] > 0
    assert facts["on_cpu_error"] == pytest.approx(
        facts["predicted_step_seconds"] / facts["on_cpu_step_seconds"] - 1)


def test_run_missing_node_is_one_line_and_a_hint(tmp_path, monkeypatch):
    plan, graph, system = _files(tmp_path, slow_node=9)
    status, _, err = _run(["run", plan, "--graph", graph, "--system", system], monkeypatch)
    assert status == 1
    assert "error: pool 'pmm': NUMA node 9 does not exist" in err and "hint:" in err
    status, out, _ = _run(["run", plan, "--graph", graph, "--system", system, "--bind", "pmm=0",
                           "--repeat", "1"], monkeypatch)
    assert status == 0 and "equal to the one-pool replay" in out


def test_bad_bind_is_a_usage_error(tmp_path, monkeypatch):
    plan, graph, system = _files(tmp_path)
    status, _, err = _run(["run", plan, "--graph", graph, "--system", system, "--bind", "pmm"],
                          monkeypatch)
    assert status == 2 and "--bind 'pmm' is not POOL=VALUE" in err


@pytest.mark.parametrize("option", ["--bind", "--arena"])
def test_a_pool_the_system_lacks_is_a_usage_error(tmp_path, monkeypatch, option):
    plan, graph, system = _files(tmp_path)
    status, _, err = _run(["run", plan, "--graph", graph, "--system", system, option,
                           "nowhere=0"], monkeypatch)
    assert status == 2
    assert f"{option} names pool 'nowhere'" in err and "its pools are dram, pmm" in err


def test_a_preset_is_fitted_to_this_machine_by_default(tmp_path, monkeypatch):
    plan = str(tmp_path / "plan.json")
    status, _, _ = _run(["baseline", "example:mlp", "--system", "optane-2019", "--ratio", "4:1",
                         "--planner", "first-touch", "-o", plan], monkeypatch)
    assert status == 0
    run = ["run", plan, "--graph", "example:mlp", "--system", "optane-2019", "--repeat", "1",
           "--flops-scale", "1e-4"]
    status, out, _ = _run([*run, "--json"], monkeypatch)
    facts = json.loads(out)
    assert status == 0 and facts["check"]["matches"]
    assert all(p["arena_nbytes"] < 1 << 30 for p in facts["pools"])  # not the 715 GiB of pmm
    assert any("'pmm': arena of" in note and "instead of its capacity" in note
               for note in facts["notes"])
    assert facts["predicted_for"].startswith("the optane-2019 preset's machine")
    status, out, _ = _run(run, monkeypatch)
    assert "on the optane-2019 preset's machine (its published speeds), not this one" in " ".join(
        out.split())
    status, _, err = _run([*run, "--no-fit-machine"], monkeypatch)
    assert status == 1 and "error: " in err  # node 2, or 715 GiB, is not on this machine



def test_run_a_plan_file_with_reruns(tmp_path, monkeypatch):
    """A plan file of version 2 (reruns) runs from the command line; its reruns' notes show."""
    from tests.executor.helpers import recompute_plan, recompute_step

    from autotm_core.addresses import assign_offsets

    graph, system = recompute_step(), two_pools()
    plan = assign_offsets(recompute_plan(graph, system), graph, system).plan
    paths = [tmp_path / "plan.json", tmp_path / "graph.json", tmp_path / "system.json"]
    save_plan(plan, paths[0])
    save_graph(graph, paths[1])
    save_system(system, paths[2])
    assert json.loads(paths[0].read_text())["version"] == 2
    plan_file, graph_file, system_file = (str(p) for p in paths)
    status, out, _ = _run(["run", plan_file, "--graph", graph_file, "--system", system_file,
                           "--repeat", "1", "--json"], monkeypatch)
    assert status == 0
    facts = json.loads(out)
    assert facts["check"]["matches"]
    assert any("reruns" in note for note in facts["notes"])
