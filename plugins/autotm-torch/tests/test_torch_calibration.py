"""``calibrate --kernels torch``: this machine measured as PyTorch's kernels use it, so that
``run --kernels torch:SPEC`` on the calibrated system predicts what it measures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from autotm_core.cli.main import main
from autotm_core.formats.system_json import load_system

HERE = Path(__file__).parent


@pytest.fixture
def one_thread():  # type: ignore[no-untyped-def]
    """torch on one thread while the test runs, as OMP_NUM_THREADS=1 would: on a machine whose
    cores other processes share, torch's threads wait for each other (docs/torch-execution.md)
    and a step takes ten times longer now and then."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_the_rates_are_torchs_own() -> None:
    from autotm_torch.calibration import TorchRates

    rates = TorchRates()
    buffer = np.zeros(1 << 20, dtype=np.uint8)
    read, write = rates.read_rate(buffer, repeat=1), rates.write_rate(buffer, repeat=1)
    assert all(math.isfinite(x) and x > 0 for x in (read, write))
    assert buffer.view(np.float32)[0] == 1.0  # the fill wrote the buffer itself
    # a BLAS multiply is far beyond the replay kernels' 1 GFLOP/s, even on a busy machine
    assert rates.compute_rate(quick=True, repeat=1) > 5e9
    graph, runner = rates.overhead_step()
    assert len(graph.kernels) == 90 and runner.name == "torch"
    assert "torch" in rates.method and "thread" in rates.method


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_a_system_calibrated_for_torch_predicts_its_runs(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    system = str(tmp_path / "machine.json")
    assert main(["calibrate", "--quick", "--kernels", "torch", "--buffer", "16MiB",
                 "-o", system]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "per kernel" in text and "GFLOP/s" in text
    calibrated = load_system(system)
    assert calibrated.flops_per_second > 5e9 and calibrated.kernel_overhead_seconds > 0
    assert "calibrate --kernels torch" in calibrated.source
    spec = f"{HERE / 'torch_models.py'}:wide_mlp_factory"
    graph, plan = str(tmp_path / "graph.json"), str(tmp_path / "plan.json")
    assert main(["import", "torch", spec, "-o", graph]) == 0
    assert main(["baseline", graph, "--system", system, "--ratio", "1:1", "--planner",
                 "first-touch", "-o", plan]) == 0
    capsys.readouterr()
    assert main(["run", plan, "--graph", graph, "--system", system, "--kernels",
                 f"torch:{spec}", "--repeat", "5", "--json"]) == 0
    captured = capsys.readouterr()
    assert "not calibrated" not in captured.err
    facts = json.loads(captured.out)
    # within 25% on this machine (docs/torch-execution.md has the figures); a factor of two
    # here, so that other processes on the machine do not fail the test
    ratio = facts["predicted_step_seconds"] / facts["on_cpu_step_seconds"]
    print(f"predicted {ratio - 1:+.1%} of the on-CPU step")
    assert 0.5 < ratio < 2, facts


def test_a_run_on_a_system_not_calibrated_for_torch_says_so(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    import attrs

    from autotm_core.formats.system_json import save_system
    from autotm_core.presets import preset

    # a system file as one written by hand: no fixed time per kernel, pools unbounded (the
    # run packs the plan's tensors itself)
    optane = preset("optane-2019")
    system = str(tmp_path / "by-hand.json")
    save_system(attrs.evolve(optane, name="by-hand", pools=tuple(
        attrs.evolve(p, capacity_nbytes=None, numa_node=None) for p in optane.pools)), system)
    spec = f"{HERE / 'torch_models.py'}:mlp_factory"
    graph, plan = str(tmp_path / "graph.json"), str(tmp_path / "plan.json")
    assert main(["import", "torch", spec, "-o", graph]) == 0
    assert main(["baseline", graph, "--system", system, "--ratio", "1:1", "--planner",
                 "all-slow", "-o", plan]) == 0
    capsys.readouterr()
    assert main(["run", plan, "--graph", graph, "--system", system, "--kernels",
                 f"torch:{spec}", "--repeat", "1"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "was not calibrated for torch's kernels" in err
    assert "calibrate --kernels torch -o FILE" in err
