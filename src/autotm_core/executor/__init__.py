"""Carry plans out on real memory: NUMA-bound arenas, replay kernels, copies, measured time.

Import :func:`autotm_core.executor.run.execute`; this package imports nothing heavy
itself, so numba loads only when a plan runs.
"""
