"""Calibrating for a kind of kernels: its compute rate, bandwidths and fixed time per kernel
reach the memory-system file, and the roofline charges the fixed time to every kernel."""

from __future__ import annotations

import json
import time
from pathlib import Path

import attrs
import numpy as np
import pytest

from autotm_core.calibration.calibrate import calibrate, calibrated_system
from autotm_core.calibration.overhead import measure_overhead
from autotm_core.calibration.rates import kernel_rates
from autotm_core.cli.main import main
from autotm_core.costs import roofline_costs
from autotm_core.executor import ReplayKernels
from autotm_core.formats.system_json import load_system, save_system
from autotm_core.ir import Graph, GraphBuilder
from autotm_core.presets import preset

BUSY_SECONDS = 1e-3
"""CPU time each kernel of :class:`_BusyKernels` spends besides the replay kernel's."""


def _tiny_graph() -> Graph:
    g = GraphBuilder("tiny")
    x = g.tensor("x", nbytes=64, kind="input")
    a = g.tensor("a", nbytes=64)
    b = g.tensor("b", nbytes=64, kind="output")
    g.kernel("one", op="relu", inputs=[x], outputs=[a], flops=0)
    g.kernel("two", op="relu", inputs=[a], outputs=[b], flops=0)
    return g.build()


class _BusyKernels(ReplayKernels):
    """Replay kernels that each keep the CPU busy for :data:`BUSY_SECONDS` more: a framework
    whose every kernel has a fixed cost."""

    def run_kernel(self, k: int) -> int:
        until = time.thread_time() + BUSY_SECONDS
        while time.thread_time() < until:
            pass
        return super().run_kernel(k)


@attrs.define
class _FixedRates:
    """A kind of kernels with known rates (and a fixed time per kernel when ``busy``)."""

    busy: bool = False
    name: str = "fixed"
    method: str = "rates fixed by the test"

    def compute_rate(self, *, quick: bool, repeat: int) -> float:
        return 5e10

    def read_rate(self, buffer, *, repeat: int) -> float:  # type: ignore[no-untyped-def]
        return 2e10

    def write_rate(self, buffer, *, repeat: int) -> float:  # type: ignore[no-untyped-def]
        return 1e10

    def overhead_step(self):  # type: ignore[no-untyped-def]
        return (_tiny_graph(), _BusyKernels()) if self.busy else None


def test_the_kinds_rates_and_fixed_time_make_the_system(tmp_path: Path) -> None:
    calibration = calibrate(quick=True, buffer_nbytes=1 << 20, kernels=_FixedRates(busy=True))
    assert calibration.kernels == "fixed" and calibration.flops_per_second == 5e10
    assert all((n.read_bytes_per_second, n.write_bytes_per_second) == (2e10, 1e10)
               for n in calibration.nodes)
    assert calibration.overhead_kernels == 2
    # the busy loop, and the replay kernel and the loop's marks around it (microseconds)
    assert BUSY_SECONDS * 0.9 <= calibration.kernel_overhead_seconds <= BUSY_SECONDS * 5
    system = calibrated_system(calibration)
    assert system.kernel_overhead_seconds == calibration.kernel_overhead_seconds
    assert "calibrate --kernels fixed" in system.source
    assert "rates fixed by the test" in system.source
    assert "per kernel" in system.source
    path = tmp_path / "system.json"
    save_system(system, path)
    assert load_system(path).kernel_overhead_seconds == system.kernel_overhead_seconds


def test_without_a_step_no_fixed_time_is_measured() -> None:
    calibration = calibrate(quick=True, buffer_nbytes=1 << 20, kernels=_FixedRates())
    assert calibration.kernel_overhead_seconds == 0 and calibration.overhead_kernels == 0
    system = calibrated_system(calibration)
    assert system.kernel_overhead_seconds == 0 and "per kernel" not in system.source


def test_the_fixed_time_is_what_the_step_takes_beyond_the_roofline() -> None:
    system = calibrated_system(calibrate(quick=True, buffer_nbytes=1 << 20,
                                         kernels=_FixedRates()))
    slow = attrs.evolve(system, kernel_overhead_seconds=1.0)  # not used: measured without
    overhead = measure_overhead(_tiny_graph(), _BusyKernels(), slow, repeat=3)
    assert overhead.kernels == 2
    assert overhead.predicted_step_seconds < 1e-5  # 64-byte tensors, no FLOPs
    assert overhead.seconds == pytest.approx(
        (overhead.measured_step_seconds - overhead.predicted_step_seconds) / 2)
    assert overhead.seconds >= BUSY_SECONDS * 0.9


def test_the_roofline_charges_the_fixed_time_to_every_kernel(tmp_path: Path) -> None:
    from autotm_core.examples import build_example

    graph = build_example("mlp")
    system = preset("optane-2019")
    fixed = attrs.evolve(system, kernel_overhead_seconds=25e-6)
    pools = np.zeros(len(graph.liveness.kernel_tensors), dtype=np.int64)
    plain = roofline_costs(graph, system).seconds_all(pools)
    charged = roofline_costs(graph, fixed).seconds_all(pools)
    np.testing.assert_allclose(charged - plain, 25e-6, rtol=1e-9)
    # a file says it only when it is not 0: files without it mean what they always meant
    for which, expected in ((system, False), (fixed, True)):
        path = tmp_path / "s.json"
        save_system(which, path)
        assert ("kernel_overhead_seconds" in json.loads(path.read_text())) is expected
        assert load_system(path).kernel_overhead_seconds == which.kernel_overhead_seconds


def test_replay_is_the_default_kind_and_others_must_measure_their_kernels(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert kernel_rates("replay").name == "replay"
    out = str(tmp_path / "s.json")
    assert main(["calibrate", "--quick", "--kernels", "example", "-o", out]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "frontend 'example' cannot measure its kernels" in err and "Traceback" not in err
    assert not Path(out).exists()
