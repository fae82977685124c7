"""The package's structure, read from its imports: layers, owners and what crosses them.

- no package imports one that imports it back (lazy imports inside functions count);
- no solver library (nor Pyomo) is imported outside ``solvers/``;
- no private name is imported from another top-level package;
- a point is planned in one place (``planning/``): no second point module, no
  large-graph planner outside ``ilp/``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "autotm_core"
SOLVER_LIBRARIES = ("highspy", "swiglpk", "pulp", "cbcbox", "pyomo", "gurobipy", "mip")


@functools.cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple((path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text("utf-8")))
                 for path in sorted(PACKAGE.rglob("*.py")))


def _modules() -> Iterator[tuple[str, ast.Module]]:
    """(path under the package, syntax tree) of every module, parsed once."""
    return iter(_parsed())


def _top(relative: str) -> str:
    """The top-level package (or module) of ``autotm_core`` a file belongs to."""
    first = relative.split("/")[0]
    return first.removesuffix(".py")


def _imports(tree: ast.Module) -> Iterator[tuple[str, list[str]]]:
    """(module, names) of every import of the file, lazy ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def _dependencies() -> dict[str, set[str]]:
    deps: dict[str, set[str]] = {}
    for relative, tree in _modules():
        me = _top(relative)
        for module, _names in _imports(tree):
            if module == "autotm_core":
                continue  # the package's front door re-exports; it is not a layer
            if module.startswith("autotm_core."):
                other = module.split(".")[1]
                if other != me:
                    deps.setdefault(me, set()).add(other)
    return deps


def _cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in deps.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def test_no_package_imports_one_that_imports_it_back() -> None:
    assert _cycles(_dependencies()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_solver_library_outside_solvers() -> None:
    found = [(relative, module) for relative, tree in _modules()
             if not relative.startswith("solvers/")
             for module, _names in _imports(tree)
             if module.split(".")[0] in SOLVER_LIBRARIES]
    assert found == []


def test_no_private_name_crosses_a_package() -> None:
    found = [(relative, module, name) for relative, tree in _modules()
             for module, names in _imports(tree) if module.startswith("autotm_core.")
             and module.split(".")[1] != _top(relative)
             for name in names if name.startswith("_")]
    assert found == []


@pytest.mark.parametrize("gone", ["large", "evaluation"])
def test_one_owner_for_planning_a_point(gone: str) -> None:
    assert not (PACKAGE / gone).exists()
    assert not any(module.startswith(f"autotm_core.{gone}")
                   for _relative, tree in _modules() for module, _names in _imports(tree))
    points = [relative for relative, _tree in _modules() if relative.endswith("point.py")]
    assert points == ["sweep/point.py"]
