"""The same point planned by solve, baseline, compare and sweep gives the same answer."""

from __future__ import annotations

import json

import pytest

from autotm_core.cli.main import main
from autotm_core.planning import PlanSettings, load_problem, plan

POINT = ["example:cnn", "--system", "optane-2019", "--ratio", "1:1"]


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.highs
def test_every_command_plans_a_point_the_same_way(capsys: pytest.CaptureFixture[str]) -> None:
    # every command fits addresses as solve does (sweep and compare once skipped it)
    # keeping and moving: the recomputing stages stop at their time limits, which differ
    # between the commands (compare and sweep: 60 s a point; solve: none)
    outcome = plan(load_problem("example:cnn", "optane-2019", limit="1:1"), "synchronous",
                   PlanSettings(recompute=False))
    assert outcome.addresses is not None and outcome.addresses.fits
    solve = _json(["solve", *POINT, "--no-recompute", "--json"], capsys)
    compare = _json(["compare", *POINT, "--planners", "synchronous,greedy", "--no-recompute",
                     "--json"], capsys)
    sweep = _json(["sweep", "example:cnn", "--system", "optane-2019", "--ratios", "1:1",
                   "--planners", "synchronous,greedy", "--no-recompute", "--json"], capsys)
    greedy = _json(["baseline", *POINT, "--planner", "greedy", "--json"], capsys)
    steps = {r["point"]["planner"]: r["step_seconds"] for r in compare}
    assert steps == {r["point"]["planner"]: r["step_seconds"] for r in sweep["points"]}
    assert steps["synchronous"] == solve["step_seconds"] == outcome.step_seconds
    by_name = {b["name"]: b["step_seconds"] for b in solve["baselines"]}
    assert steps["greedy"] == by_name["greedy"] == greedy["step_seconds"]
