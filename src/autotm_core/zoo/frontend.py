"""The ``zoo`` frontend: training graphs of well-known networks, generated in pure Python."""

from __future__ import annotations

from typing import Any

from autotm_core.errors import PluginError
from autotm_core.ir import Graph
from autotm_core.zoo.catalog import NETWORKS, build_network


class ZooFrontend:
    """Builds a zoo network by name: ``zoo:resnet50``, ``zoo:gpt2:batch=8,seq=512,layers=6``."""

    name = "zoo"
    description = "model zoo (training steps): " + ", ".join(NETWORKS) + "; NAME:OPTION=VALUE,..."

    def unavailable_reason(self) -> str | None:
        """Always usable: the networks are generated in pure Python."""
        return None

    def load(self, source: str, **options: Any) -> Graph:
        """The network ``source`` (a name, maybe ``:OPTION=VALUE,...``) built with ``options``."""
        if not isinstance(source, str):
            raise PluginError(f"the zoo frontend takes a network name, not {type(source).__name__}",
                              hint="e.g. get_frontend('zoo').load('resnet50', batch=32)")
        return build_network(source, **options)
