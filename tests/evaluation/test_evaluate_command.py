"""``python -m autotm_core evaluate``: the report from a results file, and bad options."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from autotm_core.cli.main import main


def test_report_only_writes_results_page(tmp_path: Path) -> None:
    status = main(["evaluate", "--report-only", "--no-plots", "--only", "conventional",
                   "--docs", str(tmp_path)])
    assert status == 0
    text = (tmp_path / "results.md").read_text()
    assert "Conventional networks on optane-2019" in text and "_not run_" in text


def test_unknown_experiment_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status = main(["evaluate", "--only", "nope", "--docs", str(tmp_path)])
    assert status != 0
    err = capsys.readouterr().err
    assert "no experiment" in err and "Traceback" not in err


def test_help_lists_evaluate() -> None:
    from autotm_core.cli.main import build_parser

    out = io.StringIO()
    Console(file=out, width=100).print(build_parser().format_help())
    assert "evaluate" in out.getvalue()
