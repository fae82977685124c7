"""Small built-in example graphs, so every command can be tried without a model."""

from __future__ import annotations

from typing import Any

from autotm_core.errors import PluginError
from autotm_core.examples import EXAMPLES, build_example
from autotm_core.ir import Graph


class ExampleFrontend:
    """Builds a bundled example training step by name (``example:mlp``, ``example:chain-1000``)."""

    name = "example"
    description = "built-in example graphs: " + ", ".join(EXAMPLES) + ", chain-N (N layers)"

    def unavailable_reason(self) -> str | None:
        """Always usable: the examples are generated in pure Python."""
        return None

    def load(self, source: str, **options: Any) -> Graph:
        """The example called ``source``."""
        if not isinstance(source, str):
            raise PluginError(
                f"the example frontend takes an example name, not {type(source).__name__}"
            )
        return build_example(source, **options)
