"""The executor's seam: any KernelRunner runs in the one loop, which fills the whole report."""

from __future__ import annotations

import numpy as np
from tests.executor.helpers import diamond, diamond_plan, two_pools

from autotm_core.executor import KernelRunner, KernelsDone, ReplayKernels, RunSetup, execute
from autotm_core.plans import MoveKind


class Recording:
    """A third party's runner: the replay kernels, every call recorded; it may say it
    does not hash its reads."""

    name = "recording"

    def __init__(self, *, hashes_reads: bool = True) -> None:
        self.inner = ReplayKernels()
        self.hashes_reads = hashes_reads
        self.calls: list[tuple[str, int]] = []
        self.finished_with: tuple[tuple[int, ...], set[str]] | None = None

    def open(self, setup: RunSetup):
        self.calls.append(("open", len(setup.graph.kernels)))
        return self.inner.open(setup)

    def begin_step(self, step: int) -> None:
        self.calls.append(("step", step))
        self.inner.begin_step(step)

    def run_kernel(self, k: int) -> int:
        self.calls.append(("kernel", k))
        digest = self.inner.run_kernel(k)
        return digest if self.hashes_reads else 0

    def after_kernel(self, k: int) -> None:
        self.calls.append(("after", k))

    def finish(self, *, digests, final_digests) -> KernelsDone:
        self.finished_with = (digests.shape, set(final_digests))
        done = self.inner.finish(digests=digests, final_digests=final_digests)
        return KernelsDone(check=done.check, notes=("recorded",))


def test_a_runner_of_ones_own_runs_in_the_loop_and_gets_the_whole_report():
    graph, system = diamond(), two_pools()
    runner: KernelRunner = Recording()
    report = execute(diamond_plan(graph, system, kind=MoveKind.ASYNC), graph, system,
                     kernels=runner, repeat=2)
    n = len(graph.kernels)
    assert isinstance(runner, Recording) and runner.calls[0] == ("open", n)
    assert [c for c in runner.calls if c[0] == "step"] == [("step", s) for s in range(3)]
    assert sum(c[0] == "kernel" for c in runner.calls) == 3 * n
    assert sum(c[0] == "after" for c in runner.calls) == 3 * n
    assert runner.finished_with == ((3, n), {"z"})
    assert report.kernels == "recording" and "recorded" in report.notes
    assert report.check is not None and report.check.matches
    assert report.check.reference == "the one-pool replay"
    assert report.async_nbytes > 0 and report.async_copy_seconds > 0
    assert (report.kernel_seconds > 0).all() and (report.step_on_cpu_seconds > 0).all()
    assert (report.digests != 0).all() and report.final_digests.keys() == {"z"}


def test_the_loop_hashes_the_reads_of_kernels_that_do_not():
    graph, system = diamond(), two_pools()
    plan = diamond_plan(graph, system)
    first = execute(plan, graph, system, kernels=Recording(hashes_reads=False), repeat=1)
    again = execute(plan, graph, system, kernels=Recording(hashes_reads=False), repeat=1)
    replayed = execute(plan, graph, system, repeat=1)
    assert (first.digests != 0).all()
    assert np.array_equal(first.digests, again.digests)  # the bytes each kernel read
    assert not np.array_equal(first.digests, replayed.digests)  # another hash, same bytes
    assert first.final_digests == replayed.final_digests  # hashed by the loop either way
