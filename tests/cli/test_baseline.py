"""``baseline`` on the command line: every policy, plan files, JSON facts, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotm_core.cli.main import main
from autotm_core.examples import build_example
from autotm_core.plans import load_plan, verify_plan
from autotm_core.presets import preset


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("policy", ["first-touch", "2lm", "greedy", "all-slow"])
def test_every_policy_reports_a_slowdown_against_all_fast(
    policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = _json(["baseline", "example:mlp", "--system", "optane-2019", "--ratio", "4:1",
                   "--policy", policy, "--json"], capsys)
    assert facts["policy"] == policy
    peak = build_example("mlp").liveness.peak_nbytes
    assert facts["fast_capacity_nbytes"] == peak // 5
    assert facts["slowdown"] == pytest.approx(facts["step_seconds"] / facts["all_fast_seconds"])
    assert facts["slowdown"] > 1
    if policy == "2lm":
        assert facts["step_seconds"] == pytest.approx(facts["attributes"]["predicted_seconds"])
        assert 0 <= facts["cache"]["hit_rate"] <= 1


def test_all_fast_without_a_limit_is_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    facts = _json(["baseline", "example:cnn", "--system", "optane-2019", "--policy", "all-fast",
                   "--json"], capsys)
    assert facts["slowdown"] == pytest.approx(1.0)
    assert facts["moves"] == []


def test_plan_file_is_written_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    assert main(["baseline", "example:cnn", "--system", "optane-2019", "--fast-capacity", "8MiB",
                 "--policy", "greedy", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "baseline/greedy" in text
    assert "slowdown" in text
    assert "bytes in dram over kernels" in text
    plan = load_plan(out)
    assert plan.capacities["dram"] == 8 * 1024**2
    assert verify_plan(plan, build_example("cnn"), preset("optane-2019")) == []


def test_2lm_report_names_the_cache(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "example:mlp", "--system", "optane-2019", "--ratio", "1:1",
                 "--policy", "2lm", "--line-size", "1KiB", "--ways", "2"]) == 0
    text = capsys.readouterr().out
    assert "2LM cache" in text
    assert "1.00 KiB lines, 2-way LRU" in text
    assert "hit rate" in text


@pytest.mark.parametrize(
    ("extra", "status", "message"),
    [
        (["--policy", "all-fast", "--ratio", "1:1"], 1, "all-fast does not fit"),
        (["--policy", "greedy", "--fast-capacity", "lots"], 2, "cannot read 'lots' as a size"),
        (["--policy", "2lm", "--fast-capacity", "100"], 1, "holds no set"),
    ],
)
def test_impossible_requests_are_one_clear_error(
    extra: list[str], status: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "example:mlp", "--system", "optane-2019", *extra]) == status
    err = capsys.readouterr().err
    assert message in err
    assert "hint:" in err
    assert "Traceback" not in err
