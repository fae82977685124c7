"""``package.module:factory`` specs: how the command line names a PyTorch model.

The factory contract (see docs/frontends-torch.md): ``factory(**options)``
is called with ``batch_size=N`` when ``--batch-size`` is given and with every
``--option key=value`` that is not an option of the frontend itself; it
returns ``(model, example_inputs)``, ``(model, example_inputs, loss_fn)``,
``(model, example_inputs, loss_fn, optimizer)``, or a mapping with the keys
``model``, ``example_inputs`` and optionally ``loss``, ``targets``,
``optimizer``. ``example_inputs`` are positional (a tuple) or keyword (a
mapping) arguments; ``loss`` may be ``"output"``, the model's own loss.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from autotm_core.errors import PluginError, UsageError

SPEC_HINT = "name the factory as 'package.module:function' or 'path/to/file.py:function'"
_KEYS = ("model", "example_inputs", "loss", "optimizer")


def resolve(spec: str) -> Callable[..., Any]:
    """The callable that ``spec`` names."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"model spec {spec!r} has no ':function' part", hint=SPEC_HINT)
    module = _import(module_name, spec)
    try:
        factory = module
        for part in attribute.split("."):
            factory = getattr(factory, part)
    except AttributeError:
        raise UsageError(
            f"module {module_name!r} has no attribute {attribute!r}", hint=SPEC_HINT
        ) from None
    if not callable(factory):
        raise UsageError(f"{spec!r} is a {type(factory).__name__}, not a callable", hint=SPEC_HINT)
    return factory


def _import(module_name: str, spec: str) -> Any:
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise PluginError(f"model file {module_name!r} does not exist", hint=SPEC_HINT)
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            if loader_spec is None or loader_spec.loader is None:
                raise PluginError(f"cannot load {module_name!r} as a Python module", hint=SPEC_HINT)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules.setdefault(path.stem, module)
            try:
                loader_spec.loader.exec_module(module)
            except BaseException:  # no half-run module left behind for the next import
                if sys.modules.get(path.stem) is module:
                    del sys.modules[path.stem]
                raise
            return module
        if "" not in sys.path:  # like 'python -m', find modules of the working directory
            sys.path.insert(0, "")
        return importlib.import_module(module_name)
    except PluginError:
        raise
    except ModuleNotFoundError as exc:  # a module not found is refused as a missing file is
        if not _names_the_spec(exc, module_name):
            raise missing_import(exc, f"importing {module_name!r} for {spec!r}") from exc
        raise PluginError(
            f"cannot import {module_name!r} for {spec!r}: {exc}", hint=SPEC_HINT
        ) from exc
    except Exception as exc:
        raise PluginError(
            f"importing {module_name!r} for {spec!r} failed: {type(exc).__name__}: {exc}",
            hint="fix the module; rerun with --debug for the traceback",
        ) from exc


def _names_the_spec(exc: ModuleNotFoundError, module_name: str) -> bool:
    """Whether the module not found is the spec's own module (or a package above it), not
    one that module imports."""
    missing = exc.name or ""
    if module_name.endswith(".py"):
        return False
    return missing == module_name or module_name.startswith(missing + ".")


def missing_import(exc: ModuleNotFoundError, where: str) -> PluginError:
    """The error of ``where`` (a module or a factory) failing to import a module that is not
    installed: the module it needs and how to get it, not how to write a spec."""
    missing = exc.name or str(exc)
    top = missing.split(".")[0]
    return PluginError(
        f"{where} failed: it imports {missing!r}, which is not installed here",
        hint=f"install the package that provides {top!r} (often 'pip install {top}'; check the "
        "spelling of the import), in the environment that runs autotm-core",
    )


def call(factory: Callable[..., Any], spec: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Call ``factory(**options)`` and return its result as a mapping (see the module docstring)."""
    try:
        result = factory(**options)
    except TypeError as exc:
        raise UsageError(
            f"factory {spec!r} does not accept the options {sorted(options)}: {exc}",
            hint="give the factory keyword parameters for each --option (and batch_size)",
        ) from exc
    except ModuleNotFoundError as exc:
        raise missing_import(exc, f"factory {spec!r}") from exc
    except Exception as exc:
        raise PluginError(
            f"factory {spec!r} failed: {type(exc).__name__}: {exc}",
            hint="rerun with --debug for the traceback",
        ) from exc
    if isinstance(result, Mapping):
        unknown = set(result) - {*_KEYS, "targets"}
        if unknown or "model" not in result or "example_inputs" not in result:
            raise PluginError(
                f"factory {spec!r} returned a mapping with keys {sorted(result)}",
                hint="return the keys model, example_inputs and maybe loss, targets, optimizer",
            )
        return dict(result)
    if isinstance(result, tuple) and 2 <= len(result) <= 4:
        return dict(zip(_KEYS, result, strict=False))
    raise PluginError(
        f"factory {spec!r} returned {type(result).__name__}"
        + (f" of {len(result)} items" if isinstance(result, tuple) else ""),
        hint="return (model, example_inputs[, loss_fn[, optimizer]]) or a mapping",
    )


def parse_value(text: Any) -> Any:
    """A command-line option value: an int, a float, true/false/none, or the string itself."""
    if not isinstance(text, str):
        return text
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text
