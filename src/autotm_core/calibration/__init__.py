"""Calibration: measure this machine's memory (per NUMA node) and compute rate.

Import :func:`autotm_core.calibration.calibrate.calibrate`; this package imports
nothing heavy itself, so numba loads only when something is measured.
"""
