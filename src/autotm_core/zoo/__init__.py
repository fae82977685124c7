"""A model zoo: full training steps (forward, loss, backward, optimizer update) of
well-known networks, built in pure Python on :class:`~autotm_core.ir.GraphBuilder`.

:mod:`~autotm_core.zoo.tape` records a forward pass and derives the backward
pass and the update; :mod:`~autotm_core.zoo.layers` holds the layers; one module
per network family; :mod:`~autotm_core.zoo.catalog` names the networks and parses
their options; :mod:`~autotm_core.zoo.frontend` is the ``zoo`` frontend plugin.
See docs/zoo.md.
"""

from autotm_core.zoo.catalog import NETWORKS, build_network
from autotm_core.zoo.tape import Optimizer, Tape, Value

__all__ = ["NETWORKS", "Optimizer", "Tape", "Value", "build_network"]
