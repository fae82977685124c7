"""The built-in presets: one memory-system file each, read once, usable by every command."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import attrs
import pytest

import autotm_core.presets as presets_module
from autotm_core.cli.main import main
from autotm_core.errors import MemorySystemError
from autotm_core.formats import load_system, save_system, system_to_document
from autotm_core.presets import PRESETS, preset

GB = 10**9

RECORDED = {
    "optane-2019": (2e12, [("dram", 192 * GB, 100e9), ("pmm", 768 * GB, 39e9)],
                    ("pmm", "dram", 29e9, 2e9), 2),
    "cxl-expander": (4e12, [("dram", 256 * GB, 250e9), ("cxl", 512 * GB, 50e9)],
                     ("cxl", "dram", 45e9, 22.5e9), 2),
    "gpu-h200": (200e12, [("hbm", 141 * GB, 4.8e12), ("host", 1000 * GB, 50e9)],
                 ("host", "hbm", 50e9, 50e9), 2),
    "hbm-dram-cxl": (4e12, [("hbm", 64 * GB, 800e9), ("dram", 256 * GB, 250e9),
                            ("cxl", 512 * GB, 50e9)],
                     ("dram", "hbm", 250e9, 125e9), 6),
}
"""Key fields of each preset as the Python code defined them before they became files
(issue 13): flop/s, pools as (name, capacity bytes, read bytes/s), the first copy link as
(from, to, sync bytes/s, async bytes/s), and how many copy links there are."""


def test_every_preset_has_a_file() -> None:
    assert list(PRESETS) == sorted(RECORDED)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_preset_keeps_its_recorded_values(name: str) -> None:
    flops, pools, first_link, n_links = RECORDED[name]
    system = preset(name)
    assert system.flops_per_second == flops
    assert [(p.name, p.capacity_nbytes, p.read_bytes_per_second) for p in system.pools] == pools
    link = system.links[0]
    assert (link.source, link.target, link.sync_bytes_per_second,
            link.async_bytes_per_second) == first_link
    assert len(system.links) == n_links


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_preset_file_is_its_saved_document(name: str, tmp_path: Path) -> None:
    system = preset(name)
    text = (resources.files("autotm_core.presets") / f"{name}.json").read_text("utf-8")
    assert json.loads(text) == system_to_document(system)
    save_system(system, tmp_path / "system.json")
    assert load_system(tmp_path / "system.json") == system


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_presets_are_documented_and_fastest_first(name: str) -> None:
    system = preset(name)
    assert system.name == name
    assert system.source and system.description
    reads = [p.read_bytes_per_second for p in system.pools]
    assert reads == sorted(reads, reverse=True)
    for i in range(len(system.pools)):
        for j in range(len(system.pools)):
            if i != j:
                assert system.copy_seconds(GB, i, j, asynchronous=True) > 0


def test_optane_preset_uses_the_papers_move_bandwidths() -> None:
    system = preset("optane-2019")
    pmm, dram = system.pool_index("pmm"), system.pool_index("dram")
    assert (system.fast.name, system.slow.name) == ("dram", "pmm")
    to_dram, to_pmm = system.link(pmm, dram), system.link(dram, pmm)
    assert (to_dram.sync_bytes_per_second, to_dram.async_bytes_per_second) == (29e9, 2e9)
    assert (to_pmm.sync_bytes_per_second, to_pmm.async_bytes_per_second) == (12e9, 2.5e9)
    assert preset("optane-2019").pools[1].numa_node == 2


def test_preset_is_read_once_and_shared() -> None:
    assert preset("gpu-h200") is preset("gpu-h200") is PRESETS["gpu-h200"]()
    assert preset("gpu-h200").fast.device == "cuda:0"


def test_unknown_preset_lists_them_all() -> None:
    with pytest.raises(MemorySystemError, match="no memory-system preset called 'optane'") as exc:
        preset("optane")
    assert all(name in exc.value.hint for name in RECORDED)


def test_preset_file_must_name_its_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_system(attrs.evolve(preset("optane-2019"), name="other"), tmp_path / "mine.json")
    monkeypatch.setattr(presets_module, "_FOLDER", tmp_path)
    with pytest.raises(MemorySystemError, match=r"mine\.json describes a system called 'other'"):
        presets_module._load.__wrapped__("mine")


@pytest.mark.highs
@pytest.mark.parametrize(
    "name,formulation",
    [(name, "static") for name in sorted(RECORDED)] + [("hbm-dram-cxl", None)],
)
@pytest.mark.slow
def test_every_preset_solves_on_the_command_line(
    name: str, formulation: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default formulation is tried on the preset that once only the evaluation knew.
    argv = ["solve", "example:mlp", "--system", name, "--ratio", "4:1", "--json"]
    argv += ["--formulation", formulation] if formulation else []
    assert main(argv) == 0, capsys.readouterr().err
    facts = json.loads(capsys.readouterr().out)
    assert facts["system"] == name
    assert facts["step_seconds"] >= facts["all_fast_seconds"] > 0
