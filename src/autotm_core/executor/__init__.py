"""Carry plans out on real memory: NUMA-bound arenas, replay kernels, copies, measured time.

:func:`execute` runs a plan with replay kernels. Plugin API: a plugin that runs
a plan with kernels of its own (docs/writing-a-frontend.md, "What a plugin may
import") may use every name of ``__all__``: the arenas (:class:`ArenaRequest`,
:class:`Space`), the copy thread (:class:`CopyThread`), a plan's layout in them
(:func:`plan_layout`, :class:`Layout`, :data:`SCRATCH`), its program
(:func:`build_program`, :class:`Program`, :func:`seed_of`) and the report of a
run (:class:`ExecutionReport`, :class:`PoolRun`), which ``run --kernels`` prints.

Importing this package loads no numba: the replay kernels
(:mod:`~autotm_core.executor.replay`) are compiled when a plan first runs.
"""

from autotm_core.executor.arena import ArenaRequest, Space
from autotm_core.executor.copy import CopyThread
from autotm_core.executor.layout import SCRATCH, Layout, plan_layout
from autotm_core.executor.program import Program, build_program, seed_of
from autotm_core.executor.records import ExecutionReport, PoolRun
from autotm_core.executor.run import execute

__all__ = [
    "SCRATCH",
    "ArenaRequest",
    "CopyThread",
    "ExecutionReport",
    "Layout",
    "PoolRun",
    "Program",
    "Space",
    "build_program",
    "execute",
    "plan_layout",
    "seed_of",
]
