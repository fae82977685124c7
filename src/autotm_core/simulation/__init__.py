"""Predicting a plan's step time, memory over time and traffic (numba loop loaded lazily)."""

from autotm_core.simulation.simulate import Engine, Simulation, copy_rates, simulate

__all__ = ["Engine", "Simulation", "copy_rates", "simulate"]
