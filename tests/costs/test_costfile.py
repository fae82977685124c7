"""The cost file: lossless round trip, restricted tables, one clear error per mistake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from autotm_core import Graph, MemorySystem, Pool
from autotm_core.costs import (
    TableCosts,
    costs_to_document,
    load_costs,
    resolve_costs,
    roofline_costs,
    save_costs,
)
from autotm_core.errors import FormatError, PlanError, UsageError


def _same_tables(a: Any, b: Any, n_kernels: int) -> None:
    for k in range(n_kernels):
        ta, tb = a.table(k), b.table(k)
        np.testing.assert_array_equal(ta.configs, tb.configs)
        np.testing.assert_array_equal(ta.seconds, tb.seconds)


def test_round_trip_is_lossless(mlp: Graph, optane: MemorySystem, tmp_path: Path) -> None:
    roofline = roofline_costs(mlp, optane)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    save_costs(roofline, first, graph=mlp, system=optane, machine="xeon", context="test")
    loaded = load_costs(first, graph=mlp, system=optane)
    assert isinstance(loaded, TableCosts)
    assert loaded.n_pools == 2
    _same_tables(roofline, loaded, len(mlp.kernels))
    save_costs(loaded, second, graph=mlp, system=optane, machine="xeon", context="test")
    assert first.read_text() == second.read_text()
    placement = np.random.default_rng(1).integers(0, 2, len(mlp.liveness.kernel_tensors))
    np.testing.assert_array_equal(loaded.seconds_all(placement), roofline.seconds_all(placement))


def _pool(name: str) -> Pool:
    return Pool(name, None, 1e11, 5e10, 1e-7)


def test_three_pool_round_trip(cnn: Graph, tmp_path: Path) -> None:
    system = MemorySystem("three", pools=(_pool("hbm"), _pool("dram"), _pool("cxl")))
    costs = roofline_costs(cnn, system)
    path = tmp_path / "c.json"
    save_costs(costs, path, graph=cnn, system=system)
    loaded = load_costs(path, graph=cnn, system=system)
    assert loaded.n_pools == 3
    _same_tables(costs, loaded, len(cnn.kernels))


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def document(mlp: Graph, optane: MemorySystem) -> dict[str, Any]:
    return costs_to_document(roofline_costs(mlp, optane), graph=mlp, system=optane)


def test_restricted_table(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                          tmp_path: Path) -> None:
    relu = document["kernels"][1]
    assert relu["name"] == "relu0"
    relu["configs"] = [c for c in relu["configs"] if len(set(c["pools"].values())) == 1]
    costs = load_costs(_write(tmp_path, document), graph=mlp, system=optane)
    assert costs.table(1).configs.tolist() == [[0, 0], [1, 1]]
    assert costs.seconds(1, [1, 1]) == relu["configs"][1]["seconds"]
    with pytest.raises(PlanError, match="not in its cost table"):
        costs.seconds(1, [0, 1])


def _error(tmp_path: Path, document: dict[str, Any], mlp: Graph, optane: MemorySystem) -> str:
    with pytest.raises(FormatError) as info:
        load_costs(_write(tmp_path, document), graph=mlp, system=optane)
    message = str(info.value)
    assert message.startswith(str(tmp_path / "costs.json"))
    return message


def test_missing_kernel(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                        tmp_path: Path) -> None:
    del document["kernels"][2]
    message = _error(tmp_path, document, mlp, optane)
    assert "no costs for: 1 problem: kernel 'linear1'" in message


def test_kernel_without_configuration(mlp: Graph, optane: MemorySystem,
                                      document: dict[str, Any], tmp_path: Path) -> None:
    document["kernels"][0]["configs"] = []
    assert "kernels[0].configs: kernel 'linear0' has no configuration" in _error(
        tmp_path, document, mlp, optane)


def test_unknown_kernel_and_duplicate(mlp: Graph, optane: MemorySystem,
                                      document: dict[str, Any], tmp_path: Path) -> None:
    document["kernels"].append(dict(document["kernels"][0]))
    assert "kernels[24].name: kernel 'linear0' is listed twice" in _error(
        tmp_path, document, mlp, optane)
    document["kernels"][24]["name"] = "nope"
    assert "kernels[24].name: graph 'mlp' has no kernel 'nope'" in _error(
        tmp_path, document, mlp, optane)


def test_unknown_pool(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                      tmp_path: Path) -> None:
    document["kernels"][1]["configs"][0]["pools"]["z0"] = "hbm"
    message = _error(tmp_path, document, mlp, optane)
    assert "kernels[1].configs[0].pools.z0: kernel 'relu0', tensor 'z0': 'hbm' is not" in message
    document["kernels"][1]["configs"][0]["pools"]["z0"] = "dram"
    document["system"]["pools"].append("hbm")
    assert "system.pools[2]: memory system 'optane-2019' has no pool 'hbm'" in _error(
        tmp_path, document, mlp, optane)


def test_tensors_missing_or_foreign(mlp: Graph, optane: MemorySystem,
                                   document: dict[str, Any], tmp_path: Path) -> None:
    pools = document["kernels"][1]["configs"][3]["pools"]
    del pools["a0"]
    assert "kernels[1].configs[3].pools: kernel 'relu0': tensor 'a0' is not given a pool" in _error(
        tmp_path, document, mlp, optane)
    pools["a0"] = "pmm"
    pools["x"] = "pmm"
    assert "pools.x: kernel 'relu0' does not touch tensor 'x'" in _error(
        tmp_path, document, mlp, optane)


@pytest.mark.parametrize("bad", [-1.0, float("inf"), float("nan"), "1 ms", None])
def test_bad_time(bad: object, mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                  tmp_path: Path) -> None:
    document["kernels"][3]["configs"][1]["seconds"] = bad
    message = _error(tmp_path, document, mlp, optane)
    assert "kernels[3].configs[1].seconds" in message


def test_duplicate_configuration(mlp: Graph, optane: MemorySystem,
                                 document: dict[str, Any], tmp_path: Path) -> None:
    configs = document["kernels"][1]["configs"]
    configs.append(configs[0])
    assert "kernels[1].configs[4]: kernel 'relu0': same pools as configs[0]" in _error(
        tmp_path, document, mlp, optane)


def test_wrong_version_and_kind(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                                tmp_path: Path) -> None:
    document["version"] = 2
    assert "version: 2 is not supported" in _error(tmp_path, document, mlp, optane)
    document["version"], document["format"] = 1, "autotm-core/plan"
    assert "is a plan file; expected a costs file" in _error(tmp_path, document, mlp, optane)


def test_unknown_field(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                       tmp_path: Path) -> None:
    document["kernels"][0]["config"] = []
    assert "kernels[0]: unknown field 'config'" in _error(tmp_path, document, mlp, optane)


def test_other_system_name_warns(mlp: Graph, optane: MemorySystem, document: dict[str, Any],
                                 tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    document["system"]["name"] = "elsewhere"
    load_costs(_write(tmp_path, document), graph=mlp, system=optane)
    assert "made for memory system 'elsewhere'" in caplog.records[0].getMessage()


def test_save_for_another_system_is_refused(mlp: Graph, optane: MemorySystem,
                                            tmp_path: Path) -> None:
    three = MemorySystem("three", pools=tuple(_pool(n) for n in ("a", "b", "c")))
    with pytest.raises(UsageError, match="2 pools"):
        save_costs(roofline_costs(mlp, optane), tmp_path / "x.json", graph=mlp, system=three)


def test_resolve_prefers_the_file(mlp: Graph, optane: MemorySystem, tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_costs(roofline_costs(mlp, optane), path, graph=mlp, system=optane)
    costs = resolve_costs(mlp, optane, costs_path=path)
    assert isinstance(costs, TableCosts)
    assert costs.separable() is None
