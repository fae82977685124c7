"""Copies spanning kernels survive their files; plans without them keep their version."""

from __future__ import annotations

import json

import pytest

from autotm_core.errors import FormatError
from autotm_core.plans import Move, MoveKind, Plan, Rerun, load_plan, save_plan


def _plan(*moves: Move, reruns: tuple[Rerun, ...] = ()) -> Plan:
    return Plan(graph="g", system="s", capacities={"fast": 10}, residencies=(), moves=moves,
                configs=(), reruns=reruns)


def test_until_defaults_to_a_one_kernel_copy():
    assert Move("t", "fast", "slow", 3, MoveKind.ASYNC).until == 4
    assert Move("t", "fast", "slow", 3).until == 3
    assert not Move("t", "fast", "slow", 3, MoveKind.ASYNC).spans_kernels
    assert Move("t", "fast", "slow", 3, MoveKind.ASYNC, until=6).spans_kernels


def test_a_spanning_copy_round_trips_as_version_3(tmp_path):
    plan = _plan(Move("t", "fast", "slow", 1, MoveKind.ASYNC, until=5),
                 Move("u", "slow", "fast", 2, MoveKind.ASYNC), Move("v", "slow", "fast", 2))
    save_plan(plan, tmp_path / "p.json")
    document = json.loads((tmp_path / "p.json").read_text())
    assert document["version"] == 3
    assert document["moves"][0]["until"] == 5
    assert "until" not in document["moves"][1] and "until" not in document["moves"][2]
    assert load_plan(tmp_path / "p.json") == plan


@pytest.mark.parametrize(("reruns", "version"), [((), 1), ((Rerun(0, 2),), 2)])
def test_one_kernel_copies_keep_the_old_versions(tmp_path, reruns, version):
    plan = _plan(Move("t", "fast", "slow", 1, MoveKind.ASYNC), reruns=reruns)
    save_plan(plan, tmp_path / "p.json")
    document = json.loads((tmp_path / "p.json").read_text())
    assert document["version"] == version
    assert load_plan(tmp_path / "p.json") == plan


def test_an_old_file_reads_with_one_kernel_copies(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({
        "format": "autotm-core/plan", "version": 1, "graph": "g", "system": "s",
        "capacities": {}, "residencies": [], "configs": [],
        "moves": [{"tensor": "t", "from": "fast", "to": "slow", "kernel": 2, "kind": "async"}],
    }))
    (move,) = load_plan(tmp_path / "p.json").moves
    assert move.until == 3 and not move.spans_kernels


def test_until_in_an_old_version_is_refused_naming_the_version(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps({
        "format": "autotm-core/plan", "version": 2, "graph": "g", "system": "s",
        "capacities": {}, "residencies": [], "configs": [],
        "moves": [{"tensor": "t", "from": "a", "to": "b", "kernel": 2, "kind": "async",
                   "until": 5}],
    }))
    with pytest.raises(FormatError, match=r"moves\[0\]\.until: needs plan version 3"):
        load_plan(tmp_path / "p.json")


def test_a_wrong_until_round_trips_for_the_verifier_to_report(tmp_path):
    plan = _plan(Move("t", "fast", "slow", 4, MoveKind.SYNC, until=6))
    save_plan(plan, tmp_path / "p.json")
    assert load_plan(tmp_path / "p.json") == plan
