"""Carry plans out on real memory: one run loop, pluggable kernels, measured time.

:func:`execute` runs a plan through one loop with a
:class:`~autotm_core.executor.kernels.KernelRunner`: autotm-core's replay kernels
(:class:`ReplayKernels`, the default) or a plugin's. Plugin API: a plugin that
runs a plan with kernels of its own (docs/writing-a-frontend.md, "What a plugin
may import") may use every name of ``__all__``: the protocols its kernels and
memory implement (:class:`KernelRunner`, :class:`Memory`, :class:`KernelSource`
for ``run --kernels``) and what they are handed and return (:class:`RunSetup`,
:class:`KernelsDone`, :class:`ResultCheck`); the NUMA arenas as a memory
(:class:`NumaMemory`) and their parts (:class:`ArenaRequest`, :class:`Space`,
:class:`CopyThread`); a plan's layout (:func:`plan_layout`, :class:`Layout`,
:data:`SCRATCH`), its program (:func:`build_program`, :class:`Program`,
:func:`seed_of`, :class:`RerunOps`) and the report of a run (:class:`ExecutionReport`,
:class:`PoolRun`, :class:`RerunRun`), which ``run`` prints.

Importing this package loads no numba: the replay kernels
(:mod:`~autotm_core.executor.replay`) are compiled when a plan first runs.
"""

from autotm_core.executor.arena import ArenaRequest, Space
from autotm_core.executor.copy import CopyThread
from autotm_core.executor.kernels import KernelRunner, KernelsDone, KernelSource, Memory, RunSetup
from autotm_core.executor.layout import SCRATCH, Layout, plan_layout
from autotm_core.executor.memory import NumaMemory
from autotm_core.executor.program import Program, RerunOps, build_program, seed_of
from autotm_core.executor.records import ExecutionReport, PoolRun, RerunRun, ResultCheck
from autotm_core.executor.replay_kernels import ReplayKernels
from autotm_core.executor.run import execute

__all__ = [
    "SCRATCH",
    "ArenaRequest",
    "CopyThread",
    "ExecutionReport",
    "KernelRunner",
    "KernelSource",
    "KernelsDone",
    "Layout",
    "Memory",
    "NumaMemory",
    "PoolRun",
    "Program",
    "ReplayKernels",
    "RerunOps",
    "RerunRun",
    "ResultCheck",
    "RunSetup",
    "Space",
    "build_program",
    "execute",
    "plan_layout",
    "seed_of",
]
