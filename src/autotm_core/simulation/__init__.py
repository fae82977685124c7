"""Predicting a plan's step time, memory over time and traffic (numba loop loaded lazily)."""

from autotm_core.simulation.simulate import Engine, Simulation, simulate

__all__ = ["Engine", "Simulation", "simulate"]
