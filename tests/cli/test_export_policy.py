"""``export-policy`` without a framework: which plugin writes the policy, and one clear error
when none can (the torch plugin's own tests write policies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotm_core import plugins
from autotm_core.cli.main import main


@pytest.fixture
def plan_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "plan.json"
    assert main(["baseline", "example:mlp", "--system", "gpu-h200", "--planner", "all-fast",
                 "-o", str(path)]) == 0
    capsys.readouterr()
    return path


def test_a_frontend_that_writes_no_policy_is_named(plan_file: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export-policy", str(plan_file), "--graph", "example:mlp", "--frontend",
                 "example", "-o", str(tmp_path / "policy.json")]) == 2
    err = capsys.readouterr().err
    assert "frontend 'example' cannot write a policy" in err
    assert not (tmp_path / "policy.json").exists()


def test_without_the_torch_plugin_the_error_says_what_to_install(
        plan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "frontends", lambda: {})
    assert main(["export-policy", str(plan_file), "--graph", "example:mlp",
                 "-o", str(tmp_path / "policy.json")]) == 2
    err = capsys.readouterr().err
    assert "no frontend called 'torch' is installed" in err
    assert "hint: install the torch plugin: pip install -e plugins/autotm-torch" in err


def test_options_belong_to_a_frontend_graph(plan_file: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "graph.json"
    assert main(["export-policy", str(plan_file), "--graph", str(graph), "--frontend", "example",
                 "--batch-size", "4", "-o", str(tmp_path / "policy.json")]) == 2
    assert "--option and --batch-size are for the frontend of a FRONTEND:ARGUMENT graph" \
        in capsys.readouterr().err
