"""Pictures and HTML reports: written, self-contained, and rendered by a real headless browser."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autotm_core.baselines import all_fast, greedy
from autotm_core.capacity import fast_capacity
from autotm_core.costs import resolve_costs
from autotm_core.errors import ResourceError, UsageError
from autotm_core.report import figures
from autotm_core.report.html import plan_html, sweep_html, write_html
from autotm_core.report.plan_report import simulation_facts
from autotm_core.simulation import simulate
from autotm_core.sweep import PriceModel, run_sweep, sweep_points

pytest.importorskip("matplotlib", reason="the plots extra is not installed")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def simulated(cnn, optane):
    plan = greedy(cnn, optane, fast_capacity_nbytes=fast_capacity(cnn, ratio="4:1"))
    costs = resolve_costs(cnn, optane)
    unbounded = optane.with_capacity(optane.fast.name, None)
    ideal = simulate(all_fast(cnn, unbounded), cnn, unbounded, costs).step_seconds
    sim = simulate(plan, cnn, optane, costs)
    return plan, sim, simulation_facts(sim, all_fast_seconds=ideal)


def test_figures_are_written_as_png_and_svg(tmp_path: Path, simulated) -> None:
    plan, sim, _ = simulated
    png = figures.save_figure(figures.memory_figure(sim, plan), tmp_path / "m.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = figures.save_figure(figures.kernel_time_figure(sim), tmp_path / "k.svg")
    assert "<svg" in svg.read_text()
    curve = figures.tradeoff_figure({"greedy": [(10, 2.0), (20, 1.2), (40, 1.0)]},
                                    knees={"greedy": (20, 1.2)}, budget=1.5)
    assert figures.figure_svg(curve).startswith("<svg")
    with pytest.raises(UsageError, match="unknown type 'jpg'"):
        figures.save_figure(figures.kernel_time_figure(sim), tmp_path / "k.jpg")


def test_missing_matplotlib_names_the_extra(monkeypatch, simulated) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    with pytest.raises(ResourceError) as info:
        figures.memory_figure(simulated[1])
    assert "autotm-core[plots]" in (info.value.hint or "")


def _self_contained(text: str) -> None:
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    for outside in ("<script", "<link", "<img", "<iframe", "@import"):
        assert outside not in text, outside
    assert not re.search(r"""(href|src)\s*=\s*["'](?!#)""", text)  # links only inside the page
    assert not re.search(r"url\((?!#)", text)  # only references inside the page (SVG clips)


def _screenshot(tmp_path: Path, page: Path) -> np.ndarray:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium), so the HTML report "
                    "cannot be opened in a headless browser here")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1200,900", page.resolve().as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists(), "chromium wrote no screenshot"
    import matplotlib.image

    return matplotlib.image.imread(shot)


def _not_blank(pixels: np.ndarray) -> None:
    rgb = pixels[..., :3].reshape(-1, 3)
    assert rgb.std() > 0.05  # text, tables and charts, not one flat colour
    # coloured pixels (the filled areas of the charts), not only black text on white
    assert (rgb.max(axis=1) - rgb.min(axis=1) > 0.2).mean() > 0.005


def test_plan_report_in_a_headless_browser(tmp_path: Path, simulated) -> None:
    plan, sim, facts = simulated
    page = write_html(tmp_path / "plan.html", plan_html(plan, sim, facts))
    text = page.read_text()
    _self_contained(text)
    assert "Memory over time" in text and "baseline/greedy" in text
    _not_blank(_screenshot(tmp_path, page))


def test_sweep_report_in_a_headless_browser(tmp_path: Path) -> None:
    results = run_sweep(sweep_points(graphs=["example:cnn"], system="optane-2019",
                                     planners=["first-touch", "greedy"],
                                     limits=["0:1", "1:1", "2:1", "4:1", "8:1"]))
    page = write_html(tmp_path / "sweep.html",
                      sweep_html(results, price=PriceModel(), budget=2.0))
    text = page.read_text()
    _self_contained(text)
    assert "Cheapest within a 2x slowdown budget" in text and "(knee)" in text
    # every planner's knee is drawn, in its legend; the highlighted rows are explained
    knees = {c.planner for c in results.curves() if c.knee is not None}
    assert knees == {"first-touch", "greedy"}
    for planner in knees:
        assert f"{planner}&#x27;s knee" in text or f"{planner}'s knee" in text, planner
    assert "Highlighted rows" in text and "cheapest point within the 2x" in text
    _not_blank(_screenshot(tmp_path, page))


@pytest.mark.highs
def test_plot_html_says_how_good_the_plan_is(tmp_path: Path) -> None:
    """The page carries the limits, the solver's bound and gap, and every baseline."""
    from autotm_core.cli.main import main

    plan, page = tmp_path / "plan.json", tmp_path / "plan.html"
    point = ["--system", "optane-2019"]
    assert main(["solve", "example:mlp", *point, "--ratio", "4:1", "--time-limit", "20",
                 "-o", str(plan)]) == 0
    assert main(["plot", str(plan), "--graph", "example:mlp", *point, "--html", str(page)]) == 0
    text = re.sub(r"<[^>]+>", " ", page.read_text())
    for words in ("limits", "dram", "solver", "highs", "lower bound", "gap to the bound",
                  "Against the baselines", "first-touch", "greedy", "2lm", "this plan"):
        assert words in text, words
    _self_contained(page.read_text())


def test_the_sweep_table_scrolls_and_wraps_names_instead_of_being_cut(tmp_path: Path) -> None:
    results = run_sweep(sweep_points(graphs=["example:cnn"], system="hbm-dram-cxl",
                                     planners=["first-touch"],
                                     limits=["hbm=4:1,dram=4:1", "hbm=1:1"]))
    text = sweep_html(results, price=PriceModel())
    tables = re.findall(r"<table>.*?</table>", text)
    points = next(t for t in tables if "status" in t)
    assert f"<div class='wide'>{points}</div>" in text  # scrolls sideways, never cut
    assert "hbm=4:<wbr>1,<wbr>dram=4:<wbr>1" in points  # a long limit may wrap
    assert ".wide { overflow-x: auto" in text and "td.l { white-space: normal; }" in text
    assert "<td>73.8%</td>" in points and "<td>ok" in points  # numbers: plain, unwrapped


def test_a_copy_in_flight_is_drawn_over_its_flight() -> None:
    from matplotlib.collections import LineCollection

    from autotm_core.plans import Move, MoveKind, Residency, make_plan, verify_plan
    from plans.random_plans import tiny_graph, tiny_system
    from simulation.test_simulate import per_entry_costs

    graph, system = tiny_graph(), tiny_system()
    plan = make_plan(graph, system, planner="hand", residencies=[
        Residency("x", "fast", 0, 0), Residency("w", "slow", 0, 3), Residency("w", "fast", 0, 2),
        Residency("a", "fast", 0, 3), Residency("b", "fast", 1, 2), Residency("c", "fast", 2, 3),
        Residency("loss", "fast", 3, 3),
    ], moves=[Move("w", "slow", "fast", 0, MoveKind.ASYNC, until=2)])
    assert verify_plan(plan, graph, system) == []
    sim = simulate(plan, graph, system, per_entry_costs(1e-9, 1e-8))
    figure = figures.memory_figure(sim, plan)
    fast = figure.axes[0]
    flights = [c for c in fast.collections if isinstance(c, LineCollection)]
    assert len(flights) == 1
    (segment,) = flights[0].get_segments()
    assert segment[:, 0].tolist() == [0, 1]  # issued at k0, in flight until k2 needs it
