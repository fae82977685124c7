"""The kernel profiler: every distinct kernel measured in every placement of its tensors.

Import :func:`autotm_core.profiler.profile.profile_graph`; this package imports
nothing heavy itself, so numba loads only when something is measured.
"""
