"""Plugins import only the plugin API that docs/writing-a-frontend.md documents.

The guide's section "What a plugin may import" lists the modules in a table; from
each, a plugin may import the names of its ``__all__``. Every ``autotm_core`` import
under ``plugins/*/src`` is read statically (imports inside functions included) and
checked against that.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "writing-a-frontend.md"
SECTION = "## What a plugin may import"


def documented_modules() -> list[str]:
    """The modules of the guide's plugin-API table, in its order."""
    text = GUIDE.read_text(encoding="utf-8")
    assert SECTION in text, f"{GUIDE} has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(autotm_core(?:\.\w+)*)` \|", section, re.MULTILINE)


def public_names(module_name: str) -> set[str]:
    """What a plugin may import from ``module_name``: its ``__all__`` (every module of the
    API has one)."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    assert names is not None, f"{module_name} is plugin API but lists no __all__"
    return set(names)


def core_imports(source: str) -> Iterator[tuple[int, str, str | None]]:
    """``(line, module, name)`` of each ``autotm_core`` import (``name`` None for ``import``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.partition(".")[0] == "autotm_core":
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.partition(".")[0] == "autotm_core":
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def violations(source: str, api: dict[str, set[str]]) -> list[str]:
    """Each import of ``source`` outside ``api`` (module -> names), with a reason."""
    found = []
    for line, module, name in sorted(core_imports(source), key=lambda found: found[0]):
        if module not in api:
            found.append(f"line {line}: module {module} is not plugin API")
        elif name is not None and name not in api[module]:
            found.append(f"line {line}: {module} does not offer {name} to plugins")
    return found


@pytest.fixture(scope="module")
def api() -> dict[str, set[str]]:
    return {module: public_names(module) for module in documented_modules()}


def test_the_guide_lists_importable_modules(api: dict[str, set[str]]) -> None:
    assert {"autotm_core", "autotm_core.errors", "autotm_core.costs",
            "autotm_core.executor"} <= set(api)
    for module, names in api.items():
        assert names, f"{module} offers nothing"
        imported = importlib.import_module(module)
        missing = sorted(n for n in names if not hasattr(imported, n))
        assert not missing, f"{module}.__all__ lists names it lacks: {missing}"


def test_plugins_import_only_the_plugin_api(api: dict[str, set[str]]) -> None:
    sources = sorted(ROOT.glob("plugins/*/src/**/*.py"))
    assert sources
    found = [f"{path.relative_to(ROOT)} {problem}" for path in sources
             for problem in violations(path.read_text(encoding="utf-8"), api)]
    assert not found, "imports outside the plugin API (docs/writing-a-frontend.md):\n" + \
        "\n".join(found)


def test_the_scan_sees_imports_in_functions_and_refuses_the_rest(
    api: dict[str, set[str]]
) -> None:
    source = (
        "import autotm_core\n"
        "from autotm_core.executor import ArenaRequest\n"
        "def f():\n"
        "    from autotm_core.executor.arena import Space\n"
        "    from autotm_core.costs import _private\n"
        "    import autotm_core.baselines.common\n"
        "from . import sibling\n"
    )
    assert violations(source, api) == [
        "line 4: module autotm_core.executor.arena is not plugin API",
        "line 5: autotm_core.costs does not offer _private to plugins",
        "line 6: module autotm_core.baselines.common is not plugin API",
    ]
