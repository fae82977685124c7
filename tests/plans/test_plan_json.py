"""The plan file: lossless round trip, and errors naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotm_core.errors import FormatError
from autotm_core.plans import load_plan, save_plan
from autotm_core.plans.plan_json import plan_to_document

from .random_plans import three_pools, tiny_plan
from .test_verify_properties import chain


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    plan = attrs.evolve(
        tiny_plan(offsets=True),
        attributes={"objective": 1.5e-3, "gap": 0.01, "options": {"limits": [1, 2]}},
    )
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    assert load_plan(path) == plan
    doc = json.loads(path.read_text())
    assert doc["format"] == "autotm-core/plan" and doc["version"] == 1
    assert doc["moves"][0] == {
        "tensor": "w",
        "from": "slow",
        "to": "fast",
        "kernel": 2,
        "kind": "sync",
    }


@settings(max_examples=15, deadline=None)
@given(layers=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_random_plans_round_trip(
    tmp_path_factory: pytest.TempPathFactory, layers: int, seed: int
) -> None:
    from .random_plans import random_plan

    plan = random_plan(chain(layers), three_pools(), seed)
    path = tmp_path_factory.mktemp("plans") / "plan.json"
    save_plan(plan, path)
    assert load_plan(path) == plan


def test_attributes_must_be_json(tmp_path: Path) -> None:
    plan = attrs.evolve(tiny_plan(), attributes={"solver": object()})
    with pytest.raises(FormatError, match="attributes"):
        save_plan(plan, tmp_path / "plan.json")


def write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["residencies"][2].update(first="2"), "residencies[2].first"),
        (lambda d: d["residencies"][0].pop("pool"), "residencies[0].pool"),
        (lambda d: d["residencies"][1].update(size=3), "residencies[1]"),
        (lambda d: d["moves"][1].update(kind="eventually"), "moves[1].kind"),
        (lambda d: d["moves"][0].update(kernel=True), "moves[0].kernel"),
        (lambda d: d["configs"][3].__setitem__(1, 7), "configs[3][1]"),
        (lambda d: d.update(capacities={"fast": "lots"}), "capacities.fast"),
        (lambda d: d.pop("graph"), "graph"),
        (lambda d: d.update(version=9), "version"),
        (lambda d: d.update(format="autotm-core/graph"), "format"),
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, change, field: str) -> None:  # type: ignore[no-untyped-def]
    doc = plan_to_document(tiny_plan())
    change(doc)
    path = write(tmp_path, doc)
    with pytest.raises(FormatError) as caught:
        load_plan(path)
    assert str(path) in caught.value.message
    assert field in caught.value.message


def test_truncated_file(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(plan_to_document(tiny_plan()))[:50])
    with pytest.raises(FormatError, match="truncated"):
        load_plan(path)
