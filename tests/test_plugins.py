"""Plugin discovery from entry points: order, type checks, failures and conflicts.

The entry points come from real distribution metadata (``*.dist-info`` folders
written to a temporary folder and read by :mod:`importlib.metadata`), so each
one knows its distribution as an installed plugin's would.
"""

from __future__ import annotations

import importlib.metadata
import random
from pathlib import Path

import pytest

from autotm_core.errors import PluginError
from autotm_core.frontends.json_frontend import JsonFrontend
from autotm_core.plugins import (
    FRONTENDS_GROUP,
    SOLVERS_GROUP,
    Frontend,
    PluginEntry,
    discover,
    frontends,
    get_frontend,
)

GROUP = "autotm_core.test_plugins"


class Unavailable:
    """A frontend that cannot run here."""

    name = "unavailable"
    description = "needs a package that is not installed"

    def unavailable_reason(self) -> str | None:
        return "install the 'frobnicate' extra"

    def load(self, source: object, **options: object) -> object:
        raise AssertionError("never called")


class Exploding(Unavailable):
    """A frontend whose availability check itself fails."""

    def unavailable_reason(self) -> str | None:
        raise RuntimeError("boom")


NOT_A_PLUGIN = 42

HERE = __name__  # the entry points below point into this very module


def _distribution(root: Path, name: str, entry_points: dict[str, str]) -> list:  # type: ignore[type-arg]
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")
    (dist,) = importlib.metadata.distributions(path=[str(root)])
    return list(dist.entry_points)


@pytest.fixture
def entry_points(tmp_path: Path) -> list[importlib.metadata.EntryPoint]:
    first = _distribution(tmp_path / "a", "first-dist", {
        "json": "autotm_core.frontends.json_frontend:JsonFrontend",
        "broken": "autotm_core_no_such_module:Frontend",
        "wrong-type": f"{HERE}:NOT_A_PLUGIN",
        "unavailable": f"{HERE}:Unavailable",
        "exploding": f"{HERE}:Exploding",
    })
    second = _distribution(tmp_path / "b", "second-dist", {
        "json": "autotm_core.frontends.example_frontend:ExampleFrontend",
        "example": "autotm_core.frontends.example_frontend:ExampleFrontend",
    })
    return first + second


def _is_frontend(obj: object) -> bool:
    return isinstance(obj, Frontend)


def test_discovery_is_deterministic(entry_points: list[importlib.metadata.EntryPoint]) -> None:
    results = []
    for seed in range(5):
        shuffled = list(entry_points)
        random.Random(seed).shuffle(shuffled)
        found = discover(GROUP, _is_frontend, entry_points=shuffled)
        results.append([(e.name, e.distribution, e.value, e.error) for e in found.values()])
    assert all(r == results[0] for r in results)
    assert [name for name, *_ in results[0]] == sorted(
        ["broken", "example", "exploding", "json", "unavailable", "wrong-type"]
    )


def test_each_kind_of_failure_is_kept_with_its_reason(
    entry_points: list[importlib.metadata.EntryPoint],
) -> None:
    found = discover(GROUP, _is_frontend, entry_points=entry_points)

    assert found["example"].usable and found["example"].distribution == "second-dist"
    assert isinstance(found["example"].plugin, Frontend)

    broken = found["broken"]
    assert not broken.usable and broken.plugin is None
    assert broken.error is not None
    assert broken.error.startswith("failed to load: ModuleNotFoundError")
    assert broken.distribution == "first-dist"

    wrong = found["wrong-type"]
    assert wrong.error == f"{HERE}:NOT_A_PLUGIN is not a valid plugin for {GROUP}"

    assert found["unavailable"].error == "install the 'frobnicate' extra"
    assert found["unavailable"].plugin is not None
    assert found["exploding"].error == "availability check failed: RuntimeError: boom"


def test_a_duplicate_name_names_both_distributions(
    entry_points: list[importlib.metadata.EntryPoint],
) -> None:
    clash = discover(GROUP, _is_frontend, entry_points=entry_points)["json"]
    assert not clash.usable and clash.plugin is None
    assert clash.error == ("the name 'json' is claimed by 'first-dist' and 'second-dist'; "
                           "uninstall one of them")


def test_the_same_entry_point_seen_twice_is_no_conflict(
    entry_points: list[importlib.metadata.EntryPoint],
) -> None:
    found = discover(GROUP, _is_frontend, entry_points=entry_points + entry_points)
    assert found["example"].usable


def test_built_in_frontends_are_registered_through_entry_points() -> None:
    installed = frontends()
    assert installed["json"].distribution == "autotm-core"
    assert installed["json"].value == "autotm_core.frontends.json_frontend:JsonFrontend"
    assert isinstance(get_frontend("json"), JsonFrontend)
    assert installed["example"].usable
    assert [e.group for e in installed.values()] == [FRONTENDS_GROUP] * len(installed)


def test_unknown_frontend() -> None:
    with pytest.raises(PluginError, match="no frontend called 'nope' is installed") as caught:
        get_frontend("nope")
    assert "json" in caught.value.message
    assert "plugins" in caught.value.hint


def test_unknown_solver_lists_only_usable_ones_as_usable() -> None:
    import autotm_core.plugins as plugins

    entries = {"highs": PluginEntry(SOLVERS_GROUP, "highs", "autotm-core", "x:y", plugin=object()),
               "cbc": PluginEntry(SOLVERS_GROUP, "cbc", "autotm-core", "x:y", error="no program")}
    with pytest.raises(PluginError) as caught:
        plugins._usable(entries, "gurobi", "solver")
    assert "(usable: highs; installed but unusable here: cbc)" in caught.value.message
