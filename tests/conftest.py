"""Shared fixtures: small graphs and memory systems."""

from __future__ import annotations

import pytest

from autotm_core import Graph, MemorySystem, preset
from autotm_core.examples import build_example


@pytest.fixture
def mlp() -> Graph:
    return build_example("mlp")


@pytest.fixture
def cnn() -> Graph:
    return build_example("cnn")


@pytest.fixture
def optane() -> MemorySystem:
    return preset("optane-2019")
