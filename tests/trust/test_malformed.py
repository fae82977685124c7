"""The malformed corpus: each input is refused with one clear error, by the library and by the
command line, and nothing crashes (see :mod:`.corpus`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotm_core.costs import load_costs
from autotm_core.errors import AutotmError
from autotm_core.formats import load_graph, load_system
from autotm_core.plans import load_plan, verify_plan
from autotm_core.sweep import load_grid

from .corpus import Bad, base, corpus

CORPUS = corpus()


def _inputs(tmp_path: Path, bad: Bad) -> tuple[Path, Path, Path]:
    """The bad file and the valid graph and system files it is used with."""
    graph, system = tmp_path / "graph.json", tmp_path / "system.json"
    graph.write_text(json.dumps(base("graph")))
    system.write_text(json.dumps(base("system")))
    path = tmp_path / f"bad-{bad.kind}.json"
    path.write_text(bad.text)
    return path, graph, system


def _read(bad: Bad, path: Path, graph: Path, system: Path) -> str | None:
    """Why the library refuses the file (``None``: it accepts it); other exceptions escape."""
    try:
        if bad.kind == "graph":
            load_graph(path)
        elif bad.kind == "system":
            load_system(path)
        elif bad.kind == "costs":
            load_costs(path, graph=load_graph(graph), system=load_system(system))
        elif bad.kind == "grid":
            load_grid(path)
        else:
            problems = verify_plan(load_plan(path), load_graph(graph), load_system(system))
            return "; ".join(problems) or None
    except AutotmError as exc:
        assert exc.message.strip(), f"{type(exc).__name__} without a message"
        return exc.message
    return None


@pytest.mark.parametrize("bad", CORPUS, ids=[f"{b.kind}: {b.name}" for b in CORPUS])
def test_the_library_refuses_it(bad: Bad, tmp_path: Path) -> None:
    why = _read(bad, *_inputs(tmp_path, bad))
    assert bad.expect != "refused" or why is not None, "accepted"


def _command(bad: Bad, path: Path, graph: Path, system: Path, tmp_path: Path) -> list[str]:
    g, s = str(graph), str(system)
    return {
        "graph": ["info", str(path)],
        "system": ["baseline", g, "--system", str(path), "--planner", "all-slow"],
        "costs": ["baseline", g, "--system", s, "--planner", "all-slow", "--costs", str(path)],
        "plan": ["verify", str(path), "--graph", g, "--system", s],
        "grid": ["sweep", "--grid", str(path), "-o", str(tmp_path / "results.json")],
    }[bad.kind]


@pytest.mark.parametrize("bad", CORPUS, ids=[f"{b.kind}: {b.name}" for b in CORPUS])
def test_the_command_line_refuses_it(bad: Bad, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from autotm_core.cli.main import main

    path, graph, system = _inputs(tmp_path, bad)
    try:
        status = main(_command(bad, path, graph, system, tmp_path))
    except SystemExit as exc:  # argparse
        status = int(exc.code or 0)
    said = capsys.readouterr()
    text = said.out + said.err
    assert status != 3 and "Traceback" not in text, f"crashed:\n{text}"
    if bad.expect != "legal":
        assert status == 1 and ("error:" in text or "INVALID" in text), (
            f"exit {status}:\n{text}")
