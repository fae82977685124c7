"""A limit above a pool's own capacity is refused, or with --insist planned with a warning."""

from __future__ import annotations

import pytest

from autotm_core import GraphBuilder
from autotm_core.capacity import Limit, over_capacity
from autotm_core.cli.main import main
from autotm_core.presets import preset


def _huge():  # type: ignore[no-untyped-def]
    b = GraphBuilder("huge")
    x = b.tensor("x", shape=(300_000_000_000,), dtype="float32", kind="input")  # 1.2 TB
    y = b.tensor("y", shape=(1,), dtype="float32", kind="output")
    b.kernel("k0", op="relu", inputs=[x], outputs=[y])
    return b.build()


def test_a_size_or_a_ratio_above_the_pool_is_named_with_what_fits() -> None:
    h200 = preset("gpu-h200")
    graph = _huge()
    [size] = over_capacity(Limit.from_options(nbytes="200GiB"), graph, h200)
    assert "a limit of 200.00 GiB" in size and "pool 'hbm'" in size
    assert "141,000,000,000 bytes) it has on gpu-h200" in size
    [ratio] = over_capacity(Limit.parse("4:1"), graph, h200)
    assert "limit 4:1 gives pool 'hbm'" in ratio and "a ratio of at least 8:1 fits" in ratio
    assert Limit.parse("8:1").capacities(graph, h200)["hbm"] <= 141_000_000_000
    assert over_capacity(Limit.parse("8:1"), graph, h200) == []
    assert over_capacity(Limit.parse("hbm=100GiB"), graph, h200) == []


@pytest.mark.parametrize("command", [["baseline", "--planner", "greedy"], ["compare",
                                     "--planners", "greedy"]])
def test_commands_refuse_it_unless_insisted(command: list[str], capsys) -> None:  # type: ignore[no-untyped-def]
    argv = [command[0], "example:mlp", "--system", "gpu-h200", "--fast-capacity", "200GiB",
            *command[1:]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error: a limit of 200.00 GiB" in err and "--insist" in err
    assert main([*argv, "--insist"]) == 0
    err = capsys.readouterr().err
    assert "warning: a limit of 200.00 GiB" in err and "planned anyway (--insist)" in err


def test_solve_refuses_it(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["solve", "example:mlp", "--system", "gpu-h200", "--fast-capacity",
                 "200GiB"]) == 2
    assert "is more than the 131.32 GiB" in capsys.readouterr().err


def test_a_sweep_warns_and_plans(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["sweep", "example:mlp", "--system", "gpu-h200", "--capacities",
                 "200GiB,1MiB", "--planners", "greedy", "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "a what-if" in err
