"""Turning what goes wrong while tracing into one clear autotm-core error."""

from __future__ import annotations

import contextlib
import logging
import os
import traceback
from collections.abc import Iterator

import torch

from autotm_core.errors import AutotmError, PluginError
from autotm_torch import _torch_internals as internals

_TORCH_DIR = os.path.dirname(torch.__file__)
_OWN_DIR = os.path.dirname(__file__)


def user_location(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame of user code in ``exc``'s traceback."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if not frame.filename.startswith((_TORCH_DIR, _OWN_DIR)) and "<" not in frame.filename:
            found = frame
    if found is None:
        return None
    return f"{os.path.basename(found.filename)}:{found.lineno} in {found.name}"


def _op_name(func: object) -> str:
    name = str(func)
    return name.removesuffix(".default")


_NOISY_LOGGERS = ("torch._subclasses.fake_tensor",)
"""Torch's loggers that print a failed op's traceback (some twenty lines) before the error
reaches :func:`explain_capture_failure`."""


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """Silence torch's own log of a failing op while tracing, unless debug logging is on
    (``--debug``): the failure is reported once, as one error."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        yield
        return
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    saved = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, saved, strict=True):
            logger.setLevel(level)


@contextlib.contextmanager
def explain_capture_failure(what: str) -> Iterator[None]:
    """Re-raise any failure of tracing ``what`` as a :class:`PluginError` naming the op;
    torch's own log of the failure is kept quiet (see :func:`quiet_torch_logs`)."""
    try:
        with quiet_torch_logs():
            yield
    except AutotmError:
        raise
    except internals.DATA_DEPENDENT_ERRORS as exc:
        raise PluginError(
            f"cannot capture {what}: op {_op_name(exc.func)} needs the value of a tensor"
            f"{_at(exc)} (data-dependent control flow: .item(), bool(tensor), 'if tensor:' ...)",
            hint="make the control flow depend on shapes or Python values only, "
            "or move it out of the captured step",
        ) from exc
    except internals.DYNAMIC_SHAPE_ERRORS as exc:
        raise PluginError(
            f"cannot capture {what}: the output shape of op {_op_name(exc.func)} depends on "
            f"tensor values{_at(exc)}",
            hint="replace it by an op with a static output shape (e.g. torch.where with a mask)",
        ) from exc
    except internals.UNSUPPORTED_OP_ERRORS as exc:
        raise PluginError(
            f"cannot capture {what}: op {_op_name(exc.func)} has no fake-tensor implementation"
            f"{_at(exc)}",
            hint="replace the op, or register a fake kernel for it (torch.library.register_fake)",
        ) from exc
    except internals.DEVICE_MISMATCH_ERRORS as exc:
        raise PluginError(
            f"cannot capture {what}: {_first_line(exc)}{_at(exc)}",
            hint="put the model and the example inputs on one device, or give device=... "
            "(--option device=cpu) to capture all of them for that device",
        ) from exc
    except Exception as exc:
        raise PluginError(
            f"cannot capture {what}: {type(exc).__name__}: {_first_line(exc)}{_at(exc)}",
            hint="check that the model runs eagerly on the example inputs; "
            "rerun with --debug for the traceback",
        ) from exc


def _at(exc: BaseException) -> str:
    where = user_location(exc)
    return f" at {where}" if where else ""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"
