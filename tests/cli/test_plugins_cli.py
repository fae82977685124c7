"""``plugins`` with a real third-party plugin distribution installed beside autotm-core.

tests/fixtures/autotm-example-plugin is built and installed with pip into a
temporary folder, which the commands then find through PYTHONPATH, exactly as
a user's site-packages would be found.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import ENV, Run, run_many

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "autotm-example-plugin"
DIST = "autotm-example-plugin"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pip") is None,
    reason="pip is not installed, so the example plugin package cannot be installed",
)


def _pip_install(source: Path, target: Path) -> None:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-cache-dir",
               "--disable-pip-version-check", "--target", str(target), str(source)]
    if importlib.util.find_spec("setuptools") is not None:
        command.insert(4, "--no-build-isolation")  # build offline with the setuptools we have
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    source = tmp_path_factory.mktemp("source") / FIXTURE.name
    shutil.copytree(FIXTURE, source)  # setuptools builds in the source tree: keep ours clean
    site = tmp_path_factory.mktemp("site")
    _pip_install(source, site)
    assert (site / "autotm_example_plugin").is_dir()
    path = os.pathsep.join(p for p in (str(site), ENV.get("PYTHONPATH", "")) if p)
    env = {**ENV, "PYTHONPATH": path, "COLUMNS": "400"}
    return run_many(
        {
            "plugins": ["plugins"],
            "info": ["info", "--json", "layers:784,1024,10"],
            "bad argument": ["info", "layers:abc"],
            "conflicted": ["info", "example:mlp"],
        },
        env=env,
    )


def _row(table: str, name: str) -> str:
    rows = [line for line in table.splitlines() if line.startswith(f"│ {name} ")]
    assert len(rows) == 1, table
    return rows[0]


@pytest.mark.slow
def test_plugins_lists_good_broken_invalid_and_conflicting(runs: dict[str, Run]) -> None:
    run = runs["plugins"]
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr + run.stdout

    good = _row(run.stdout, "layers")
    assert DIST in good and "│ yes " in good and "layer widths" in good

    broken = _row(run.stdout, "broken")
    assert DIST in broken and "│ no " in broken
    assert "failed to load: ModuleNotFoundError" in broken
    assert "autotm_example_plugin_missing_dependency" in broken

    invalid = _row(run.stdout, "not-a-frontend")
    assert "│ no " in invalid
    assert "is not a valid plugin for autotm_core.frontends" in invalid

    clash = _row(run.stdout, "json")
    assert "│ no " in clash
    assert "the name 'json' is claimed by 'autotm-core' and 'autotm-example-plugin'" in clash

    # autotm-core's other plugins are untouched by the broken ones
    assert "│ yes " in _row(run.stdout, "example")
    assert "solvers (autotm_core.solvers)" in run.stdout


def test_the_plugin_frontend_is_usable_from_info(runs: dict[str, Run]) -> None:
    import json

    run = runs["info"]
    assert run.returncode == 0, run.stderr
    facts = json.loads(run.stdout)
    assert facts["name"] == "layers-784-1024-10"
    assert facts["kernels"] == 7  # 2 forward, loss, 2 backward, 2 updates


def test_a_plugins_own_errors_reach_the_user_as_one_line(runs: dict[str, Run]) -> None:
    run = runs["bad argument"]
    assert run.returncode == 2  # the plugin's UsageError: the source is malformed
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: cannot read 'abc' as layer widths"]
    assert "hint: give two or more positive widths" in run.stderr
    assert "Traceback" not in run.stderr


def test_other_frontends_still_work_beside_a_broken_plugin(runs: dict[str, Run]) -> None:
    assert runs["conflicted"].returncode == 0, runs["conflicted"].stderr
