"""Terminal charts and the verify line fit the console, on a fixed-width colourless one."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from autotm_core.report.charts import CHART_MARGIN, memory_chart


def _text(renderable, width: int) -> str:  # type: ignore[no-untyped-def]
    console = Console(width=width, color_system=None, file=io.StringIO(), legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 120])
def test_the_capacity_label_stays_on_its_row_or_goes_to_the_title(width: int) -> None:
    chart_width = width - CHART_MARGIN  # as the reports size it
    for kernels in (24, 5000):  # narrower than the chart, and wider (bucketed)
        values = np.linspace(1, 100, kernels) * 2**20
        page = _text(memory_chart(values, width=chart_width, capacity=50 * 2**20,
                                  title="bytes in dram over kernels"), width)
        lines = page.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width, page
        assert sum("capacity 50.00 MiB" in line for line in lines) == 1, page
        assert not any(line.strip().startswith("capacity") for line in lines), page
        dashed = next(line for line in lines if "╌" in line)
        if kernels == 24:
            assert dashed.rstrip().endswith("capacity 50.00 MiB"), page
        else:
            assert "capacity 50.00 MiB (dashed)" in lines[0], page


def test_the_bottom_label_is_zero_where_the_columns_start() -> None:
    page = _text(memory_chart(np.array([80, 100]) * 2**20, width=10), 40)
    rows = [line for line in page.splitlines() if "│" in line]
    assert rows[0].split("│")[0].strip() == "100.00 MiB"
    assert rows[-1].split("│")[0].strip() == "0 B"


def test_verify_fits_80_columns(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from autotm_core.cli.main import main
    from autotm_core.planning import load_problem, plan
    from autotm_core.plans import save_plan

    monkeypatch.setenv("COLUMNS", "80")
    outcome = plan(load_problem("example:mlp", "optane-2019", limit="4:1"), "greedy")
    save_plan(outcome.plan, tmp_path / "p.json")
    assert main(["verify", str(tmp_path / "p.json"), "--graph", "example:mlp", "--system",
                 "optane-2019"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK ") and "capacities" in out and "dram 5.54 MiB" in out
    assert max(len(line.rstrip()) for line in out.splitlines()[1:]) <= 80, out
