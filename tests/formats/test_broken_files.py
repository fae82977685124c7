"""Every broken file gives one AutotmError naming the file and the problem, with a hint."""

from __future__ import annotations

import pytest

from autotm_core.errors import AutotmError
from autotm_core.formats import load_graph, load_system
from autotm_core.presets import resolve_system

from .broken_files import BROKEN_GRAPHS, BROKEN_SYSTEMS, DATA


def test_every_data_file_is_catalogued() -> None:
    on_disk = {p.name for p in DATA.glob("*.json")}
    assert on_disk == set(BROKEN_GRAPHS) | set(BROKEN_SYSTEMS)


@pytest.mark.parametrize(("name", "problem"), sorted(BROKEN_GRAPHS.items()))
def test_broken_graph(name: str, problem: str) -> None:
    path = DATA / name
    with pytest.raises(AutotmError) as caught:
        load_graph(path)
    message = caught.value.message
    assert message.startswith(f"{path}: "), message
    assert problem in message
    assert "\n" not in message
    assert caught.value.hint


@pytest.mark.parametrize(("name", "problem"), sorted(BROKEN_SYSTEMS.items()))
def test_broken_memory_system(name: str, problem: str) -> None:
    path = DATA / name
    for load in (load_system, resolve_system):
        with pytest.raises(AutotmError) as caught:
            load(str(path))
        message = caught.value.message
        assert message.startswith(f"{path}: "), message
        assert problem in message
        assert "\n" not in message
        assert caught.value.hint


def test_missing_file_and_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AutotmError, match="no such file"):
        load_graph(tmp_path / "nope.json")
    with pytest.raises(AutotmError, match="is a folder, not a file"):
        load_system(tmp_path)


def test_all_record_problems_are_reported_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "g.json"
    path.write_text(
        '{"format": "autotm-core/graph", "version": 1, "name": "g", '
        '"tensors": [{"name": "a", "nbytes": -1}, {"name": "b"}, {"name": "c", "nbytes": 1}], '
        '"kernels": [{"name": "k", "op": "o", "inputs": "c"}]}'
    )
    with pytest.raises(AutotmError) as caught:
        load_graph(path)
    message = caught.value.message
    assert "3 problems" in message
    for part in ("tensors[0]", "tensors[1].nbytes", "kernels[0].inputs"):
        assert part in message
