"""The rows replay kernels execute: their columns, their kinds, and the weight of a compute round.

Shared by what builds rows in plain NumPy (:mod:`~autotm_core.executor.program`,
the profiler, calibration) and the numba kernels that run them
(:mod:`~autotm_core.executor.replay`), so that building a program loads no numba.
"""

ADDR, NBYTES, SEED, KIND = 0, 1, 2, 3
"""Columns of an ``ops`` row."""
READ, WRITE, SCRATCH = 0, 1, 2
"""Kinds of an ``ops`` row."""
FLOPS_PER_ITERATION = 4
"""Floating-point operations one compute round counts for: a division, weighted 4 as in the
usual normalised operation counts (add, multiply 1; divide, square root 4)."""
