"""The built-in solvers as plugins: discovery, availability reasons, the CLI listing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autotm_core.errors import PluginError
from autotm_core.plugins import discover, get_solver, is_solver, solvers
from autotm_core.solvers import Solver, SolverCapabilities


def test_builtin_solvers_are_registered_through_entry_points() -> None:
    entries = solvers()
    assert {"highs", "cbc", "glpk"} <= set(entries)
    for name in ("highs", "cbc", "glpk"):
        assert entries[name].distribution == "autotm-core"
        assert isinstance(entries[name].plugin, Solver) and is_solver(entries[name].plugin)
        assert isinstance(entries[name].plugin.capabilities, SolverCapabilities)
        assert entries[name].plugin.capabilities.mip


class _OldProtocol:
    """A backend of the old protocol: a Pyomo model in, no declared capabilities."""

    name = "old"
    description = "solves Pyomo models"
    mip_capable = True

    def unavailable_reason(self) -> None:
        return None

    def solve(self, model, config=None):
        raise AssertionError("never called")


class _EntryPoint:
    """Just enough of an entry point for :func:`discover`."""

    name, value, dist = "old", "tests:_OldProtocol", None

    def load(self):
        return _OldProtocol


def test_a_solver_without_declared_capabilities_is_not_a_valid_plugin() -> None:
    assert not is_solver(_OldProtocol())
    found = discover("autotm_core.solvers", is_solver, entry_points=[_EntryPoint()])
    assert found["old"].error == "tests:_OldProtocol is not a valid plugin for autotm_core.solvers"


@pytest.mark.glpk
def test_missing_glpk_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "swiglpk", None)  # find_spec then reports it absent
    with pytest.raises(PluginError, match=r"pip install 'autotm-core\[glpk\]'"):
        get_solver("glpk")


@pytest.mark.cbc
def test_missing_cbc_program_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pulp", None)
    monkeypatch.setitem(sys.modules, "cbcbox", None)
    monkeypatch.setenv("PATH", "")
    reason = solvers()["cbc"].error
    assert reason is not None and "pip install 'autotm-core[cbc]'" in reason


def test_plugins_command_lists_the_three_solvers_as_usable() -> None:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-m", "autotm_core", "plugins"], env=env,
                         capture_output=True, text=True, check=True).stdout
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 3}
    for name in ("highs", "cbc", "glpk"):
        assert "yes" in rows[name].split("│")[3], rows[name]
