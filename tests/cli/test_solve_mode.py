"""``solve --mode``: the approximate planner from the command line."""

from __future__ import annotations

import json

import pytest

from autotm_core.cli.main import main


@pytest.mark.slow
def test_approximate_mode_reports_a_bound_and_beats_greedy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["solve", "example:mlp", "--system", "optane-2019", "--ratio", "4:1",
                   "--mode", "approximate", "--time-limit", "20", "--json"])
    assert status == 0
    facts = json.loads(capsys.readouterr().out)
    solve = facts["solve"]
    assert (solve["solver"], solve["mode"]) == ("highs", "approximate")
    assert facts["plan_source"] in ("ilp", "ilp by stretches", "greedy")
    assert solve["bound_seconds"] <= facts["step_seconds"] * (1 + 1e-9)
    greedy = next(b for b in facts["baselines"] if b["name"] == "greedy")
    assert facts["step_seconds"] <= greedy["step_seconds"] * (1 + 1e-9)
    assert facts["addresses"] is None


def test_unknown_mode_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["solve", "example:mlp", "--system", "optane-2019", "--ratio", "4:1",
              "--mode", "fastest"])
    assert exit_info.value.code == 2
    assert "--mode" in capsys.readouterr().err


@pytest.mark.parametrize("solver", ["glpk", "cbc"])
def test_approximate_mode_with_a_solver_it_cannot_use_is_refused_at_once(
    solver: str, capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["solve", "example:mlp", "--system", "optane-2019", "--ratio", "4:1",
                   "--mode", "approximate", "--solver", solver])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error:") and solver in err and "hint:" in err
    assert "Traceback" not in err


def test_recomputation_is_on_unless_turned_off() -> None:
    import argparse

    from autotm_core.cli.options import add_ilp_options, ilp_settings

    parser = argparse.ArgumentParser()
    add_ilp_options(parser)
    parser.add_argument("--debug", action="store_true")
    assert ilp_settings(parser.parse_args([])).recompute
    assert ilp_settings(parser.parse_args(["--recompute"])).recompute
    assert not ilp_settings(parser.parse_args(["--no-recompute"])).recompute


def test_copies_span_kernels_unless_turned_off_and_the_window_is_checked() -> None:
    import argparse

    from autotm_core.cli.options import add_ilp_options, ilp_settings
    from autotm_core.errors import UsageError

    parser = argparse.ArgumentParser()
    add_ilp_options(parser)
    default = ilp_settings(parser.parse_args([]))
    assert default.async_spans and default.async_window == 15
    chosen = ilp_settings(parser.parse_args(["--no-async-spans", "--async-window", "40"]))
    assert not chosen.async_spans and chosen.async_window == 40
    with pytest.raises(UsageError, match="--async-window 0 is out of range"):
        ilp_settings(parser.parse_args(["--async-window", "0"]))
