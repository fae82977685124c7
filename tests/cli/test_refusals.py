"""Inputs refused in one line before planning, never an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotm_core.cli.main import main

NO_KERNELS = ('{"format": "autotm-core/graph", "version": 1, "name": "nok", "tensors": '
              '[{"name": "w", "nbytes": 4096, "kind": "parameter"}], "kernels": []}')


@pytest.mark.parametrize("command", [["solve", "--ratio", "1:1"],
                                     ["baseline", "--planner", "greedy"],
                                     ["compare", "--ratio", "1:1", "--planners", "static"]])
def test_a_graph_with_tensors_but_no_kernels(command: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nok.json"
    path.write_text(NO_KERNELS)
    assert main([command[0], str(path), "--system", "optane-2019", *command[1:]]) == 1
    err = capsys.readouterr().err
    assert "error: graph 'nok' has no kernels: there is no step to plan" in err
    assert "internal error" not in err


def test_a_size_just_above_two_to_the_sixty_is_refused(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["baseline", "example:mlp", "--system", "optane-2019", "--planner", "greedy",
                 "--limit", f"dram={2**60 + 1}"]) == 2
    assert "more than the 2^60 bytes" in capsys.readouterr().err
